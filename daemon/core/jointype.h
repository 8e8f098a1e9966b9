/* SPDX-License-Identifier: MIT */
/*
 * The join type of a multicast group on a fabric whose joins have a type
 * (verbs: send-only or full member). Pure: state in, a decision out.
 *
 * A group nobody on this host listens to is joined send-only: on RoCE no
 * IGMP/MLD report, no QP attach, nothing of the group's traffic comes back
 * to be thrown away. The first local listener makes it a full member (the
 * subscriber is answered once that join completes). When the last listener
 * leaves it stays a full member for a hold-off, so a subscriber that comes
 * and goes does not make joins flap, then goes back to send-only. Where the
 * provider refused a send-only join, every join is a full one.
 */
#ifndef PUBD_JOINTYPE_H
#define PUBD_JOINTYPE_H

#include <stdbool.h>
#include <stdint.h>

enum pubd_join_kind {
	PUBD_JOIN_KIND_NONE,	 /* not joined */
	PUBD_JOIN_KIND_SENDONLY, /* send-only full member */
	PUBD_JOIN_KIND_FULL,	 /* full member: receives */
};

enum pubd_jt_action {
	PUBD_JT_KEEP,
	PUBD_JT_JOIN_FULL,     /* (re)join as a full member */
	PUBD_JT_JOIN_SENDONLY, /* (re)join send-only */
};

struct pubd_jt_in {
	enum pubd_join_kind kind; /* the join in place or under way */
	bool pending;		  /* its completion not seen yet */
	bool listening;		  /* some local subscriber wants the group's datagrams */
	bool sendonly_ok;	  /* false once the provider refused a send-only join */
	uint64_t idle_since_ns;	  /* when the last listener left (ignored while listening) */
	uint64_t hold_ns;	  /* full member this long after the last listener left */
	uint64_t now_ns;
};

/* What to do now. *wake_ns: when to ask again (a hold-off running out), or 0. */
enum pubd_jt_action pubd_jt_next(const struct pubd_jt_in *in, uint64_t *wake_ns);

/* Whether a listener is served: a full join, completed. */
bool pubd_jt_ready(enum pubd_join_kind kind, bool pending);

/* For pubctl groups: "joining", "sendonly", "full" or "-" (not joined). */
const char *pubd_jt_label(enum pubd_join_kind kind, bool pending);

#endif
