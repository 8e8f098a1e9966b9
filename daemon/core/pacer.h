/* SPDX-License-Identifier: MIT */
/*
 * A token bucket for sender pacing (a group's `rate:`): pure arithmetic on
 * a caller-given monotonic clock, no I/O.
 *
 * Tokens are kept in nano-bytes (bytes x 10^9), so a refill of
 * elapsed_ns x rate_bytes_per_s is exact: no division, no rounding, and so
 * no drift however long it runs. The arithmetic is 128-bit, so a rate up to
 * UINT64_MAX bytes/s and any gap between calls cannot overflow.
 *
 * A datagram larger than the bucket's depth would never fit; it may go
 * when the bucket is full, and the bucket goes into debt for the rest, so
 * the long-run rate still holds.
 */
#ifndef PUBD_PACER_H
#define PUBD_PACER_H

#include <stdbool.h>
#include <stdint.h>

struct pubd_pacer {
	uint64_t rate;		       /* bytes per second; 0 = unpaced (take always succeeds) */
	uint64_t burst;		       /* bucket depth in bytes */
	__extension__ __int128 credit; /* nano-bytes; negative: in debt */
	uint64_t last_ns;	       /* the time credit was last brought up to */
};

/* Start with a full bucket at now_ns. rate 0: unpaced. burst 0 is taken
 * as 1 byte. */
void pubd_pacer_init(struct pubd_pacer *p, uint64_t now_ns, uint64_t rate, uint64_t burst);
/* A new rate and depth (a reload): what was earned until now_ns at the old
 * rate is kept, up to the new depth. From unpaced, the bucket starts full. */
void pubd_pacer_set(struct pubd_pacer *p, uint64_t now_ns, uint64_t rate, uint64_t burst);
/* Take bytes at now_ns: 0 when they may go now (taken), else the ns to wait
 * until they can (nothing taken). A clock that goes backwards earns nothing. */
uint64_t pubd_pacer_take(struct pubd_pacer *p, uint64_t now_ns, uint64_t bytes);
/* How long until bytes (at most the depth) could be taken; takes nothing. */
uint64_t pubd_pacer_wait(struct pubd_pacer *p, uint64_t now_ns, uint64_t bytes);
/* Give back bytes taken for a datagram that was not sent after all. */
void pubd_pacer_refund(struct pubd_pacer *p, uint64_t bytes);
/* Whole bytes available at the last call (negative: debt), for display. */
int64_t pubd_pacer_tokens(const struct pubd_pacer *p);

/* The depth pubd uses for rate at a datagram size of mtu: see pacer.c. */
uint64_t pubd_pacer_burst_for(uint64_t rate, uint32_t mtu);

#endif
