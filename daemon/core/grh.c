/* SPDX-License-Identifier: MIT */
#include "grh.h"

#include <string.h>

#define IPV4_OFF     20
#define IPV4_SRC_OFF 32
#define GID_SGID_OFF 8

static bool ipv4_header_valid(const uint8_t *ip)
{
	uint32_t sum = 0;

	if (ip[0] != 0x45) /* version 4, IHL 5: RoCEv2 carries no options */
		return false;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

enum pubd_grh_kind pubd_grh_kind(const uint8_t grh[PUBD_GRH_LEN])
{
	if (ipv4_header_valid(grh + IPV4_OFF))
		return PUBD_GRH_IPV4;
	if (grh[0] >> 4 == 6)
		return PUBD_GRH_GID;
	return PUBD_GRH_UNKNOWN;
}

static bool gid_is_v4_mapped(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

bool pubd_grh_from_gid(const uint8_t grh[PUBD_GRH_LEN], const uint8_t gid[16])
{
	switch (pubd_grh_kind(grh)) {
	case PUBD_GRH_IPV4:
		return gid_is_v4_mapped(gid) && memcmp(grh + IPV4_SRC_OFF, gid + 12, 4) == 0;
	case PUBD_GRH_GID:
		return memcmp(grh + GID_SGID_OFF, gid, 16) == 0;
	case PUBD_GRH_UNKNOWN:
		break;
	}
	return false;
}
