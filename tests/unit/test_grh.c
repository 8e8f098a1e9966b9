/* SPDX-License-Identifier: MIT */
/* The GRH area of a UD receive: which encoding, and who sent it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "grh.h"

/* ::ffff:192.168.77.1, the GID rxe gives an IPv4 address (RoCEv2). */
static const uint8_t gid_a[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 77, 1};
static const uint8_t gid_b[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 77, 2};
/* An IB port GID: subnet prefix fe80::/64 and a GUID. */
static const uint8_t gid_ib[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};

static void put_checksum(uint8_t *ip)
{
	uint32_t sum = 0;

	ip[10] = ip[11] = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
}

/* RoCEv2/IPv4 as rxe hands it over: 20 zero bytes, then the IPv4 header
 * of a UDP datagram from `src` to 239.77.60.2. */
static void roce4(uint8_t grh[PUBD_GRH_LEN], const uint8_t src[4], uint8_t filler)
{
	uint8_t *ip = grh + 20;

	memset(grh, filler, 20);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[2] = 0x04;
	ip[3] = 0x3c; /* total length 1084 */
	ip[6] = 0x40; /* DF */
	ip[8] = 64;   /* TTL */
	ip[9] = 17;   /* UDP */
	memcpy(ip + 12, src, 4);
	ip[16] = 239;
	ip[17] = 77;
	ip[18] = 60;
	ip[19] = 2;
	put_checksum(ip);
}

/* An IB GRH (or RoCEv2's IPv6 header): IPVer 6, SGID at 8, DGID at 24. */
static void grh6(uint8_t grh[PUBD_GRH_LEN], const uint8_t sgid[16])
{
	static const uint8_t mgid[16] = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xef, 0x4d, 0x3c, 2};

	memset(grh, 0, PUBD_GRH_LEN);
	grh[0] = 0x60;
	grh[4] = 0x04; /* payload length */
	grh[6] = 0x1b; /* next header: IB BTH */
	grh[7] = 64;   /* hop limit */
	memcpy(grh + 8, sgid, 16);
	memcpy(grh + 24, mgid, 16);
}

static void ipv4_from_self_and_from_peer(void **state)
{
	uint8_t grh[PUBD_GRH_LEN];

	(void)state;
	roce4(grh, gid_a + 12, 0);
	assert_int_equal(pubd_grh_kind(grh), PUBD_GRH_IPV4);
	assert_true(pubd_grh_from_gid(grh, gid_a));
	/* The CI failure this guards: a peer on another rxe device with the
	 * same QP number as ours. Its source address tells it apart. */
	assert_false(pubd_grh_from_gid(grh, gid_b));
	/* The destination of the group is where the DGID's tail would be. */
	assert_int_equal(grh[PUBD_GRH_DST4_OFF], 239);
}

static void ipv4_with_undefined_leading_bytes(void **state)
{
	uint8_t grh[PUBD_GRH_LEN];

	(void)state;
	/* Hardware may leave bytes 0..19 as a previous IPv6 datagram left
	 * them: a version nibble of 6 there must not win over the header. */
	roce4(grh, gid_b + 12, 0x66);
	assert_int_equal(pubd_grh_kind(grh), PUBD_GRH_IPV4);
	assert_true(pubd_grh_from_gid(grh, gid_b));
	assert_false(pubd_grh_from_gid(grh, gid_a));
}

static void ipv4_source_needs_a_v4_mapped_gid(void **state)
{
	uint8_t grh[PUBD_GRH_LEN];
	uint8_t src[4] = {gid_ib[12], gid_ib[13], gid_ib[14], gid_ib[15]};

	(void)state;
	roce4(grh, src, 0);
	assert_false(pubd_grh_from_gid(grh, gid_ib));
}

static void bad_ipv4_checksum_is_not_ipv4(void **state)
{
	uint8_t grh[PUBD_GRH_LEN];

	(void)state;
	roce4(grh, gid_a + 12, 0);
	grh[20 + 11] ^= 1;
	assert_int_equal(pubd_grh_kind(grh), PUBD_GRH_UNKNOWN);
	assert_false(pubd_grh_from_gid(grh, gid_a));
	/* IPv4 with options is not what RoCEv2 sends either. */
	roce4(grh, gid_a + 12, 0);
	grh[20] = 0x46;
	put_checksum(grh + 20);
	assert_int_equal(pubd_grh_kind(grh), PUBD_GRH_UNKNOWN);
}

static void gid_encoding(void **state)
{
	uint8_t grh[PUBD_GRH_LEN];

	(void)state;
	grh6(grh, gid_ib);
	assert_int_equal(pubd_grh_kind(grh), PUBD_GRH_GID);
	assert_true(pubd_grh_from_gid(grh, gid_ib));
	assert_false(pubd_grh_from_gid(grh, gid_a));
	/* RoCEv1 with an IPv4-mapped GID: the whole SGID is compared. */
	grh6(grh, gid_a);
	assert_true(pubd_grh_from_gid(grh, gid_a));
	assert_false(pubd_grh_from_gid(grh, gid_b));
}

static void zeros_are_nobody(void **state)
{
	uint8_t grh[PUBD_GRH_LEN] = {0};
	uint8_t zero_gid[16] = {0};

	(void)state;
	assert_int_equal(pubd_grh_kind(grh), PUBD_GRH_UNKNOWN);
	assert_false(pubd_grh_from_gid(grh, zero_gid));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ipv4_from_self_and_from_peer),
		cmocka_unit_test(ipv4_with_undefined_leading_bytes),
		cmocka_unit_test(ipv4_source_needs_a_v4_mapped_gid),
		cmocka_unit_test(bad_ipv4_checksum_is_not_ipv4),
		cmocka_unit_test(gid_encoding),
		cmocka_unit_test(zeros_are_nobody),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
