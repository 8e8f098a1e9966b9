/* SPDX-License-Identifier: MIT */
/*
 * A UD datagram's sender as the verbs fabric reads it from the 40 GRH bytes
 * (core/ud_peer.c) and the bounded cache of address handles built for
 * replies to it (core/ah_cache.c), on hostile bytes and a clock the input
 * drives. Invariants: whatever from_grh makes, parse takes back unchanged;
 * the cache never holds more than its cap; every handle made is destroyed
 * exactly once (at eviction, expiry, flush or close), never while cached.
 *
 * Input: records, each a u8 op then its bytes:
 *   op % 4 == 0: 40 GRH bytes, u32 src_qp, u16 slid, u8 sl, u8 has_grh:
 *                a received datagram's peer, then its handle
 *   op % 4 == 1: 28 bytes: a peer as send_to would be given it
 *   op % 4 == 2: u8 ms: advance the clock (x 100 ms when op & 0x80)
 *   op % 4 == 3: flush (a device rebuild)
 * A handle fails to be made when the GID's last byte is odd.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ah_cache.h"
#include "ud_peer.h"

#define CAP	8u
#define MAXMADE 4096u
#define MS	1000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fake {
	uint32_t made, destroyed;
	uint8_t live[MAXMADE];
};

static void *make(void *ctx, const struct pubd_ud_addr *a, int *err)
{
	struct fake *fk = ctx;

	if ((a->gid[15] & 1) || fk->made >= MAXMADE) {
		*err = -EHOSTUNREACH;
		return NULL;
	}
	fk->live[fk->made] = 1;
	return (void *)(uintptr_t)(++fk->made);
}

static void destroy(void *ctx, void *h)
{
	struct fake *fk = ctx;
	uintptr_t i = (uintptr_t)h - 1;

	if (i >= fk->made || !fk->live[i])
		abort(); /* unknown, or twice */
	fk->live[i] = 0;
	fk->destroyed++;
}

static const struct pubd_ah_cache_ops ops = {.create = make, .destroy = destroy};

static void use(struct pubd_ah_cache *c, struct fake *fk, const struct pubd_ud_peer *p, uint64_t now)
{
	int err;
	void *h = pubd_ah_cache_get(c, &p->addr, now, &err);

	if (h && (err || !fk->live[(uintptr_t)h - 1]))
		abort(); /* a handle given out must be alive */
	if (!h && err >= 0)
		abort();
	if (pubd_ah_cache_size(c) > CAP || fk->made - fk->destroyed > CAP)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pubd_ah_cache_cfg cfg = {
		.cap = CAP, .max_age_ns = 60000 * MS, .fail_hold_ns = 10000 * MS, .new_per_sec = 16};
	struct pubd_ah_cache c;
	static struct fake fk;
	uint64_t now = 1000 * MS;
	size_t i = 0;

	memset(&fk, 0, sizeof(fk));
	if (pubd_ah_cache_init(&c, &cfg, &ops, &fk, now))
		return 0;
	while (i < size) {
		uint8_t op = data[i++];
		struct pubd_ud_peer p, back;

		switch (op % 4) {
		case 0: {
			uint32_t qpn;
			uint16_t lid;

			if (size - i < PUBD_GRH_LEN + 8)
				goto out;
			memcpy(&qpn, data + i + PUBD_GRH_LEN, 4);
			memcpy(&lid, data + i + PUBD_GRH_LEN + 4, 2);
			if (pubd_ud_peer_from_grh(data + i, data[i + PUBD_GRH_LEN + 7] & 1, qpn, lid,
						  data[i + PUBD_GRH_LEN + 6], &p)) {
				if (!pubd_ud_peer_parse(&p, sizeof(p), &back) || memcmp(&p, &back, sizeof(p)))
					abort();
				use(&c, &fk, &p, now);
			}
			i += PUBD_GRH_LEN + 8;
			break;
		}
		case 1:
			if (size - i < sizeof(p))
				goto out;
			if (pubd_ud_peer_parse(data + i, sizeof(p), &p))
				use(&c, &fk, &p, now);
			i += sizeof(p);
			break;
		case 2:
			if (i >= size)
				goto out;
			now += (uint64_t)data[i++] * (op & 0x80 ? 100 * MS : MS);
			break;
		default:
			pubd_ah_cache_flush(&c);
			if (pubd_ah_cache_size(&c) || fk.made != fk.destroyed)
				abort();
			break;
		}
	}
out:
	pubd_ah_cache_close(&c);
	if (fk.made != fk.destroyed)
		abort();
	return 0;
}
