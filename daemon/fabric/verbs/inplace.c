/* SPDX-License-Identifier: MIT */
/*
 * Sending a message from where it lies: a datagram whose payload is lent
 * from a client's publish log (fabric.h, pubd_tx_dgram.lent) goes out as
 * two scatter entries, pubd's header from the registered send slab and the
 * payload straight from the log, which is registered with the PD the
 * first time a send needs it and stays registered until the log goes
 * (pubd_mem_region_release) or the device resources do.
 *
 * The device reads the payload until the send completes, so the buffer is
 * pinned (msgbuf.h) from the post until tx_done passes its send queue
 * entry: the publish log neither copies it nor gives its record back to
 * the writer before that. Completions come in order and a signalled one
 * retires every send posted before it, so the pins sit in an array indexed
 * like the send slab (sequence number modulo sq_depth).
 *
 * A log that cannot be registered (RLIMIT_MEMLOCK) is copied as before;
 * counted (tx_register_failures), and tried again after a rebuild.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "msgbuf.h"
#include "verbs_internal.h"
#include "log.h"

int verbs_inplace_setup(struct pubd_fabric *f)
{
	f->tx_lent = calloc(f->sq_depth, sizeof(*f->tx_lent));
	return f->tx_lent ? 0 : -ENOMEM;
}

static void region_unlink(struct pubd_mem_region *r)
{
	if (r->next_reg)
		r->next_reg->prev_reg = r->prev_reg;
	*r->prev_reg = r->next_reg;
	r->next_reg = NULL;
	r->prev_reg = NULL;
	r->fabric = NULL;
	r->unregister = NULL;
}

/* The owner unmaps r, or the device resources go: no posted send reads it
 * (every pin on it is gone, or the QP is). */
static void region_unregister(struct pubd_mem_region *r)
{
	if (r->reg)
		ibv_dereg_mr(r->reg);
	r->reg = NULL;
	region_unlink(r);
}

/* After the QP is gone: nothing the device was sending is read any more. */
void verbs_inplace_teardown(struct pubd_fabric *f)
{
	if (f->tx_lent) {
		verbs_inplace_done(f, f->tx_done, f->tx_posted);
		free(f->tx_lent);
		f->tx_lent = NULL;
	}
	/* Before the PD goes; the owners find their regions unregistered. */
	while (f->regions)
		region_unregister(f->regions);
}

static struct ibv_mr *region_mr(struct pubd_fabric *f, struct pubd_mem_region *r)
{
	uint64_t held;
	int err;

	if (r->fabric == f)
		return r->reg;
	if (r->fabric) /* another fabric's (a test with two): copy */
		return NULL;
	r->reg = ibv_reg_mr(f->pd, r->base, r->len, 0);
	if (!r->reg) {
		err = errno ? errno : ENOMEM;
		f->cnt[VC_TX_REGISTER_FAILS]++;
		if (verbs_ratelog_ok(&f->rl_register, &held))
			log_warn("verbs: registering a publish log of %zu bytes on %s: %s (RLIMIT_MEMLOCK?); its "
				 "messages are copied into the send slab (%" PRIu64
				 " more failures since the last report)",
				 r->len, f->dev_name, strerror(err), held);
	}
	/* Registered or refused, it is ours until released or torn down. */
	r->fabric = f;
	r->unregister = region_unregister;
	r->next_reg = f->regions;
	r->prev_reg = &f->regions;
	if (f->regions)
		f->regions->prev_reg = &r->next_reg;
	f->regions = r;
	return r->reg;
}

/* Can x's payload be sent in place? Then *lkey is its log's. */
bool verbs_inplace_lkey(struct pubd_fabric *f, const struct pubd_tx_dgram *x, uint32_t *lkey)
{
	struct pubd_mem_region *r;
	const uint8_t *p = x->payload;
	struct ibv_mr *mr;

	if (!x->lent || !f->tx_lent || !x->payload_len || !(r = pubd_msgbuf_region(x->lent)))
		return false;
	if (p < r->base || (size_t)(p - r->base) > r->len || x->payload_len > r->len - (size_t)(p - r->base))
		return false;
	mr = region_mr(f, r);
	if (!mr)
		return false;
	*lkey = mr->lkey;
	return true;
}

/* The send at seq reads m's bytes: pinned until it completes. */
void verbs_inplace_posted(struct pubd_fabric *f, uint64_t seq, struct pubd_msgbuf *m)
{
	pubd_msgbuf_pin(m);
	f->tx_lent[seq % f->sq_depth] = m;
	f->cnt[VC_TX_IN_PLACE]++;
}

/* Sends from .. to - 1 completed (or were flushed): their pins go. An
 * unpin can give a log its last loan back and so unmap it (and unregister
 * its region) from here. */
void verbs_inplace_done(struct pubd_fabric *f, uint64_t from, uint64_t to)
{
	struct pubd_msgbuf *m;

	if (!f->tx_lent)
		return;
	for (; from < to; from++) {
		m = f->tx_lent[from % f->sq_depth];
		if (!m)
			continue;
		f->tx_lent[from % f->sq_depth] = NULL;
		pubd_msgbuf_unpin(m);
	}
}
