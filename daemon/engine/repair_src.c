/* SPDX-License-Identifier: MIT */
/*
 * Loss repair, the source side: a publishing daemon keeps what it sent on a
 * repair group (core/repair_window.h) and answers receivers' NAKs from it.
 * (Control datagrams of flow control, STATUS, go on to flow_src.c.)
 *
 * A NAK arrives unicast (the fabric's send_to address of the asker comes
 * with it). Per sequence number the window decides: resend unicast to the
 * asker, multicast to the group (a second receiver asked within the
 * multicast interval), ignore (a duplicate within the linger, or not sent
 * yet), or GONE (left the window: one GONE datagram names each run).
 * Repairs are the original fragments, flagged REPAIR, only those a
 * fragment bitmap asks for.
 *
 * Forged NAKs (anyone can send a datagram to the source's port, claiming
 * any address) must not turn the source into an amplifier. So, before any
 * work: a NAK must carry the group's repair token, which the source sends
 * only on the group's multicast (heartbeats; wire_ctl.h), else it is
 * ignored as `token`; an asker (by its address) may send
 * PUBD_REPAIR_PEER_NAKS_PER_S NAKs a second, else `peer`; and a NAK must
 * echo the cookie of the address it came from, else it is answered by a
 * COOKIE alone (`unproven`, asker.c): the token is on the group's
 * multicast for any host there to read, and the address a NAK claims may
 * be a third party's, which repairs would flood. Then work is bounded: at
 * most REPAIR_MAX_PER_NAK messages per NAK, repair bytes within the
 * asker's repair.peer_rate (`peer`) and within the group's repair.rate
 * (`rate`), both token buckets 100 ms deep; what does not fit is ignored
 * and the receiver asks again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "repair_peers.h"

#include "engine_internal.h"
#include "log.h"
#include "wire.h"
#include "wire_ctl.h"

#define REPAIR_MAX_PER_NAK 256u
#define REPAIR_BATCH	   32u
#define REPAIR_LINGER_NS   (10 * MS)
#define REPAIR_MCAST_NS	   (5 * MS)

static void window_cfg(const struct pubd_group *g, struct pubd_repair_window_cfg *wc)
{
	wc->window_bytes = g->cfg->repair.window;
	wc->max_age_ns = (uint64_t)g->cfg->repair.max_age_ms * MS;
	wc->linger_ns = REPAIR_LINGER_NS;
	wc->mcast_ns = REPAIR_MCAST_NS;
}

static uint64_t repair_burst(uint64_t rate, uint32_t mtu)
{
	uint64_t b = rate / 10;

	return b < 2ull * mtu ? 2ull * mtu : b;
}

/* A random, non-zero token for g, drawn once (wire_ctl.h). */
static void draw_token(struct pubd *d, struct pubd_group *g)
{
	while (!g->repair_token)
		if (getrandom(&g->repair_token, sizeof(g->repair_token), 0) != sizeof(g->repair_token))
			g->repair_token = (d->source_id ^ g->id ^ pubd_now_ns()) * 0x9e3779b97f4a7c15ull;
}

static bool open_window(struct pubd *d, struct pubd_group *g, const struct pubd_repair_window_cfg *wc)
{
	g->rwin = calloc(1, sizeof(*g->rwin));
	g->rpeers = calloc(1, sizeof(*g->rpeers));
	if (!g->rwin || !g->rpeers) {
		free(g->rwin);
		free(g->rpeers);
		g->rwin = NULL;
		g->rpeers = NULL;
		return false;
	}
	draw_token(d, g);
	pubd_repair_window_init(g->rwin, wc, &d->repair_budget);
	pubd_repair_peers_init(g->rpeers, g->cfg->repair.peer_rate, repair_burst(g->cfg->repair.peer_rate, d->mtu));
	return true;
}

/* Open, update or close g's window as its config says. */
static void sync_group(struct pubd *d, struct pubd_group *g, uint64_t now)
{
	const struct pubd_repair_config *rc = &g->cfg->repair;
	struct pubd_repair_window_cfg wc;
	bool want = engine_repairs(d, g);

	if (!want) {
		engine_repair_free(d, g);
		return;
	}
	window_cfg(g, &wc);
	if (!g->rwin) {
		if (!open_window(d, g, &wc))
			return;
	} else {
		pubd_repair_window_set(g->rwin, &wc);
		pubd_repair_peers_set(g->rpeers, now, rc->peer_rate, repair_burst(rc->peer_rate, d->mtu));
	}
	pubd_pacer_set(&g->repair_pacer, now, rc->rate, repair_burst(rc->rate, d->mtu));
}

void engine_repair_free(struct pubd *d, struct pubd_group *g)
{
	/* Flow control rides on the window's token. */
	engine_flow_free(d, g);
	free(g->rpeers);
	g->rpeers = NULL;
	if (!g->rwin)
		return;
	pubd_repair_window_close(g->rwin);
	free(g->rwin);
	g->rwin = NULL;
}

uint64_t engine_repair_token(const struct pubd_group *g)
{
	return g->rwin ? g->repair_token : 0;
}

void engine_repair_tick(struct pubd *d, uint64_t now)
{
	struct pubd_group *g;
	unsigned i;

	d->repair_budget.limit = d->cfg.repair_budget;
	pubd_groups_foreach(&d->groups, g, i)
	{
		sync_group(d, g, now);
		if (g->rwin)
			pubd_repair_window_expire(g->rwin, now);
	}
}

void engine_repair_keep_on(struct pubd *d, struct pubd_group *g, struct pubd_msgbuf *msg, uint64_t seq, uint32_t unit)
{
	d->repair_budget.limit = d->cfg.repair_budget; /* as loaded or reloaded */
	if (!g->rwin)
		sync_group(d, g, d->event_ns);
	if (g->rwin)
		pubd_repair_window_keep(g->rwin, pubd_now_ns(), seq, msg, unit);
}

struct out {
	struct pubd *d;
	struct pubd_group *g;
	const struct pubd_rx_dgram *to; /* unicast to its sender, or NULL: multicast */
	struct pubd_repair_peer *asker; /* charged for what its NAK makes us send */
	uint8_t hdrs[REPAIR_BATCH][PUBD_WIRE_HDR_LEN];
	struct pubd_tx_dgram dg[REPAIR_BATCH];
	unsigned n;
};

/* Send what o holds, counted. 0, or -1 when the fabric took less. */
static int flush(struct out *o)
{
	struct pubd *d = o->d;
	int sent, i;
	bool all;

	if (!o->n)
		return 0;
	sent = o->to ? d->fops->send_to(d->fabric, o->to->from, o->to->from_len, o->dg, o->n)
		     : d->fops->send(d->fabric, o->g->slot, o->dg, o->n);
	for (i = 0; i < sent; i++) {
		o->g->repairs_sent++;
		o->g->repair_bytes += o->dg[i].hdr_len + o->dg[i].payload_len;
	}
	all = sent == (int)o->n;
	o->n = 0;
	return all ? 0 : -1;
}

enum resend_result { RESENT = 0, STOP_RATE, STOP_PEER };

/* Take bytes from the group's bucket and the asker's: which one said no. */
static enum resend_result take_tokens(struct out *o, uint64_t now, uint64_t bytes)
{
	if (pubd_pacer_take(&o->g->repair_pacer, now, bytes))
		return STOP_RATE;
	if (o->asker && !pubd_repair_peer_bytes(o->asker, now, bytes)) {
		pubd_pacer_refund(&o->g->repair_pacer, bytes);
		return STOP_PEER;
	}
	return RESENT;
}

/* Resend the fragments of e (message seq) that c asks for. Not RESENT: out
 * of tokens (the group's or the asker's) or the fabric took less (counted
 * as rate); the rest is not sent. */
static enum resend_result resend(struct out *o, uint64_t now, uint64_t seq, const struct pubd_repair_entry *e,
				 const struct pubd_ctl *c)
{
	enum resend_result r;
	struct pubd_wire_hdr tmpl = {.flags = PUBD_WIRE_F_REPAIR}, h;
	struct pubd_frag_plan plan;
	size_t off, len;
	uint32_t i;

	plan.msg_len = e->msg->len;
	plan.frag_payload = e->unit ? e->unit : 1;
	plan.frag_count = plan.msg_len ? (plan.msg_len + plan.frag_payload - 1) / plan.frag_payload : 1;
	tmpl.group_id = o->g->id;
	tmpl.source_id = o->d->source_id;
	tmpl.msg_seq = seq;
	for (i = 0; i < plan.frag_count; i++) {
		if (!pubd_ctl_wants_frag(c, i))
			continue;
		pubd_frag_get(&plan, &tmpl, i, &h, &off, &len);
		r = take_tokens(o, now, PUBD_WIRE_HDR_LEN + len);
		if (r != RESENT)
			return r;
		pubd_wire_encode(&h, o->hdrs[o->n]);
		o->dg[o->n] = (struct pubd_tx_dgram){.hdr = o->hdrs[o->n],
						     .hdr_len = PUBD_WIRE_HDR_LEN,
						     .payload = e->msg->data + off,
						     .payload_len = (uint32_t)len};
		if (++o->n == REPAIR_BATCH && flush(o))
			return STOP_RATE;
	}
	return RESENT;
}

/* One GONE datagram for first .. first + count - 1, to the asker. */
static void send_gone(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *to, uint64_t first,
		      uint64_t count)
{
	struct pubd_ctl c = {.type = PUBD_CTL_GONE,
			     .count = (uint32_t)count,
			     .stream = d->source_id,
			     .first_seq = first,
			     .token = g->repair_token};

	if (engine_ctl_send(d, g, to, &c))
		g->gone_sent++;
}

/* Answer one sequence number of a NAK. false: stop (rate or credits). */
static bool answer_one(struct out *uni, struct out *multi, uint64_t now, uint64_t seq, uint64_t asker,
		       const struct pubd_ctl *c)
{
	struct pubd_group *g = uni->g;
	struct pubd_repair_entry *e;

	switch (pubd_repair_window_nak(g->rwin, now, seq, asker)) {
	case PUBD_REPAIR_AHEAD:
		g->naks_ignored_outside++;
		return true;
	case PUBD_REPAIR_DUPLICATE:
		g->naks_ignored_duplicate++;
		return true;
	case PUBD_REPAIR_GONE:
		return true; /* the caller gathers runs of these */
	case PUBD_REPAIR_UNICAST:
	case PUBD_REPAIR_MULTICAST:
		break;
	}
	e = pubd_repair_window_find(g->rwin, seq);
	switch (resend(e->repaired_mcast ? multi : uni, now, seq, e, c)) {
	case RESENT:
		return true;
	case STOP_PEER:
		g->naks_ignored_peer++;
		break;
	case STOP_RATE:
		g->naks_ignored_rate++;
		break;
	}
	e->repaired_ns = 0; /* not (all) sent: the asker's next NAK is no duplicate */
	return false;
}

static void answer_nak(struct pubd *d, struct pubd_group *g, const struct pubd_rx_dgram *dg, uint64_t asker,
		       struct pubd_repair_peer *peer, const struct pubd_ctl *c)
{
	struct out *uni = calloc(2, sizeof(*uni)), *multi;
	uint64_t now = d->event_ns, seq, gone_first = 0, gone_n = 0, i;
	bool ok = true;

	if (!uni)
		return;
	multi = uni + 1;
	*uni = (struct out){.d = d, .g = g, .to = dg, .asker = peer};
	*multi = (struct out){.d = d, .g = g, .to = NULL, .asker = peer};
	for (i = 0; i < c->count && ok; i++) {
		seq = c->first_seq + i;
		if (i >= REPAIR_MAX_PER_NAK) {
			g->naks_ignored_rate++;
			break;
		}
		if (!pubd_repair_window_find(g->rwin, seq) && seq < pubd_repair_window_next_seq(g->rwin)) {
			if (!gone_n)
				gone_first = seq;
			gone_n++;
			continue;
		}
		if (gone_n)
			send_gone(d, g, dg, gone_first, gone_n);
		gone_n = 0;
		ok = answer_one(uni, multi, now, seq, asker, c);
	}
	if (gone_n)
		send_gone(d, g, dg, gone_first, gone_n);
	if (flush(uni) || flush(multi))
		g->naks_ignored_rate++;
	free(uni);
}

void engine_repair_on_ctl(struct pubd *d, const struct pubd_rx_dgram *dg, const struct pubd_wire_hdr *h,
			  const uint8_t *body, size_t len)
{
	struct pubd_group *g = pubd_groups_by_id(&d->groups, h->group_id);
	struct pubd_repair_peer *peer;
	struct pubd_ctl c;
	int err = pubd_ctl_decode(body, len, &c);

	if (err) {
		d->counters[PUBD_CTR_RX_MALFORMED]++;
		pubd_drops_add(g ? &g->drops : &d->drops, PUB_DROP_MALFORMED, 1);
		log_debug("malformed repair control datagram: %s", pubd_ctl_strerror(err));
		return;
	}
	if (!g) {
		d->counters[PUBD_CTR_RX_UNJOINED]++;
		return;
	}
	if (c.type == PUBD_CTL_GONE) {
		if (c.stream == h->source_id)
			engine_naks_gone(d, g, h->source_id, &c);
		return;
	}
	if (c.type == PUBD_CTL_COOKIE) {
		if (c.stream == h->source_id)
			engine_naks_cookie(d, g, h->source_id, &c);
		return;
	}
	if (c.type == PUBD_CTL_STATUS) {
		engine_flow_on_status(d, g, h->source_id, &c, dg);
		return;
	}
	g->naks_received++;
	if (c.stream != d->source_id || !g->rwin || !dg->from_len) {
		/* Not for us (an old source id), no window here, or nowhere to answer. */
		g->naks_ignored_outside++;
		return;
	}
	if (c.token != g->repair_token) {
		/* Not from a host that receives the group: nothing is sent back,
		 * not even a GONE, whatever address it claims. */
		g->naks_ignored_token++;
		return;
	}
	peer = pubd_repair_peers_get(g->rpeers, d->event_ns, dg->from, dg->from_len);
	if (!peer || !pubd_repair_peer_nak(peer, d->event_ns)) {
		g->naks_ignored_peer++;
		return;
	}
	if (!engine_repair_proven(d, g, dg, c.cookie)) {
		/* Not shown to receive at the address it claims: a reflector's
		 * victim's, perhaps. It got the address's cookie, no more. */
		g->naks_ignored_unproven++;
		return;
	}
	answer_nak(d, g, dg, h->source_id, peer, &c);
}
