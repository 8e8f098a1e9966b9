/* SPDX-License-Identifier: MIT */
/*
 * Answers pubctl's queries with tables (common/proto.h): the daemon decides
 * what to show, pubctl renders any table as text or JSON. Not on any hot
 * path: clarity over speed here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"
#include "daemon.h"
#include "flow_ctl.h"

#define NS_PER_MS 1000000ull

/*
 * Every table is bounded, whatever peers did to the daemon's state (a flood
 * of source ids, thousands of clients): rows past either limit are counted,
 * not sent, and the reply ends with a table "more" (table, rows_not_shown)
 * that pubctl prints as "... N more rows of T not shown". A row is at most
 * a few KiB (names are <= 255 bytes), so no TABLE frame comes near the
 * 16 MiB frame limit.
 */
#define TABLE_MAX_ROWS	50000u
#define TABLE_MAX_BYTES (4u << 20)
#define MAX_CUTS	8

/* One reply being built: the builder and the tables cut short so far. */
struct reply {
	struct pub_table_builder *b;
	uint32_t req;
	uint32_t rows; /* rows of the current table */
	unsigned ncuts;
	struct {
		const char *table;
		uint64_t skipped;
	} cuts[MAX_CUTS];
};

static void table_begin(struct reply *r, const char *name, const char *const *cols, unsigned ncols)
{
	pub_table_begin(r->b, r->req, name, cols, ncols);
	r->rows = 0;
}

/* May one more row go into the current table? If not, it is counted
 * against the table's name. */
static bool row_fits(struct reply *r, const char *table)
{
	struct pub_table_builder *b = r->b;
	unsigned i;

	if (r->rows < TABLE_MAX_ROWS && b->len - b->frame_start < TABLE_MAX_BYTES) {
		r->rows++;
		return true;
	}
	for (i = 0; i < r->ncuts; i++)
		if (r->cuts[i].table == table)
			break;
	if (i == r->ncuts && r->ncuts < MAX_CUTS) {
		r->cuts[i].table = table;
		r->cuts[i].skipped = 0;
		r->ncuts++;
	}
	if (i < r->ncuts)
		r->cuts[i].skipped++;
	return false;
}

static void reply_more(struct reply *r)
{
	static const char *const cols[] = {"table:s", "rows_not_shown:u"};
	unsigned i;

	if (!r->ncuts)
		return;
	table_begin(r, "more", cols, 2);
	for (i = 0; i < r->ncuts; i++) {
		pub_table_str(r->b, r->cuts[i].table);
		pub_table_u64(r->b, r->cuts[i].skipped);
	}
	pub_table_end(r->b);
}

static const char *mode_name(enum pubd_join_mode m)
{
	return m == PUBD_JOIN_SEND ? "send" : m == PUBD_JOIN_RECV ? "recv" : "send+recv";
}

static void hex64(char buf[17], uint64_t v)
{
	snprintf(buf, 17, "%016" PRIx64, v);
}

static unsigned group_publishers(const struct pubd *d, const struct pubd_group *g)
{
	struct pubd_client_info ci;
	const struct pubd_client *c;
	unsigned n = 0, i;

	for (c = pubd_ipc_clients_first(&d->ipc); c; c = pubd_ipc_clients_next(c)) {
		pubd_ipc_client_info(c, &ci);
		for (i = 0; i < ci.npubs; i++)
			if (ci.pubs[i].group == g)
				n++;
	}
	return n;
}

static unsigned group_sources(const struct pubd *d, const struct pubd_group *g)
{
	unsigned i, n = 0;

	for (i = 0; i < d->sources.cap; i++)
		if (d->sources.slots[i] && d->sources.slots[i]->group_id == g->id)
			n++;
	return n;
}

/* The *_bytes columns (payload bytes, for pubctl watch's rates) come last so
 * the older columns keep their places. */
static const char *const group_cols[] = {
	"name:s",
	"address:s",
	"raw:u",
	"joined:u",
	"mode:s",
	"receiving:u",
	"subscribers:u",
	"publishers:u",
	"published:u",
	"received:u",
	"delivered:u",
	"dropped:u",
	"sub_dropped:u",
	"sub_denied:u",
	"sources:u",
	"tx_queued:u",
	"receiving_ms:u",
	"published_bytes:u",
	"received_bytes:u",
	"delivered_bytes:u",
	"rate:u",
	"paced_waits:u",
	/* loss repair, source side */
	"repair:u",
	"repair_window_bytes:u",
	"naks_received:u",
	"repairs_sent:u",
	"repair_bytes:u",
	"gone_sent:u",
	"naks_ignored_duplicate:u",
	"naks_ignored_rate:u",
	"naks_ignored_outside:u",
	"naks_ignored_token:u",
	"naks_ignored_peer:u",
	"naks_ignored_unproven:u",
	"cookies_sent:u",
	/* loss repair, receiver side */
	"naks_sent:u",
	"repaired:u",
	"unrecovered:u",
	"gone_ignored:u",
	"join:s",
	/* receiver flow control (repair.flow_control: min) */
	"flow_control:u",
	"flow_receivers:u",
	"flow_waits:u",
	"flow_timeouts:u",
	"flow_stuck:u",
	"statuses_received:u",
	"statuses_ignored:u",
	"statuses_sent:u",
	/* its group log (limits.group_log): ring bytes (0: none), readers
	 * now, messages waiting for room, times its readers were moved off */
	"group_log:u",
	"group_log_readers:u",
	"group_log_waiting:u",
	"group_log_ends:u",
	"group_log_returns:u",
	/* fabric, or host (never on the fabric: groups.scope) */
	"scope:s",
	/* group logs retired because readers did not read to the END within
	 * limits.group_log_drain_ms (a new one for the others) */
	"group_log_abandoned:u",
};

/* Send-only or full member: the fabric's own word where its joins have a
 * type (verbs), else whether the group's datagrams come in (udp holds a
 * membership exactly while it listens). */
static const char *group_join_state(const struct pubd *d, const struct pubd_group *g)
{
	if (g->host)
		return "host"; /* never on the fabric */
	if (d->fops->join_state)
		return d->fops->join_state(d->fabric, g->slot);
	if (!g->up)
		return "joining";
	return g->listening ? "full" : "sendonly";
}

static void group_row(struct pubd *d, struct pub_table_builder *b, const struct pubd_group *g)
{
	struct pubd_group_log_info gl;

	pub_table_str(b, g->name);
	pub_table_str(b, g->cfg->address_text);
	pub_table_u64(b, g->raw);
	pub_table_u64(b, g->up);
	pub_table_str(b, mode_name(g->mode));
	pub_table_u64(b, g->listening);
	pub_table_u64(b, g->nsubs);
	pub_table_u64(b, group_publishers(d, g));
	pub_table_u64(b, g->published);
	pub_table_u64(b, g->received);
	pub_table_u64(b, g->delivered);
	pub_table_u64(b, pubd_drops_msg_total(&g->drops));
	pub_table_u64(b, pubd_drops_msg_total(&g->sub_drops));
	pub_table_u64(b, g->sub_denied);
	pub_table_u64(b, group_sources(d, g));
	pub_table_u64(b, g->txq_len);
	/* How long it has been receiving: a stream first heard within the
	 * grace period after this started is counted from where it was first
	 * heard, not from its first message (rx.c). */
	pub_table_u64(b, g->listening ? (pubd_now_ns() - g->listen_since_ns) / 1000000 : 0);
	pub_table_u64(b, g->published_bytes);
	pub_table_u64(b, g->received_bytes);
	pub_table_u64(b, g->delivered_bytes);
	pub_table_u64(b, g->cfg->rate); /* configured bytes/s; 0: unpaced */
	pub_table_u64(b, g->paced_waits);
	pub_table_u64(b, g->rwin != NULL); /* repair on, and the fabric can answer NAKs */
	pub_table_u64(b, g->rwin ? g->rwin->bytes : 0);
	pub_table_u64(b, g->naks_received);
	pub_table_u64(b, g->repairs_sent);
	pub_table_u64(b, g->repair_bytes);
	pub_table_u64(b, g->gone_sent);
	pub_table_u64(b, g->naks_ignored_duplicate);
	pub_table_u64(b, g->naks_ignored_rate);
	pub_table_u64(b, g->naks_ignored_outside);
	pub_table_u64(b, g->naks_ignored_token);
	pub_table_u64(b, g->naks_ignored_peer);
	pub_table_u64(b, g->naks_ignored_unproven);
	pub_table_u64(b, g->cookies_sent);
	pub_table_u64(b, g->naks_sent);
	pub_table_u64(b, g->repaired);
	pub_table_u64(b, g->drops.by_reason[PUB_DROP_UNRECOVERED]);
	pub_table_u64(b, g->gone_ignored);
	pub_table_str(b, group_join_state(d, g));
	pub_table_u64(b, g->fcs != NULL); /* flow control min, with a repair window */
	pub_table_u64(b, g->fcs ? g->fcs->n : 0);
	pub_table_u64(b, g->flow_waits);
	pub_table_u64(b, g->fcs ? g->fcs->timed_out : 0);
	pub_table_u64(b, g->fcs ? g->fcs->stuck : 0);
	pub_table_u64(b, g->statuses_received);
	pub_table_u64(b, g->statuses_ignored);
	pub_table_u64(b, g->statuses_sent);
	pubd_ipc_group_log_info(g, &gl);
	pub_table_u64(b, gl.capacity);
	pub_table_u64(b, gl.readers);
	pub_table_u64(b, gl.waiting);
	pub_table_u64(b, gl.ends);
	pub_table_u64(b, gl.returns);
	pub_table_str(b, g->host ? "host" : "fabric");
	pub_table_u64(b, gl.abandoned);
}

/* How a subscription's messages reach it. */
static const char *sub_path(const struct pubd_sub *s, const struct pubd_client_info *ci)
{
	if (s->glog_live)
		return "group_log";
	if (ci->group_log_withheld)
		return "deliver_log (group log withheld)";
	if (s->glog && s->glog_until)
		return "deliver_log (group log ended)";
	return ci->deliver_log ? "deliver_log" : "socket";
}

static const char *const status_cols[] = {
	"version:s",
	"pid:u",
	"uptime_s:u",
	"config:s",
	"socket:s",
	"fabric:s",
	"source_id:s",
	"mtu:u",
	"payload_per_datagram:u",
	"groups:u",
	"clients:u",
	"published:u",
	"received:u",
	"delivered:u",
	"dropped:u",
	"tx_queued:u",
	"reasm_streams:u",
	"reasm_inflight:u",
	"reasm_bytes:u",
	"reasm_held_bytes:u",
	"sources:u",
	"max_sources:u",
	"max_message_size:u",
	"reassembly_timeout_ms:u",
	"reassembly_budget:u",
	"reassembly_inflight:u",
	"subscriber_queue:u",
	"slow_subscriber:s",
	"heartbeat_ms:u",
	"receive:s",
	"shm:s",
	"shm_direct:s",
	"publish_log:u",
	"deliver_log:u",
	"direct_log:u",
	"group_log:u",
	"client_buffered:u",
	"client_buffer_budget:u",
	/* connections pubd ended whose clients have not hung up yet: their
	 * deliver logs are kept, and they count against limits.max_clients */
	"clients_ended:u",
	/* repair groups: messages held back for order, and what they take
	 * (repair_order.c), against limits.reassembly_budget */
	"order_held:u",
	"order_held_bytes:u",
	/* fabric.rx_linger_us in effect (auto: sized from wakeup_ns, the
	 * wakeup measured at start; 0 when the file sets the linger) */
	"rx_linger_us:u",
	"wakeup_ns:u",
};

/* The status table's one row, in status_cols' order. */
static void status_row(struct pubd *d, struct pub_table_builder *b)
{
	struct pubd_reasm_totals t;
	struct pubd_group *g;
	char src[17];
	unsigned i, ngroups = 0;

	pubd_groups_foreach(&d->groups, g, i) ngroups++;
	pubd_reasm_totals(d->reasm, &t);
	hex64(src, d->source_id);
	pub_table_str(b, PUBD_VERSION);
	pub_table_u64(b, (uint64_t)getpid());
	pub_table_u64(b, (pubd_now_ns() - d->started_ns) / 1000000000ull);
	pub_table_str(b, d->config_path);
	if (pubd_ipc_path(&d->ipc)) {
		pub_table_str(b, pubd_ipc_path(&d->ipc));
	} else {
		char sock[160];

		snprintf(sock, sizeof(sock), "%s (from systemd)",
			 pubd_ipc_passed_path(&d->ipc) && pubd_ipc_passed_path(&d->ipc)[0]
				 ? pubd_ipc_passed_path(&d->ipc)
				 : "unnamed");
		pub_table_str(b, sock);
	}
	pub_table_str(b, d->fops->name);
	pub_table_str(b, src);
	pub_table_u64(b, d->mtu);
	pub_table_u64(b, d->mtu > PUBD_WIRE_HDR_LEN ? d->mtu - PUBD_WIRE_HDR_LEN : 0);
	pub_table_u64(b, ngroups);
	pub_table_u64(b, d->ipc.nclients);
	pub_table_u64(b, d->counters[PUBD_CTR_MSG_PUBLISHED]);
	pub_table_u64(b, d->counters[PUBD_CTR_MSG_RECEIVED]);
	pub_table_u64(b, d->counters[PUBD_CTR_MSG_DELIVERED]);
	pub_table_u64(b, d->counters[PUBD_CTR_MSG_DROPPED]);
	pub_table_u64(b, d->tx.queued_msgs);
	pub_table_u64(b, t.streams);
	pub_table_u64(b, t.inflight_msgs);
	pub_table_u64(b, t.inflight_bytes);
	pub_table_u64(b, t.held_bytes);
	pub_table_u64(b, d->sources.n);
	pub_table_u64(b, d->cfg.max_sources);
	pub_table_u64(b, d->cfg.max_message_size);
	pub_table_u64(b, d->cfg.reassembly_timeout_ms);
	pub_table_u64(b, d->cfg.reassembly_budget);
	pub_table_u64(b, d->cfg.reassembly_inflight);
	pub_table_u64(b, d->cfg.subscriber_queue);
	pub_table_str(b, pubd_slow_policy_name(d->cfg.slow_subscriber));
	pub_table_u64(b, d->cfg.heartbeat_ms);
	pub_table_str(b, pubd_receive_policy_name(d->cfg.receive));
	pub_table_str(b, d->cfg.shm ? "on" : "off");
	pub_table_str(b, d->cfg.shm_direct ? "on" : "off");
	pub_table_u64(b, d->cfg.publish_log);
	pub_table_u64(b, d->cfg.deliver_log);
	pub_table_u64(b, d->cfg.direct_log);
	pub_table_u64(b, d->cfg.group_log);
	pub_table_u64(b, d->ipc.charged);
	pub_table_u64(b, d->cfg.client_buffer_budget);
	pub_table_u64(b, d->ipc.nlingering);
	pub_table_u64(b, d->holds.msgs);
	pub_table_u64(b, d->held_bytes);
	pub_table_u64(b, d->cfg.busy_poll ? 0 : pubd_config_linger_us(&d->cfg));
	pub_table_u64(b, d->wake_ns);
}

static void q_status(struct pubd *d, struct reply *r)
{
	static const char *const kv[] = {"key:s", "value:s"};
	static const char *const ctr[] = {"counter:s", "value:u"};
	struct pub_table_builder *b = r->b;
	unsigned i;

	table_begin(r, "status", status_cols, sizeof(status_cols) / sizeof(status_cols[0]));
	status_row(d, b);
	pub_table_end(b);

	table_begin(r, "fabric", kv, 2);
	d->fops->status(d->fabric, b);
	pub_table_end(b);

	table_begin(r, "counters", ctr, 2);
	for (i = 0; i < PUBD_CTR__COUNT; i++) {
		pub_table_str(b, pubd_counter_name(i));
		pub_table_u64(b, d->counters[i]);
	}
	pub_table_end(b);
}

static void q_groups(struct pubd *d, struct reply *r)
{
	struct pubd_group *g;
	unsigned i;

	table_begin(r, "groups", group_cols, sizeof(group_cols) / sizeof(group_cols[0]));
	pubd_groups_foreach(&d->groups, g, i)
	{
		if (row_fits(r, "groups"))
			group_row(d, r->b, g);
	}
	pub_table_end(r->b);
}

struct stream_list {
	struct pubd_reasm_stream_info *v;
	size_t n, cap;
};

static void collect_stream(void *ctx, const struct pubd_reasm_stream_info *s)
{
	struct stream_list *l = ctx;
	struct pubd_reasm_stream_info *v;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;

		v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *s;
}

static int stream_cmp(const void *a, const void *b)
{
	const struct pubd_reasm_stream_info *x = a, *y = b;

	if (x->source_id != y->source_id)
		return x->source_id < y->source_id ? -1 : 1;
	return x->group_id < y->group_id ? -1 : x->group_id > y->group_id;
}

/* Sorted once per query, searched per row: a table of up to max_sources
 * rows against max_streams streams stays quick. */
static const struct pubd_reasm_stream_info *find_stream(const struct stream_list *l, uint64_t src, uint64_t grp)
{
	struct pubd_reasm_stream_info key = {.source_id = src, .group_id = grp};

	return l->n ? bsearch(&key, l->v, l->n, sizeof(*l->v), stream_cmp) : NULL;
}

/* Rows of the sources table; only_group NULL for all groups. */
static void sources_table(struct pubd *d, struct reply *r, const struct pubd_group *only)
{
	struct pub_table_builder *b = r->b;
	static const char *const cols[] = {"source:s", "group:s", "next_seq:u", "delivered:u", "bytes:u", "dropped:u",
					   "inflight:u", "missing:u", "idle_ms:u",
					   /* loss repair, receiver side */
					   "naks_sent:u", "repaired:u", "unrecovered:u"};
	struct stream_list streams = {0};
	const struct pubd_reasm_stream_info *si;
	const struct pubd_source_stats *s;
	const struct pubd_group *g;
	uint64_t now = pubd_now_ns(), last;
	char src[17];
	unsigned i;

	pubd_reasm_foreach(d->reasm, collect_stream, &streams);
	if (streams.n)
		qsort(streams.v, streams.n, sizeof(*streams.v), stream_cmp);
	table_begin(r, "sources", cols, sizeof(cols) / sizeof(cols[0]));
	for (i = 0; i < d->sources.cap; i++) {
		s = d->sources.slots[i];
		if (!s || (only && s->group_id != only->id) || !row_fits(r, "sources"))
			continue;
		g = pubd_groups_by_id(&d->groups, s->group_id);
		si = find_stream(&streams, s->source_id, s->group_id);
		hex64(src, s->source_id);
		pub_table_str(b, src);
		pub_table_str(b, g ? g->name : "?");
		/* A group not received now has no streams: where each had got
		 * to, and when it was last heard, are the source's own. */
		pub_table_u64(b, si ? si->next_seq : s->next_seq_kept);
		pub_table_u64(b, s->delivered);
		pub_table_u64(b, s->bytes);
		pub_table_u64(b, pubd_drops_msg_total(&s->drops));
		pub_table_u64(b, si ? si->inflight : 0);
		pub_table_u64(b, si ? si->missing : 0);
		last = si ? si->last_active_ns : s->last_seen_ns;
		pub_table_u64(b, now > last ? (now - last) / NS_PER_MS : 0);
		pub_table_u64(b, s->naks_sent);
		pub_table_u64(b, s->repaired);
		pub_table_u64(b, s->drops.by_reason[PUB_DROP_UNRECOVERED]);
	}
	/* What sources evicted for limits.max_sources had counted (all groups),
	 * so the rows still add up to the totals. */
	if (!only && d->sources.evicted.sources && row_fits(r, "sources")) {
		const struct pubd_source_evicted *e = &d->sources.evicted;

		pub_table_str(b, "(evicted)");
		pub_table_str(b, "*");
		pub_table_u64(b, 0);
		pub_table_u64(b, e->delivered);
		pub_table_u64(b, e->bytes);
		pub_table_u64(b, pubd_drops_msg_total(&e->drops));
		pub_table_u64(b, 0);
		pub_table_u64(b, 0);
		pub_table_u64(b, 0);
		pub_table_u64(b, 0);
		pub_table_u64(b, 0);
		pub_table_u64(b, e->drops.by_reason[PUB_DROP_UNRECOVERED]);
	}
	pub_table_end(b);
	free(streams.v);
}

static int q_group(struct pubd *d, struct reply *r, const char *arg, size_t len, char *err, size_t errcap)
{
	struct pub_table_builder *b = r->b;
	static const char *const sub_cols[] = {"client:u", "name:s",	"pid:u",  "uid:u",	  "delivered:u",
					       "queued:u", "dropped:u", "path:s", "direct_logs:u"};
	static const char *const pub_cols[] = {"client:u", "name:s", "pid:u", "uid:u", "published:u", "bytes:u"};
	struct pubd_group *g = pubd_groups_by_name(&d->groups, arg, len);
	struct pubd_client_info ci;
	const struct pubd_client *c;
	unsigned i;

	if (!g) {
		snprintf(err, errcap, "no group named '%.*s'", (int)len, arg);
		return -PUB_ERR_NO_GROUP;
	}
	table_begin(r, "group", group_cols, sizeof(group_cols) / sizeof(group_cols[0]));
	group_row(d, b, g);
	pub_table_end(b);

	table_begin(r, "subscribers", sub_cols, sizeof(sub_cols) / sizeof(sub_cols[0]));
	for (i = 0; i < g->nsubs; i++) {
		const struct pubd_sub *s = g->subs[i];

		if (!row_fits(r, "subscribers"))
			continue;
		pubd_ipc_client_info(s->client, &ci);
		pub_table_u64(b, ci.id);
		pub_table_str(b, ci.name);
		pub_table_u64(b, (uint64_t)ci.pid);
		pub_table_u64(b, ci.uid);
		pub_table_u64(b, s->delivered);
		pub_table_u64(b, pubd_ipc_queued_for(s));
		pub_table_u64(b, pubd_drops_msg_total(&s->drops));
		pub_table_str(b, sub_path(s, &ci));
		pub_table_u64(b, pubd_ipc_sub_direct_logs(s));
	}
	pub_table_end(b);

	table_begin(r, "publishers", pub_cols, sizeof(pub_cols) / sizeof(pub_cols[0]));
	for (c = pubd_ipc_clients_first(&d->ipc); c; c = pubd_ipc_clients_next(c)) {
		pubd_ipc_client_info(c, &ci);
		for (i = 0; i < ci.npubs; i++) {
			if (ci.pubs[i].group != g || !row_fits(r, "publishers"))
				continue;
			pub_table_u64(b, ci.id);
			pub_table_str(b, ci.name);
			pub_table_u64(b, (uint64_t)ci.pid);
			pub_table_u64(b, ci.uid);
			pub_table_u64(b, ci.pubs[i].published);
			pub_table_u64(b, ci.pubs[i].bytes);
		}
	}
	pub_table_end(b);
	sources_table(d, r, g);
	return 0;
}

static void q_clients(struct pubd *d, struct reply *r)
{
	struct pub_table_builder *b = r->b;
	static const char *const cols[] = {"id:u",	    "name:s",	       "pid:u",	       "uid:u",
					   "gid:u",	    "subscriptions:s", "published:u",  "delivered:u",
					   "queued:u",	    "dropped:u",       "paused:u",     "connected_s:u",
					   "publish_log:u", "deliver_log:u",   "direct_logs:u"};
	struct pubd_client_info ci;
	const struct pubd_client *c;
	uint64_t now = pubd_now_ns();
	char subs[1024];
	size_t used;
	unsigned i;

	table_begin(r, "clients", cols, sizeof(cols) / sizeof(cols[0]));
	for (c = pubd_ipc_clients_first(&d->ipc); c; c = pubd_ipc_clients_next(c)) {
		if (!row_fits(r, "clients"))
			continue;
		pubd_ipc_client_info(c, &ci);
		used = 0;
		subs[0] = 0;
		for (i = 0; i < ci.nsubs && used < sizeof(subs) - 1; i++)
			used += (size_t)snprintf(subs + used, sizeof(subs) - used, "%s%s", i ? "," : "",
						 ci.subs[i]->group->name);
		pub_table_u64(b, ci.id);
		pub_table_str(b, ci.name);
		pub_table_u64(b, (uint64_t)ci.pid);
		pub_table_u64(b, ci.uid);
		pub_table_u64(b, ci.gid);
		pub_table_str(b, subs);
		pub_table_u64(b, ci.published);
		pub_table_u64(b, ci.delivered);
		pub_table_u64(b, ci.queued);
		pub_table_u64(b, pubd_drops_msg_total(ci.drops));
		pub_table_u64(b, ci.paused);
		pub_table_u64(b, (now - ci.connected_ns) / 1000000000ull);
		pub_table_u64(b, ci.publish_log);
		pub_table_u64(b, ci.deliver_log);
		pub_table_u64(b, ci.direct_logs);
	}
	pub_table_end(b);
}

static void drop_rows(struct reply *r, const char *scope, const char *name, const struct pubd_drops *dr)
{
	struct pub_table_builder *b = r->b;
	unsigned k;

	for (k = 0; k < PUB_DROP__COUNT; k++) {
		if (!dr->by_reason[k] || !row_fits(r, "drops"))
			continue;
		pub_table_str(b, scope);
		pub_table_str(b, name);
		pub_table_str(b, pub_drop_reason_name(k));
		pub_table_str(b, pub_drop_reason_kind(k) == PUB_DROP_KIND_MSG ? "messages" : "datagrams");
		pub_table_u64(b, dr->by_reason[k]);
	}
}

static void q_drops(struct pubd *d, struct reply *r)
{
	static const char *const cols[] = {"scope:s", "name:s", "reason:s", "unit:s", "count:u"};
	const struct pubd_source_stats *s;
	struct pubd_client_info ci;
	struct pubd_group *g;
	char name[600];
	unsigned i, k;

	table_begin(r, "drops", cols, sizeof(cols) / sizeof(cols[0]));
	/* Scopes that add up to the totals first, so a cut table loses only
	 * the breakdown by source and subscriber. */
	drop_rows(r, "daemon", "-", &d->drops);
	pubd_groups_foreach(&d->groups, g, i) drop_rows(r, "group", g->name, &g->drops);
	pubd_groups_foreach(&d->groups, g, i) drop_rows(r, "group-subscribers", g->name, &g->sub_drops);
	/* Sources evicted for limits.max_sources, all groups together: with it
	 * the source rows still sum to what sources lost. */
	if (d->sources.evicted.sources)
		drop_rows(r, "source", "(evicted)", &d->sources.evicted.drops);
	for (i = 0; i < d->sources.cap; i++) {
		s = d->sources.slots[i];
		if (!s)
			continue;
		g = pubd_groups_by_id(&d->groups, s->group_id);
		snprintf(name, sizeof(name), "%016" PRIx64 "/%s", s->source_id, g ? g->name : "?");
		drop_rows(r, "source", name, &s->drops);
	}
	pubd_groups_foreach(&d->groups, g, i)
	{
		for (k = 0; k < g->nsubs; k++) {
			pubd_ipc_client_info(g->subs[k]->client, &ci);
			snprintf(name, sizeof(name), "%u:%s/%s", ci.id, ci.name, g->name);
			drop_rows(r, "subscriber", name, &g->subs[k]->drops);
		}
	}
	pub_table_end(r->b);
}

/* Every live subscription, all groups: the per-subscriber metrics. */
static void subscribers_table(struct pubd *d, struct reply *r)
{
	static const char *const cols[] = {"group:s",	  "client:u", "name:s",	  "pid:u",
					   "delivered:u", "queued:u", "dropped:u"};
	struct pub_table_builder *b = r->b;
	struct pubd_client_info ci;
	struct pubd_group *g;
	unsigned i, k;

	table_begin(r, "subscribers", cols, sizeof(cols) / sizeof(cols[0]));
	pubd_groups_foreach(&d->groups, g, i)
	{
		for (k = 0; k < g->nsubs; k++) {
			const struct pubd_sub *s = g->subs[k];

			if (!row_fits(r, "subscribers"))
				continue;
			pubd_ipc_client_info(s->client, &ci);
			pub_table_str(b, g->name);
			pub_table_u64(b, ci.id);
			pub_table_str(b, ci.name);
			pub_table_u64(b, (uint64_t)ci.pid);
			pub_table_u64(b, s->delivered);
			pub_table_u64(b, pubd_ipc_queued_for(s));
			pub_table_u64(b, pubd_drops_msg_total(&s->drops));
		}
	}
	pub_table_end(b);
}

int pubd_query_metrics_tables(struct pubd *d, struct pub_table_builder *b)
{
	struct reply rp = {.b = b};

	q_status(d, &rp);
	q_groups(d, &rp);
	subscribers_table(d, &rp);
	sources_table(d, &rp, NULL);
	q_drops(d, &rp);
	reply_more(&rp);
	return b->err;
}

int pubd_query(struct pubd *d, struct pub_table_builder *b, uint32_t req_id, uint8_t kind, const char *arg,
	       size_t arglen, char *err, size_t errcap)
{
	struct reply rp = {.b = b, .req = req_id};
	int r = 0;

	switch (kind) {
	case PUB_QUERY_STATUS:
		q_status(d, &rp);
		break;
	case PUB_QUERY_GROUPS:
		q_groups(d, &rp);
		break;
	case PUB_QUERY_GROUP:
		r = q_group(d, &rp, arg, arglen, err, errcap);
		break;
	case PUB_QUERY_CLIENTS:
		q_clients(d, &rp);
		break;
	case PUB_QUERY_DROPS:
		q_drops(d, &rp);
		break;
	case PUB_QUERY_SOURCES:
		sources_table(d, &rp, NULL);
		break;
	default:
		snprintf(err, errcap, "unknown query kind %u", kind);
		return -PUB_ERR_BAD_QUERY;
	}
	if (r == 0)
		reply_more(&rp);
	if (r == 0 && b->err) {
		snprintf(err, errcap, "building the reply: %s", strerror(-b->err));
		return -PUB_ERR_INTERNAL;
	}
	return r;
}
