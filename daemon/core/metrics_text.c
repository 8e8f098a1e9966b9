/* SPDX-License-Identifier: MIT */
/*
 * pubd's tables as Prometheus metrics (metrics_text.h): which column is
 * which metric, counter or gauge, with which labels. Counters end in
 * _total; a family's samples stay together, so a table is walked once per
 * metric it feeds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"
#include "metrics_text.h"
#include "stats.h"

static void status_metrics(struct prom_out *o, const struct mt_table *t)
{
	static const struct mt_colmap m[] = {
		{"uptime_s", "pubd_uptime_seconds", PROM_GAUGE, "seconds since pubd started"},
		{"groups", "pubd_groups", PROM_GAUGE, "configured groups"},
		{"clients", "pubd_clients", PROM_GAUGE, "connected local clients"},
		{"clients_ended", "pubd_clients_ended", PROM_GAUGE,
		 "connections pubd ended whose clients have not hung up yet (their deliver logs kept)"},
		{"mtu", "pubd_mtu_bytes", PROM_GAUGE, "largest datagram on the fabric, header included"},
		{"tx_queued", "pubd_tx_queued_messages", PROM_GAUGE, "messages waiting for send credits"},
		{"reasm_streams", "pubd_reasm_streams", PROM_GAUGE, "(source, group) streams the reassembly tracks"},
		{"reasm_inflight", "pubd_reasm_inflight_messages", PROM_GAUGE, "partial messages being reassembled"},
		{"reasm_bytes", "pubd_reasm_inflight_bytes", PROM_GAUGE, "bytes of the partial messages"},
		{"reasm_held_bytes", "pubd_reasm_held_bytes", PROM_GAUGE,
		 "heap held by the reassembly, counted against limits.reassembly_budget"},
		{"reassembly_budget", "pubd_reasm_budget_bytes", PROM_GAUGE, "limits.reassembly_budget"},
		{"order_held", "pubd_order_held_messages", PROM_GAUGE,
		 "messages repair groups hold back for order (behind a gap)"},
		{"order_held_bytes", "pubd_order_held_bytes", PROM_GAUGE,
		 "heap the held messages take, counted against limits.reassembly_budget"},
		{"client_buffered", "pubd_client_buffer_bytes", PROM_GAUGE,
		 "bytes held for local clients (reads, queues, logs, the transmit queue), against "
		 "limits.client_buffer_budget"},
		{"client_buffer_budget", "pubd_client_buffer_budget_bytes", PROM_GAUGE, "limits.client_buffer_budget"},
		{"sources", "pubd_sources", PROM_GAUGE, "remote (source, group) streams in the statistics"},
		{"max_sources", "pubd_sources_max", PROM_GAUGE, "limits.max_sources"},
	};
	static const struct mt_labmap info[] = {
		{"version", "version"}, {"fabric", "fabric"}, {"source_id", "source_id"}};
	static const struct mt_colmap one = {"pid", "pubd_info", PROM_GAUGE,
					     "pubd's version, fabric and source id (1)"};
	struct prom_label l[3];
	char num[3][24];
	int c;

	if (!t || t->nrows != 1)
		return;
	mt_families(o, t, m, sizeof(m) / sizeof(m[0]), NULL, 0, NULL);
	for (c = 0; c < 3; c++) {
		int k = mt_col(t, info[c].col);

		if (k < 0)
			return;
		mt_label(&l[c], info[c].label, mt_cell(t, 0, k), num[c]);
	}
	mt_one_gauge(o, one.metric, one.help, l, 3, 1);
}

/* The daemon's counters, each its own family: pubd_<name>_total. */
static void counter_metrics(struct prom_out *o, const struct mt_table *t)
{
	static const char *const msgs[] = {"published", "received", "delivered", "dropped"};
	int kc = mt_col(t, "counter"), vc = mt_col(t, "value");
	char name[300], help[400];
	const char *h;
	uint32_t row;

	if (kc < 0 || vc < 0)
		return;
	for (row = 0; row < t->nrows; row++) {
		const struct pub_table_cell *k = mt_cell(t, row, kc), *v = mt_cell(t, row, vc);
		struct prom_out n = {0};
		bool msg = false;

		if (k->type != PUB_COL_STR || v->type != PUB_COL_U64 || k->s.len > 200)
			continue;
		for (unsigned i = 0; i < 4; i++)
			msg |= mt_str_is(k, msgs[i]);
		prom_name_part(&n, k->s.ptr, k->s.len);
		if (n.err)
			continue;
		snprintf(name, sizeof(name), "pubd_%s%s_total", msg ? "messages_" : "", n.buf);
		h = pubd_counter_help_by_name(n.buf);
		snprintf(help, sizeof(help), "%s (pubctl status: %s)", h ? h : "daemon counter", n.buf);
		prom_free(&n);
		prom_family(o, name, PROM_COUNTER, help);
		prom_sample(o, name, NULL, 0, v->u);
	}
}

/* Every sample of the groups table's metrics names its group. */
static const struct mt_labmap group_label[] = {{"name", "group"}};

/* Messages in and out of a group, its subscribers, publishers and pacing. */
static void group_traffic_metrics(struct prom_out *o, const struct mt_table *t)
{
	static const struct mt_colmap m[] = {
		{"published", "pubd_group_messages_published_total", PROM_COUNTER,
		 "messages local clients published to the group"},
		{"received", "pubd_group_messages_received_total", PROM_COUNTER,
		 "messages of the group reassembled from remote sources"},
		{"delivered", "pubd_group_messages_delivered_total", PROM_COUNTER,
		 "messages of the group written to local subscribers"},
		{"dropped", "pubd_group_messages_dropped_total", PROM_COUNTER,
		 "messages of the group lost at stream level (remote sources, sending); by reason in "
		 "pubd_dropped_messages_total"},
		{"sub_dropped", "pubd_group_subscriber_drops_total", PROM_COUNTER,
		 "messages of the group dropped for local subscribers, clients that left included"},
		{"sub_denied", "pubd_group_subscribe_denied_total", PROM_COUNTER, "SUBSCRIBE requests the ACL refused"},
		{"subscribers", "pubd_group_subscribers", PROM_GAUGE, "local subscribers"},
		{"publishers", "pubd_group_publishers", PROM_GAUGE, "local clients that published to the group"},
		{"sources", "pubd_group_sources", PROM_GAUGE, "remote sources of the group in the statistics"},
		{"tx_queued", "pubd_group_tx_queued_messages", PROM_GAUGE, "messages of the group waiting to be sent"},
		{"rate", "pubd_group_rate_bytes_per_second", PROM_GAUGE,
		 "configured sending rate of the group (rate:), 0 when unpaced"},
		{"paced_waits", "pubd_group_paced_waits_total", PROM_COUNTER,
		 "times the group's sending waited for its rate's tokens"},
	};

	mt_families(o, t, m, sizeof(m) / sizeof(m[0]), group_label, 1, NULL);
}

/* Loss repair: the window a source keeps, the NAKs, repairs and GONEs. */
static void group_repair_metrics(struct prom_out *o, const struct mt_table *t)
{
	static const struct mt_colmap m[] = {
		{"repair", "pubd_group_repair", PROM_GAUGE,
		 "1 when the group keeps a repair window (repair: on, fabric able)"},
		{"repair_window_bytes", "pubd_group_repair_window_bytes", PROM_GAUGE,
		 "bytes of sent messages the group's repair window holds"},
		{"naks_received", "pubd_group_naks_received_total", PROM_COUNTER, "NAKs received for the group"},
		{"repairs_sent", "pubd_group_repairs_sent_total", PROM_COUNTER, "repair datagrams sent for the group"},
		{"repair_bytes", "pubd_group_repair_bytes_total", PROM_COUNTER, "bytes of repair datagrams sent"},
		{"gone_sent", "pubd_group_gone_sent_total", PROM_COUNTER,
		 "GONE answers sent: NAKed messages that had left the window"},
		{"naks_ignored_duplicate", "pubd_group_naks_ignored_duplicate_total", PROM_COUNTER,
		 "NAKed messages not repaired: repaired within the linger already"},
		{"naks_ignored_rate", "pubd_group_naks_ignored_rate_total", PROM_COUNTER,
		 "NAKed messages not repaired: repair.rate or the per-NAK cap reached"},
		{"naks_ignored_outside", "pubd_group_naks_ignored_outside_total", PROM_COUNTER,
		 "NAKed messages not repaired: not sent yet, another source's, or no window"},
		{"naks_ignored_token", "pubd_group_naks_ignored_token_total", PROM_COUNTER,
		 "NAKs ignored without the group's repair token (forged, or not from a receiver of the group)"},
		{"naks_ignored_peer", "pubd_group_naks_ignored_peer_total", PROM_COUNTER,
		 "NAKs or NAKed messages ignored over one asker's NAK rate or repair.peer_rate"},
		{"naks_ignored_unproven", "pubd_group_naks_ignored_unproven_total", PROM_COUNTER,
		 "NAKs without the cookie of the address they came from, answered by a COOKIE only"},
		{"cookies_sent", "pubd_group_cookies_sent_total", PROM_COUNTER,
		 "COOKIEs sent: an asker's address cookie, which its NAKs must echo"},
		{"naks_sent", "pubd_group_naks_sent_total", PROM_COUNTER,
		 "NAKs this daemon sent for the group's sources"},
		{"repaired", "pubd_group_repaired_total", PROM_COUNTER,
		 "messages of the group delivered after a NAK asked for them (also counted as received)"},
		{"unrecovered", "pubd_group_unrecovered_total", PROM_COUNTER,
		 "messages of the group lost although NAKed (also in pubd_dropped_messages_total)"},
		{"gone_ignored", "pubd_group_gone_ignored_total", PROM_COUNTER,
		 "GONE and COOKIE datagrams ignored without their source's repair token (forged)"},
	};

	mt_families(o, t, m, sizeof(m) / sizeof(m[0]), group_label, 1, NULL);
}

/* Flow control: the receivers a source waits for, their STATUS datagrams. */
static void group_flow_metrics(struct prom_out *o, const struct mt_table *t)
{
	static const struct mt_colmap m[] = {
		{"flow_control", "pubd_group_flow_control", PROM_GAUGE,
		 "1 when the group's sending waits for its slowest receiver (repair.flow_control: min)"},
		{"flow_receivers", "pubd_group_flow_receivers", PROM_GAUGE,
		 "receivers whose STATUS holds the group's sending back"},
		{"flow_waits", "pubd_group_flow_waits_total", PROM_COUNTER,
		 "times the group's sending waited for its receivers (flow control)"},
		{"flow_timeouts", "pubd_group_flow_timeouts_total", PROM_COUNTER,
		 "flow-controlled receivers forgotten after repair.receiver_timeout_ms of silence"},
		{"flow_stuck", "pubd_group_flow_stuck_total", PROM_COUNTER,
		 "flow-controlled receivers forgotten: their host held the sending back at one message for two "
		 "repair.receiver_timeout_ms (and is not waited for a while)"},
		{"statuses_received", "pubd_group_statuses_received_total", PROM_COUNTER,
		 "flow control STATUS datagrams taken by the group's source"},
		{"statuses_ignored", "pubd_group_statuses_ignored_total", PROM_COUNTER,
		 "STATUS datagrams ignored: without the repair token or their address's cookie, for another "
		 "source, reordered, from a host in its penalty, or flow control off"},
		{"statuses_sent", "pubd_group_statuses_sent_total", PROM_COUNTER,
		 "STATUS datagrams this daemon sent to the group's sources"},
	};

	mt_families(o, t, m, sizeof(m) / sizeof(m[0]), group_label, 1, NULL);
}

/* The group log, and whether the group is joined and receiving. */
static void group_log_metrics(struct prom_out *o, const struct mt_table *t)
{
	static const struct mt_colmap m[] = {
		{"group_log_readers", "pubd_group_log_readers", PROM_GAUGE,
		 "local subscribers reading the group's group log (one copy for all of them)"},
		{"group_log_waiting", "pubd_group_log_waiting", PROM_GAUGE,
		 "messages waiting for room in the group log (a reader is behind)"},
		{"group_log_ends", "pubd_group_log_ends_total", PROM_COUNTER,
		 "times the group log's readers were all moved off it to their own deliver logs"},
		{"group_log_returns", "pubd_group_log_returns_total", PROM_COUNTER,
		 "subscriptions given the group log back after an end"},
		{"group_log_abandoned", "pubd_group_log_abandoned_total", PROM_COUNTER,
		 "group logs retired because readers did not read to their end within limits.group_log_drain_ms"},
		{"joined", "pubd_group_joined", PROM_GAUGE, "1 when the fabric joined the group"},
		{"receiving", "pubd_group_receiving", PROM_GAUGE,
		 "1 while the group's traffic is taken from the fabric"},
	};

	mt_families(o, t, m, sizeof(m) / sizeof(m[0]), group_label, 1, NULL);
}

/* The groups table's metrics, kept in four tables of columns by what they
 * are about. mt_families writes each family whole, so the four in this
 * order write the text one table did. */
static void group_metrics(struct prom_out *o, const struct mt_table *t)
{
	group_traffic_metrics(o, t);
	group_repair_metrics(o, t);
	group_flow_metrics(o, t);
	group_log_metrics(o, t);
}

/* What query replies cut short (more than 50,000 rows or 4 MiB a table). */
static void cut_metrics(struct prom_out *o, const struct mt_table *t)
{
	static const struct mt_colmap m[] = {{"rows_not_shown", "pubd_metrics_rows_not_shown", PROM_GAUGE,
					      "rows of a table left out of this text for the size of the reply"}};
	static const struct mt_labmap lab[] = {{"table", "table"}};

	mt_families(o, t, m, 1, lab, 1, NULL);
}

int pubd_metrics_text(const uint8_t *frames, size_t len, const struct pubd_metrics_limits *lim, struct prom_out *o)
{
	struct mt_tables ts;
	const struct mt_table *t;
	int r = mt_decode(frames, len, &ts);

	if (r < 0)
		goto out;
	status_metrics(o, mt_find(&ts, "status"));
	if ((t = mt_find(&ts, "counters")))
		counter_metrics(o, t);
	mt_fabric_metrics(o, mt_find(&ts, "fabric"));
	group_metrics(o, mt_find(&ts, "groups"));
	r = mt_series_metrics(o, &ts, lim->max_sources, lim->max_subscribers);
	cut_metrics(o, mt_find(&ts, "more"));
	if (r == 0 && o->err)
		r = o->err;
out:
	mt_free(&ts);
	return r;
}
