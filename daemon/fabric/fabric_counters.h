/* SPDX-License-Identifier: MIT */
/*
 * The counters both fabrics keep, named once: the "fabric" table of
 * `pubctl status` shows the same thing under the same name whichever
 * fabric runs. Each fabric adds rows for what it alone counts (verbs:
 * completions, SRQ, joins and device events; udp: the kernel's receive
 * drops). Names are part of the status interface: tests read them.
 *
 * Also the one helper both fabrics format their status rows with.
 */
#ifndef PUBD_FABRIC_COUNTERS_H
#define PUBD_FABRIC_COUNTERS_H

#include <stdint.h>

struct pub_table_builder;

/* X(id, name, help) */
#define PUBD_FABRIC_COUNTERS(X)                                                                                       \
	X(RX_DATAGRAMS, "rx_datagrams", "datagrams received and handed to the daemon")                                \
	X(RX_BYTES, "rx_bytes", "bytes of those datagrams")                                                           \
	X(RX_UNKNOWN_GROUP, "rx_unknown_group", "datagrams not addressed to a group taken here (handed up, slot -1)") \
	X(RX_TRUNCATED, "rx_truncated",                                                                               \
	  "datagrams that did not arrive whole, dropped (udp: larger than the MTU; verbs: shorter than a GRH)")       \
	X(TX_DATAGRAMS, "tx_datagrams", "datagrams sent")                                                             \
	X(TX_BYTES, "tx_bytes", "bytes of those datagrams")                                                           \
	X(TX_NO_CREDITS, "tx_out_of_credits", "sends cut short: send queue or socket buffer full")                    \
	X(TX_POST_ERRORS, "tx_post_errors", "sends the device or the kernel refused (ibv_post_send, sendmmsg)")

enum pubd_fabric_counter {
#define PUBD_FABRIC_X_ENUM(id, name, help) PUBD_FC_##id,
	PUBD_FABRIC_COUNTERS(PUBD_FABRIC_X_ENUM)
#undef PUBD_FABRIC_X_ENUM
		PUBD_FC__COUNT /* a fabric numbers its own counters from here */
};

extern const char *const pubd_fabric_counter_names[PUBD_FC__COUNT];

/* One key/value row of the "fabric" table, the value formatted. */
void pubd_fabric_row(struct pub_table_builder *tb, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A row per counter: cnt[i] under names[i], for i in [first, n). */
void pubd_fabric_counter_rows(struct pub_table_builder *tb, const uint64_t *cnt, const char *const *names,
			      unsigned first, unsigned n);

#endif
