/* SPDX-License-Identifier: MIT */
/*
 * A publishing daemon's retransmit window for one repair group: the
 * messages it sent, by sequence number, kept (a msgbuf reference each) for
 * at least max_age_ns, within window_bytes and a daemon-wide budget shared
 * by every repair group. Pure: no fd, no clock (now_ns is passed in).
 *
 * Sequence numbers of one (source, group) are consecutive, so the window is
 * a ring indexed by seq - first_seq. A message that could not be kept (the
 * budget was used up by other groups) leaves a hole: asked for, it is gone.
 *
 * Bytes charged for a message: its length plus a fixed overhead (the entry
 * and the buffer's header), so a flood of tiny messages is bounded too.
 * When a new message does not fit the window or the budget, the group's
 * oldest messages go first, even younger than max_age_ns (the byte limits
 * are hard; the age is how long to keep them when bytes allow). Messages
 * older than max_age_ns go at pubd_repair_window_expire().
 *
 * Answering a NAK (pubd_repair_window_nak): for each sequence number in the
 * range, one of
 *  - GONE: below the window or a hole (answered with a GONE datagram);
 *  - AHEAD: not sent yet (ignored: outside the window);
 *  - DUPLICATE: repaired within linger_ns already, multicast or to this
 *    same asker (ignored);
 *  - REPAIR_UNICAST / REPAIR_MULTICAST: resend. Multicast when another
 *    receiver asked for the same message within mcast_ns: several
 *    receivers miss it, so one multicast serves them all.
 */
#ifndef PUBD_REPAIR_WINDOW_H
#define PUBD_REPAIR_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "msgbuf.h"

/* Charged per kept message beyond its bytes. */
#define PUBD_REPAIR_ENTRY_OVERHEAD 96u

struct pubd_repair_budget {
	uint64_t limit; /* limits.repair_budget */
	uint64_t used;
};

struct pubd_repair_window_cfg {
	uint64_t window_bytes;
	uint64_t max_age_ns;
	uint64_t linger_ns; /* a repaired message is not repaired again this soon */
	uint64_t mcast_ns;  /* two askers within this: multicast */
};

struct pubd_repair_entry {
	struct pubd_msgbuf *msg; /* NULL: a hole (not kept) */
	uint64_t sent_ns;
	uint64_t last_nak_ns;
	uint64_t last_asker;
	uint64_t repaired_ns; /* 0: never */
	uint32_t unit;	      /* fragment payload bytes it was cut with */
	bool repaired_mcast;
};

struct pubd_repair_window {
	struct pubd_repair_window_cfg cfg;
	struct pubd_repair_budget *budget;
	struct pubd_repair_entry *ring;
	uint32_t cap; /* a power of two */
	uint32_t head;
	uint32_t n;
	uint64_t first_seq; /* seq of ring[head] */
	uint64_t bytes;
	bool started; /* first_seq set by the first message kept */
	/* counters */
	uint64_t kept, not_kept, evicted_age, evicted_bytes;
};

enum pubd_repair_verdict {
	PUBD_REPAIR_GONE = 0,
	PUBD_REPAIR_AHEAD,
	PUBD_REPAIR_DUPLICATE,
	PUBD_REPAIR_UNICAST,
	PUBD_REPAIR_MULTICAST,
};

void pubd_repair_window_init(struct pubd_repair_window *w, const struct pubd_repair_window_cfg *cfg,
			     struct pubd_repair_budget *budget);
/* Drop every message kept (their references, and their bytes from the budget). */
void pubd_repair_window_close(struct pubd_repair_window *w);
/* New limits (reload); applied at the next keep or expire. */
void pubd_repair_window_set(struct pubd_repair_window *w, const struct pubd_repair_window_cfg *cfg);

/*
 * Keep message seq (sent at now_ns, cut with unit): takes a reference of
 * its own. seq must not go backwards (ignored if it does); skipped ones are
 * holes. Returns true if kept.
 */
bool pubd_repair_window_keep(struct pubd_repair_window *w, uint64_t now_ns, uint64_t seq, struct pubd_msgbuf *m,
			     uint32_t unit);
/* Drop messages older than max_age_ns. */
void pubd_repair_window_expire(struct pubd_repair_window *w, uint64_t now_ns);
/* When the oldest kept message ages out; UINT64_MAX when none. */
uint64_t pubd_repair_window_next_deadline(const struct pubd_repair_window *w);

/* The entry of seq, or NULL (gone, a hole, or not sent yet). */
struct pubd_repair_entry *pubd_repair_window_find(struct pubd_repair_window *w, uint64_t seq);
/* One past the last sequence number kept or skipped (0 before any). */
uint64_t pubd_repair_window_next_seq(const struct pubd_repair_window *w);

/*
 * A NAK for seq from asker at now_ns: what to do (see above). For
 * UNICAST and MULTICAST the entry is marked repaired at now_ns.
 */
enum pubd_repair_verdict pubd_repair_window_nak(struct pubd_repair_window *w, uint64_t now_ns, uint64_t seq,
						uint64_t asker);

#endif
