/* SPDX-License-Identifier: MIT */
#include "pacer.h"

#define NS_PER_S 1000000000ull

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

static i128 depth(const struct pubd_pacer *p)
{
	return (i128)p->burst * NS_PER_S;
}

static void refill(struct pubd_pacer *p, uint64_t now_ns)
{
	i128 cap = depth(p);

	if (now_ns <= p->last_ns)
		return;
	/* Once full, more time earns nothing; the product is compared
	 * unsigned, where u64 x u64 cannot overflow, before it is added. */
	if (p->credit < cap) {
		uint64_t gap = now_ns - p->last_ns;
		i128 room = cap - p->credit;

		if ((u128)gap * p->rate >= (u128)room)
			p->credit = cap;
		else
			p->credit += (i128)((u128)gap * p->rate);
	}
	p->last_ns = now_ns;
}

void pubd_pacer_init(struct pubd_pacer *p, uint64_t now_ns, uint64_t rate, uint64_t burst)
{
	p->rate = rate;
	p->burst = burst ? burst : 1;
	p->last_ns = now_ns;
	p->credit = depth(p);
}

void pubd_pacer_set(struct pubd_pacer *p, uint64_t now_ns, uint64_t rate, uint64_t burst)
{
	i128 cap;

	if (!p->rate) {
		pubd_pacer_init(p, now_ns, rate, burst);
		return;
	}
	refill(p, now_ns);
	p->rate = rate;
	p->burst = burst ? burst : 1;
	cap = depth(p);
	if (p->credit > cap)
		p->credit = cap;
}

/* ns from p->last_ns until the bucket holds min(bytes, depth); 0: now. */
static uint64_t wait_for(const struct pubd_pacer *p, uint64_t bytes)
{
	i128 need = (i128)bytes * NS_PER_S, want, wait;

	want = need < depth(p) ? need : depth(p);
	if (p->credit >= want)
		return 0;
	wait = (want - p->credit + p->rate - 1) / p->rate; /* round up: enough, not almost */
	return wait > (i128)UINT64_MAX ? UINT64_MAX : (uint64_t)wait;
}

uint64_t pubd_pacer_take(struct pubd_pacer *p, uint64_t now_ns, uint64_t bytes)
{
	uint64_t wait;

	if (!p->rate)
		return 0;
	refill(p, now_ns);
	/* A datagram bigger than the bucket goes once the bucket is full. */
	wait = wait_for(p, bytes);
	if (!wait)
		p->credit -= (i128)bytes * NS_PER_S;
	return wait;
}

uint64_t pubd_pacer_wait(struct pubd_pacer *p, uint64_t now_ns, uint64_t bytes)
{
	if (!p->rate)
		return 0;
	refill(p, now_ns);
	return wait_for(p, bytes);
}

void pubd_pacer_refund(struct pubd_pacer *p, uint64_t bytes)
{
	if (p->rate)
		p->credit += (i128)bytes * NS_PER_S;
}

int64_t pubd_pacer_tokens(const struct pubd_pacer *p)
{
	i128 whole = p->credit / (i128)NS_PER_S;

	if (whole > INT64_MAX)
		return INT64_MAX;
	if (whole < INT64_MIN)
		return INT64_MIN;
	return (int64_t)whole;
}

/*
 * The depth: 5 ms at the rate, and never less than two full-size
 * datagrams. The timer that brings a paced group back fires late by tens of
 * microseconds to a few milliseconds on a busy host; credit earned while it
 * was late is kept up to the depth, so the long-run rate holds as long as
 * the lateness stays under 5 ms. Two datagrams let a refill be spent in one
 * call to the fabric rather than one datagram per wakeup. Anything deeper
 * would let a burst through at line rate, which is what pacing is for
 * preventing: at 100 MiB/s, 5 ms is 512 KiB, a fraction of a receive queue.
 */
uint64_t pubd_pacer_burst_for(uint64_t rate, uint32_t mtu)
{
	uint64_t by_time = rate / 200, by_size = 2ull * mtu;

	return by_time > by_size ? by_time : by_size;
}
