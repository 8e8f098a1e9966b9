/* SPDX-License-Identifier: MIT */
/*
 * pubctl watch, the pure part: one sample of pubd's counters taken from the
 * query tables (status, groups, drops), and rates from two samples.
 * No I/O here; tests/unit/test_watch.c feeds it tables built by hand.
 */
#ifndef PUBCTL_WATCH_MODEL_H
#define PUBCTL_WATCH_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include <pub.h>

#define WATCH_NAME_MAX	 64
#define WATCH_REASON_MAX 32 /* drop reason names (pub_reasons.h) are shorter */
#define WATCH_REASONS	 24 /* distinct reasons kept per group and daemon-wide */
#define WATCH_ERRORS	 64 /* fabric/port error counters kept */

/* A named counter: a drop reason or a fabric/port error counter. */
struct watch_count {
	char name[WATCH_NAME_MAX];
	uint64_t v;
};

struct watch_counts {
	struct watch_count v[WATCH_REASONS];
	unsigned n;
};

struct watch_group {
	char name[WATCH_NAME_MAX]; /* sanitised: printable ASCII only */
	uint64_t subscribers;
	uint64_t published, published_bytes;
	uint64_t delivered, delivered_bytes;
	uint64_t received, received_bytes;
	uint64_t dropped;	     /* stream-level plus subscriber-level */
	struct watch_counts reasons; /* drops of this group by reason */
	/* loss repair (0 on groups without it): messages got back by NAK,
	 * lost although NAKed, NAKs sent and received */
	uint64_t repaired, unrecovered, naks;
};

struct watch_sample {
	char version[32];
	char fabric[16];
	char port_state[24]; /* "" when the fabric has none (udp) */
	uint64_t pid, uptime_s, clients, ngroups_cfg, groups_joined;
	uint64_t dropped;
	/* The fabric's datagram/packet and byte counters. */
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	struct watch_count errors[WATCH_ERRORS];
	unsigned nerrors;
	struct watch_counts reasons; /* daemon-wide drops by reason */
	struct watch_group *groups;
	unsigned ngroups, cap;
	uint64_t groups_not_sent; /* rows pubd left out of its groups table (its cap) */
	bool have_status, have_groups;
};

void watch_sample_init(struct watch_sample *s);
/* Forget the values (keep the memory) before the next sample is taken. */
void watch_sample_clear(struct watch_sample *s);
void watch_sample_close(struct watch_sample *s);
/* A pub_table_cb: collect what watch shows from a status, groups or drops reply. */
int watch_sample_table(const struct pub_table *t, void *arg);
/* Does s name a counter that counts errors (the fabric's, the port's)? */
bool watch_is_error_counter(const char *key);
/* Copy at most n-1 bytes of s, each byte outside printable ASCII as '?'. */
void watch_sanitise(char *dst, size_t n, const char *s);

struct watch_group_rates {
	const struct watch_group *g; /* in the current sample */
	double pub_msgs, pub_bytes, dlv_msgs, dlv_bytes, rcv_msgs, rcv_bytes, drops;
	double repaired, unrecovered, naks; /* loss repair, per second */
	const char *top_reason;		    /* the reason dropping most since the last sample, or NULL */
};

struct watch_rates {
	bool valid;	/* false for a first sample (or after pubd restarted): no rates yet */
	double elapsed; /* seconds between the two samples, as measured */
	double tx_pps, tx_bps, rx_pps, rx_bps, drops;
	/* Daemon-wide reasons dropping since the last sample, fastest first. */
	struct {
		const char *name;
		double rate;
	} top[3];
	unsigned ntop;
	struct watch_group_rates *groups; /* one per cur->groups, in its order */
	unsigned ngroups, cap;
};

void watch_rates_init(struct watch_rates *r);
void watch_rates_close(struct watch_rates *r);
/* The counter's rate per second, 0 when it went backwards or no time passed. */
double watch_rate(uint64_t prev, uint64_t cur, double elapsed);
/*
 * Rates from prev to cur over elapsed seconds (measured, not the nominal
 * interval). prev NULL, a new pid or a shorter uptime: no rates (valid false).
 * Returns -1 when out of memory.
 */
int watch_rates_compute(struct watch_rates *r, const struct watch_sample *prev, const struct watch_sample *cur,
			double elapsed);

#endif
