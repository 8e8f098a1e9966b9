/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "engine_internal.h"
#include "flow_ctl.h"
#include "log.h"
#include "tx.h"
#include "wire.h"

/* Datagrams offered to the fabric per call: enough to amortise the system
 * call or doorbell, small enough that headers live on the stack. */
#define TX_BATCH 32

static void ready_push(struct pubd_tx *tx, struct pubd_group *g)
{
	if (g->tx_ready || g->tx_paced || g->fc_blocked || !g->txq_head || !g->up)
		return;
	g->tx_ready = true;
	g->tx_next = NULL;
	if (tx->ready_tail)
		tx->ready_tail->tx_next = g;
	else
		tx->ready_head = g;
	tx->ready_tail = g;
}

static struct pubd_group *ready_pop(struct pubd_tx *tx)
{
	struct pubd_group *g = tx->ready_head;

	if (!g)
		return NULL;
	tx->ready_head = g->tx_next;
	if (!tx->ready_head)
		tx->ready_tail = NULL;
	g->tx_ready = false;
	g->tx_next = NULL;
	return g;
}

static void ready_unlink(struct pubd_tx *tx, struct pubd_group *g)
{
	struct pubd_group **p, *prev = NULL;

	for (p = &tx->ready_head; *p; prev = *p, p = &(*p)->tx_next) {
		if (*p == g) {
			*p = g->tx_next;
			if (tx->ready_tail == g)
				tx->ready_tail = prev;
			break;
		}
	}
	g->tx_ready = false;
	g->tx_next = NULL;
}

int pubd_tx_enqueue(struct pubd *d, struct pubd_group *g, struct pubd_msgbuf *msg, uint64_t seq,
		    struct pubd_client *origin)
{
	struct pubd_tx *tx = &d->tx;
	struct pubd_tx_item *it = tx->free_items;
	int err;

	if (it)
		tx->free_items = it->next;
	else if (!(it = malloc(sizeof(*it))))
		return -ENOMEM;
	memset(it, 0, sizeof(*it));
	if (g->raw) {
		it->plan.msg_len = msg->len;
		it->plan.frag_count = 1;
		it->plan.frag_payload = msg->len;
	} else {
		err = pubd_frag_plan(&it->plan, msg->len, d->mtu, d->cfg.max_message_size);
		if (err < 0) {
			it->next = tx->free_items;
			tx->free_items = it;
			return err;
		}
	}
	/* A lent message stays lent while it waits here, so a fabric that
	 * sends in place sends it from its record: as much as its lender lets
	 * the queue hold (half a publish log), so that the writer is not held
	 * to its log's size while the fabric is the bottleneck. */
	it->pinned = pubd_msgbuf_is_lent(msg) && msg->lender->tx_held + msg->len <= msg->lender->tx_hold_max;
	if (it->pinned) {
		msg->lender->tx_held += msg->len;
		pubd_msgbuf_pin(msg);
	} else {
		pubd_msgbuf_get(msg);
	}
	it->msg = msg;
	it->seq = seq;
	it->origin = origin;
	if (g->txq_tail)
		g->txq_tail->next = it;
	else
		g->txq_head = it;
	g->txq_tail = it;
	g->txq_len++;
	tx->queued_msgs++;
	pubd_ipc_tx_hold(&d->ipc, msg->len);
	ready_push(tx, g);
	return 0;
}

static void item_release(struct pubd_tx_item *it)
{
	/* Pinned, it is still lent: its lender is there. */
	if (it->pinned) {
		it->msg->lender->tx_held -= it->msg->len;
		pubd_msgbuf_unpin(it->msg);
	} else {
		pubd_msgbuf_put(it->msg);
	}
	it->msg = NULL;
}

static void item_done(struct pubd *d, struct pubd_group *g, struct pubd_tx_item *it)
{
	g->txq_head = it->next;
	if (!g->txq_head)
		g->txq_tail = NULL;
	g->txq_len--;
	d->tx.queued_msgs--;
	pubd_ipc_tx_done(&d->ipc, it->origin, it->msg->len, 1);
	item_release(it);
	it->next = d->tx.free_items;
	d->tx.free_items = it;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Out of tokens for a datagram of g: off the ready list until they refill. */
static void pace_wait(struct pubd *d, struct pubd_group *g, uint64_t until_ns)
{
	g->tx_paced = true;
	g->pace_until_ns = until_ns;
	g->paced_waits++;
	if (until_ns < d->tx.pace_deadline) {
		d->tx.pace_deadline = until_ns;
		pubd_loop_timer_arm(d->pace_timer, until_ns);
	}
}

struct tx_batch {
	uint8_t hdrs[TX_BATCH][PUBD_WIRE_HDR_LEN];
	struct pubd_tx_dgram dg[TX_BATCH];
	struct pubd_tx_item *owner[TX_BATCH]; /* the (first) message of each datagram */
	uint32_t nmsgs[TX_BATCH];	      /* messages in a batch datagram; 0 for a fragment */
};

/*
 * How many whole one-fragment messages from it on, with consecutive
 * sequence numbers, share one batch body of room bytes: 0 unless at least
 * two do. Only what is queued already: a message never waits for company.
 */
static uint32_t batch_span(const struct pubd_tx_item *it, size_t room, uint64_t seq_end, size_t *body_len)
{
	uint64_t seq = it->seq;
	size_t len = 0, add;
	uint32_t k = 0;

	for (; it && !it->next_frag && it->plan.frag_count == 1 && it->msg->len <= UINT16_MAX; it = it->next) {
		add = PUBD_WIRE_BATCH_ENTRY_HDR + (size_t)it->msg->len;
		if (len + add > room || it->seq != seq + k || k == PUBD_WIRE_BATCH_MAX || it->seq >= seq_end)
			break;
		len += add;
		k++;
	}
	*body_len = len;
	return k >= 2 ? k : 0;
}

/* The room for a batch body at the current MTU, with TX_BATCH bodies of
 * it allocated; 0 (no batching this time) without memory for them. */
static size_t batch_room(struct pubd *d)
{
	size_t room = d->mtu > PUBD_WIRE_HDR_LEN ? d->mtu - PUBD_WIRE_HDR_LEN : 0;
	uint8_t *p;

	if (room <= PUBD_WIRE_BATCH_ENTRY_HDR)
		return 0;
	if (d->tx.batch_bodies && d->tx.batch_stride >= room)
		return room;
	p = realloc(d->tx.batch_bodies, TX_BATCH * room);
	if (!p)
		return 0;
	d->tx.batch_bodies = p;
	d->tx.batch_stride = room;
	return room;
}

/* Whole datagrams count against a paced group's bucket, header included.
 * False when they ran out (the group then waits for the pace timer). */
static bool pace_take(struct pubd *d, struct pubd_group *g, uint64_t now, const struct pubd_tx_dgram *dg)
{
	uint64_t wait = pubd_pacer_take(&g->pacer, now, dg->hdr_len + dg->payload_len);

	if (!wait)
		return true;
	/* Come back when half the bucket has refilled, not for each datagram:
	 * a few wakeups per depth at any rate, and the other half absorbs a
	 * late timer. */
	wait = max_u64(wait, pubd_pacer_wait(&g->pacer, now, g->pacer.burst / 2));
	pace_wait(d, g, now + wait);
	return false;
}

/* The head of g's queue waits for its receivers (flow_src.c): off the
 * ready list until a STATUS or a receiver's timeout lets it go
 * (flow_recheck). */
static void flow_wait(struct pubd_tx *tx, struct pubd_group *g)
{
	g->fc_blocked = true;
	g->flow_waits++;
	tx->fc_blocked++;
}

static void flow_unblock(struct pubd_tx *tx, struct pubd_group *g)
{
	if (!g->fc_blocked)
		return;
	g->fc_blocked = false;
	tx->fc_blocked--;
}

/* Groups waiting for their receivers whose limit moved on (a STATUS, a
 * silent receiver forgotten, flow control turned off) go back on the
 * ready list. */
static void flow_recheck(struct pubd *d)
{
	struct pubd_group *g;
	unsigned i;

	if (!d->tx.fc_blocked)
		return;
	pubd_groups_foreach(&d->groups, g, i)
	{
		if (g->fc_blocked && (!g->fcs || !g->txq_head || pubd_fc_source_allows(g->fcs, g->txq_head->seq))) {
			flow_unblock(&d->tx, g);
			ready_push(&d->tx, g);
		}
	}
}

/* One batch datagram of the k messages from it on, into slot n of b;
 * returns the message after them. */
static struct pubd_tx_item *put_batch(struct pubd *d, struct pubd_group *g, struct tx_batch *b, unsigned n,
				      struct pubd_tx_item *it, uint32_t k, size_t body_len)
{
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_BATCH,
				  .group_id = g->id,
				  .source_id = d->source_id,
				  .msg_seq = it->seq,
				  .msg_len = (uint32_t)body_len,
				  .frag_count = k};
	uint8_t *body = d->tx.batch_bodies + n * d->tx.batch_stride;
	size_t off = 0;
	uint32_t j;

	for (j = 0; j < k; j++, it = it->next)
		off += pubd_wire_batch_put(body + off, it->msg->data, (uint16_t)it->msg->len);
	pubd_wire_encode(&h, b->hdrs[n]);
	b->dg[n] = (struct pubd_tx_dgram){
		.hdr = b->hdrs[n], .hdr_len = PUBD_WIRE_HDR_LEN, .payload = body, .payload_len = (uint32_t)off};
	return it;
}

/* Gather up to TX_BATCH datagrams across g's queued messages, so small ones
 * share a call (and, with fabric.batch, a datagram), as far as a paced
 * group's tokens go. Returns how many. */
static unsigned gather(struct pubd *d, struct pubd_group *g, struct tx_batch *b)
{
	struct pubd_wire_hdr tmpl = {0}, h;
	struct pubd_tx_item *it = g->txq_head;
	uint64_t now = g->pacer.rate ? pubd_now_ns() : 0;
	size_t room = d->cfg.batch && !g->raw ? batch_room(d) : 0;
	/* Flow control: the first message the receivers cannot take yet. */
	uint64_t seq_end = g->fcs && g->fcs->n ? g->fcs->limit : UINT64_MAX;
	/* The group's first message goes alone, so the heartbeat after it
	 * (messages_sent) reaches receivers before any later message: one that
	 * lost it and the start's heartbeat learns the stream is new before it
	 * delivers past it, and asks for it (rx.c). */
	uint64_t first_only = !g->ever_sent && it ? it->seq + 1 : UINT64_MAX;
	uint64_t stop = seq_end < first_only ? seq_end : first_only;
	struct pubd_msgbuf *lent;
	unsigned n = 0;
	uint32_t frag, k;
	size_t off, len;

	while (it && n < TX_BATCH) {
		/* A message started goes on whole: its receivers reassemble it. */
		if (!it->next_frag && it->seq >= stop) {
			if (it->seq >= seq_end)
				flow_wait(&d->tx, g);
			return n;
		}
		if (room && (k = batch_span(it, room, stop, &len))) {
			struct pubd_tx_item *after = put_batch(d, g, b, n, it, k, len);

			if (!pace_take(d, g, now, &b->dg[n]))
				return n;
			b->owner[n] = it;
			b->nmsgs[n++] = k;
			it = after;
			continue;
		}
		tmpl.group_id = g->id;
		tmpl.source_id = d->source_id;
		tmpl.msg_seq = it->seq;
		/* Still in its publish-log record: a fabric may send it from there. */
		lent = pubd_msgbuf_is_lent(it->msg) ? it->msg : NULL;
		for (frag = it->next_frag; frag < it->plan.frag_count && n < TX_BATCH; frag++) {
			if (g->raw) {
				b->dg[n] = (struct pubd_tx_dgram){
					.payload = it->msg->data, .payload_len = it->msg->len, .lent = lent};
			} else {
				pubd_frag_get(&it->plan, &tmpl, frag, &h, &off, &len);
				pubd_wire_encode(&h, b->hdrs[n]);
				b->dg[n] = (struct pubd_tx_dgram){.hdr = b->hdrs[n],
								  .hdr_len = PUBD_WIRE_HDR_LEN,
								  .payload = it->msg->data + off,
								  .payload_len = (uint32_t)len,
								  .lent = lent};
			}
			if (!pace_take(d, g, now, &b->dg[n]))
				return n;
			b->owner[n] = it;
			b->nmsgs[n++] = 0;
		}
		it = it->next;
	}
	return n;
}

/*
 * The last datagrams of k messages went (a batch's k, or one message's
 * last fragment): the head of the queue from it on, each kept for repair
 * and off the queue, with what is the same for all of them (the queue's
 * ends and counts, the repair question, the budget and the origin's
 * back-pressure, a run of one origin's at a time) done once.
 */
static void messages_sent(struct pubd *d, struct pubd_group *g, struct pubd_tx_item *it, uint32_t k)
{
	bool first = !g->ever_sent, keep = g->cfg && g->cfg->repair.on;
	struct pubd_client *origin = it->origin;
	struct pubd_tx_item *next;
	uint64_t bytes = 0;
	uint32_t i, run = 0;

	g->ever_sent = true;
	for (i = 0; i < k; i++, it = next) {
		next = it->next;
		g->sent_seq = it->seq + 1;
		if (keep)
			engine_repair_keep_on(d, g, it->msg, it->seq, it->plan.frag_payload);
		if (it->origin != origin) {
			pubd_ipc_tx_done(&d->ipc, origin, bytes, run);
			origin = it->origin;
			bytes = 0;
			run = 0;
		}
		bytes += it->msg->len;
		run++;
		item_release(it);
		it->next = d->tx.free_items;
		d->tx.free_items = it;
	}
	pubd_ipc_tx_done(&d->ipc, origin, bytes, run);
	g->txq_head = it;
	if (!it)
		g->txq_tail = NULL;
	g->txq_len -= k;
	d->tx.queued_msgs -= k;
	/* The group's stream has begun: a heartbeat says so now rather than
	 * at the next period, with the stream's age, so a receiver that lost
	 * the first message counts it (rx.c), and on a repair group with the
	 * token, so receivers can NAK, and report for flow control, from the
	 * start of the stream. */
	if (first)
		pubd_tx_announce(d, g);
}

/* Tokens back for datagrams gathered but not sent. */
static void refund(struct pubd_group *g, const struct tx_batch *b, unsigned from, unsigned n)
{
	for (; from < n; from++)
		pubd_pacer_refund(&g->pacer, b->dg[from].hdr_len + b->dg[from].payload_len);
}

/*
 * Offer up to TX_BATCH datagrams of g's queue. Returns the number the
 * fabric took, -1 when it took fewer than offered (out of credits), -2
 * when the group is not joined, or -3 when the fabric's MTU went down
 * under the datagrams (the caller cuts the queues again). A paced group
 * out of tokens is left with tx_paced set (and the pace timer armed).
 */
static int pump_group(struct pubd *d, struct pubd_group *g)
{
	struct tx_batch b;
	struct pubd_tx_item *it;
	unsigned n, i;
	int sent;

	n = gather(d, g, &b);
	if (!n)
		return 0;
	sent = d->fops->send(d->fabric, g->slot, b.dg, n);
	if (sent < 0)
		refund(g, &b, 0, n);
	if (sent == -ENOTCONN) {
		/* The group is down (link flap, rejoin under way): keep its
		 * queue and wait for group_state(up) rather than drop. */
		pubd_group_set_up(&d->groups, g, false);
		return -2;
	}
	if (sent == -EMSGSIZE && d->fops->mtu(d->fabric) != d->mtu)
		return -3; /* the interface's MTU went down: cut again, nothing lost */
	if (sent < 0) {
		/* A hard error on the head message: drop it, counted, and go on.
		 * It repeats for every message while its cause lasts (a link
		 * down): a few lines a period, the rest counted. */
		it = g->txq_head;
		if (pubd_log_limit_pass(&d->log_tx_refused, pubd_now_ns()))
			log_warn("group %s: fabric refused message seq %llu (%u bytes): %s", g->name,
				 (unsigned long long)it->seq, it->msg->len, strerror(-sent));
		pubd_drops_add(&g->drops, sent == -EMSGSIZE ? PUB_DROP_MTU_EXCEEDED : PUB_DROP_FABRIC_ERROR, 1);
		d->counters[PUBD_CTR_MSG_DROPPED]++;
		item_done(d, g, it);
		return 0;
	}
	refund(g, &b, (unsigned)sent, n);
	/* Heartbeats give receivers the stream's age from its first datagram. */
	if (sent > 0 && !g->stream_began_ns)
		g->stream_began_ns = pubd_now_ns();
	for (i = 0; i < (unsigned)sent; i++) {
		it = b.owner[i];
		d->counters[PUBD_CTR_TX_BYTES] += b.dg[i].hdr_len + b.dg[i].payload_len;
		if (b.nmsgs[i]) {
			/* A batch: its messages are the head of the queue, whole. */
			d->counters[PUBD_CTR_TX_BATCHES]++;
			d->counters[PUBD_CTR_TX_BATCHED] += b.nmsgs[i];
			messages_sent(d, g, it, b.nmsgs[i]);
		} else if (++it->next_frag == it->plan.frag_count) {
			messages_sent(d, g, it, 1);
		}
	}
	g->tx_datagrams += (unsigned)sent;
	d->counters[PUBD_CTR_TX_DATAGRAMS] += (unsigned)sent;
	return (unsigned)sent < n ? -1 : sent;
}

unsigned pubd_tx_pump(struct pubd *d)
{
	struct pubd_tx *tx = &d->tx;
	struct pubd_group *g;
	unsigned total = 0;
	int r;

	flow_recheck(d);
	if (tx->stalled)
		return 0;
	while ((g = ready_pop(tx))) {
		r = pump_group(d, g);
		if (r == -2)
			continue; /* off the ready list until it rejoins */
		if (r == -3) {
			/* Every group's queue is cut for the new MTU, g's too. */
			ready_push(tx, g);
			pubd_tx_mtu_changed(d, d->fops->mtu(d->fabric));
			continue;
		}
		if (r < 0) {
			/* Tokens for what the fabric did not take came back:
			 * the group waits for credits, not for the pacer. */
			g->tx_paced = false;
			tx->stalled = true;
			d->counters[PUBD_CTR_TX_STALLS]++;
			/* It goes first when credits return. */
			g->tx_ready = true;
			g->tx_next = tx->ready_head;
			tx->ready_head = g;
			if (!tx->ready_tail)
				tx->ready_tail = g;
			break;
		}
		total += (unsigned)r;
		ready_push(tx, g); /* round robin: back of the line if more is queued */
	}
	return total;
}

void pubd_tx_group_state(struct pubd *d, struct pubd_group *g)
{
	if (g->up)
		ready_push(&d->tx, g);
	else if (g->tx_ready)
		ready_unlink(&d->tx, g);
}

uint64_t pubd_tx_group_flush(struct pubd *d, struct pubd_group *g)
{
	uint64_t n = 0;

	g->tx_paced = false;
	flow_unblock(&d->tx, g);
	if (g->tx_ready)
		ready_unlink(&d->tx, g);
	while (g->txq_head) {
		item_done(d, g, g->txq_head);
		n++;
	}
	if (n) {
		pubd_drops_add(&g->drops, PUB_DROP_GROUP_RELOADED, n);
		d->counters[PUBD_CTR_MSG_DROPPED] += n;
	}
	return n;
}

/* Re-cut one group's queue for d->mtu. Returns messages dropped. */
static uint64_t replan_group(struct pubd *d, struct pubd_group *g)
{
	struct pubd_tx_item *it, *prev = NULL, *next;
	uint64_t dropped = 0;
	int err;

	for (it = g->txq_head; it; it = next) {
		next = it->next;
		if (g->raw)
			err = it->msg->len > d->mtu ? -EMSGSIZE : 0;
		else if (it->next_frag)
			/* Partly sent: its fragment unit is fixed, and the rest no
			 * longer fits. Receivers count it as a reassembly timeout. */
			err = it->plan.frag_payload + PUBD_WIRE_HDR_LEN > d->mtu ? -EMSGSIZE : 0;
		else
			err = pubd_frag_plan(&it->plan, it->msg->len, d->mtu, d->cfg.max_message_size);
		if (!err) {
			prev = it;
			continue;
		}
		pubd_drops_add(&g->drops, g->raw ? PUB_DROP_MTU_EXCEEDED : PUB_DROP_FABRIC_ERROR, 1);
		d->counters[PUBD_CTR_MSG_DROPPED]++;
		dropped++;
		/* Unlink it, then release it as item_done would. */
		if (prev)
			prev->next = next;
		else
			g->txq_head = next;
		if (g->txq_tail == it)
			g->txq_tail = prev;
		it->next = g->txq_head;
		g->txq_head = it;
		if (!g->txq_tail)
			g->txq_tail = it;
		item_done(d, g, it);
	}
	return dropped;
}

void pubd_tx_mtu_changed(struct pubd *d, uint32_t mtu)
{
	struct pubd_group *g;
	uint64_t dropped = 0;
	unsigned i;

	if (mtu == d->mtu)
		return;
	log_warn("fabric %s: MTU changed from %u to %u bytes per datagram; messages are cut for %u from now on",
		 d->fops->name, d->mtu, mtu, mtu);
	d->mtu = mtu;
	pubd_ipc_set_fabric(&d->ipc, d->mtu, d->source_id, d->fops->name);
	pubd_groups_foreach(&d->groups, g, i)
	{
		pubd_tx_pace_config(d, g); /* the depth is in datagrams too */
		dropped += replan_group(d, g);
		if (!g->txq_head && g->tx_ready)
			ready_unlink(&d->tx, g);
	}
	if (dropped)
		log_warn("fabric %s: %llu queued messages no longer fit the MTU and were dropped (fabric_error, or "
			 "mtu_exceeded on raw groups)",
			 d->fops->name, (unsigned long long)dropped);
}

void pubd_tx_forget_client(struct pubd *d, struct pubd_client *c)
{
	struct pubd_tx_item *it;
	struct pubd_group *g;
	unsigned i;

	pubd_groups_foreach(&d->groups, g, i)
	{
		for (it = g->txq_head; it; it = it->next)
			if (it->origin == c)
				it->origin = NULL;
	}
}

void pubd_tx_announce(struct pubd *d, struct pubd_group *g)
{
	struct pubd_wire_hdr h = {.flags = PUBD_WIRE_F_HEARTBEAT};
	uint8_t buf[PUBD_CTL_HB_LEN];
	struct pubd_tx_dgram dg = {.hdr = buf};
	uint64_t age_us;

	if (g->raw || g->host || !g->up)
		return;
	age_us = g->stream_began_ns ? (pubd_now_ns() - g->stream_began_ns) / 1000 : 0;
	h.group_id = g->id;
	h.source_id = d->source_id;
	h.msg_seq = g->sent_seq;
	pubd_wire_encode(&h, buf);
	/* On a repair group, the token a NAK must echo (wire_ctl.h); on
	 * every group, how long ago its stream began. */
	dg.hdr_len = (uint32_t)pubd_ctl_hb_put(buf, engine_repair_token(g), age_us);
	if (d->fops->send(d->fabric, g->slot, &dg, 1) == 1)
		d->counters[PUBD_CTR_TX_HEARTBEATS]++;
}

void pubd_tx_pace_config(struct pubd *d, struct pubd_group *g)
{
	uint64_t rate = g->cfg->rate;

	if (rate != g->pacer.rate) {
		if (rate)
			log_info("group %s: paced at %llu bytes/s", g->name, (unsigned long long)rate);
		else
			log_info("group %s: unpaced", g->name);
	}
	pubd_pacer_set(&g->pacer, pubd_now_ns(), rate, pubd_pacer_burst_for(rate, d->mtu));
	/* A wait computed at the old rate may be wrong now: ask again. */
	g->tx_paced = false;
	ready_push(&d->tx, g);
}

void pubd_tx_pace_wake(struct pubd *d, uint64_t now_ns)
{
	struct pubd_group *g;
	uint64_t next = UINT64_MAX;
	unsigned i;

	pubd_groups_foreach(&d->groups, g, i)
	{
		if (!g->tx_paced)
			continue;
		if (g->pace_until_ns <= now_ns) {
			g->tx_paced = false;
			ready_push(&d->tx, g);
		} else if (g->pace_until_ns < next) {
			next = g->pace_until_ns;
		}
	}
	d->tx.pace_deadline = next;
	pubd_loop_timer_arm(d->pace_timer, next);
	pubd_tx_pump(d);
}

void pubd_tx_heartbeat(struct pubd *d)
{
	struct pubd_group *g;
	unsigned i;

	pubd_groups_foreach(&d->groups, g, i)
	{
		/* Idle groups, whose receivers learn from it that they missed the
		 * last messages; a busy group's next datagram says as much. But a
		 * repair group's heartbeat also carries the token its receivers'
		 * NAKs must echo, and a source that publishes without a pause
		 * would leave a new receiver unable to NAK for as long: there it
		 * goes busy or not. It names sent_seq, one past the last message
		 * the fabric has taken whole, so it never announces one still
		 * queued here. */
		if (g->ever_sent && (!g->txq_head || engine_repair_token(g)))
			pubd_tx_announce(d, g);
	}
}

void pubd_tx_free(struct pubd *d)
{
	struct pubd_tx_item *it;
	struct pubd_group *g;
	unsigned i;

	uint64_t left = 0;

	pubd_groups_foreach(&d->groups, g, i)
	{
		if (g->txq_len) {
			/* Accepted, never sent: pubd is stopping (it waited for the
			 * fabric already) or could not start. */
			pubd_drops_add(&g->drops, PUB_DROP_SHUTDOWN, g->txq_len);
			d->counters[PUBD_CTR_MSG_DROPPED] += g->txq_len;
			left += g->txq_len;
		}
		while ((it = g->txq_head)) {
			g->txq_head = it->next;
			item_release(it);
			free(it);
		}
		g->txq_tail = NULL;
		g->txq_len = 0;
	}
	while ((it = d->tx.free_items)) {
		d->tx.free_items = it->next;
		free(it);
	}
	free(d->tx.batch_bodies);
	d->tx.batch_bodies = NULL;
	d->tx.batch_stride = 0;
	d->tx.ready_head = d->tx.ready_tail = NULL;
	d->tx.queued_msgs = 0;
	d->tx.fc_blocked = 0;
	if (left)
		log_warn("stopping: %llu accepted messages never reached the fabric (counted as shutdown drops)",
			 (unsigned long long)left);
}
