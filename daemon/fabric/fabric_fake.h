/* SPDX-License-Identifier: MIT */
/*
 * A fabric for tests: no device, no socket, scripted by the test.
 *
 * It sits behind struct pubd_fabric_ops like verbs and udp, so the daemon's
 * own transmit, receive and IPC code runs unchanged on top of it. What a
 * real fabric learns from the wire the test decides here: whether a join
 * succeeds, when a group fails and comes back, the MTU, how many send
 * credits there are, and what is received. Everything the daemon sends is
 * recorded; a test moves it into the same or another daemon's receive path
 * with loss, duplication and reordering applied on the way.
 *
 * Events the daemon would get from a real fabric's fds (group_state,
 * writable, mtu_changed) are queued and delivered from the daemon's loop
 * through an eventfd, never from inside a call the daemon made. Received
 * datagrams are handed over synchronously by the test's call (between loop
 * turns), as a fabric's receive handler would.
 */
#ifndef PUBD_FABRIC_FAKE_H
#define PUBD_FABRIC_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric.h"

extern const struct pubd_fabric_ops pubd_fabric_fake_ops;

/* The fake behind a daemon's fabric handle (d->fabric) when it runs on
 * pubd_fabric_fake_ops. */
struct pubd_fake;
struct pubd_fake *pubd_fake_of(struct pubd_fabric *f);

/* One datagram the daemon sent: header and payload gathered. */
struct pubd_fake_sent {
	int slot;    /* -1 for unicast */
	uint64_t to; /* unicast (send_to): the peer id it was sent to; 0 for multicast */
	uint32_t len;
	uint8_t *data;
};

/* How joins started from now on end: 0 group up, else down with this -errno. */
void pubd_fake_set_join_result(struct pubd_fake *fk, int err);
/* Make join() itself fail with this -errno (0: succeed). */
void pubd_fake_set_join_call_error(struct pubd_fake *fk, int err);
/* A joined group fails (multicast error: group_state down with err) or
 * comes back (group_state up). While down, send returns -ENOTCONN. */
void pubd_fake_group_down(struct pubd_fake *fk, int slot, int err);
void pubd_fake_group_up(struct pubd_fake *fk, int slot);
bool pubd_fake_group_is_up(const struct pubd_fake *fk, int slot);
bool pubd_fake_group_is_listening(const struct pubd_fake *fk, int slot);
/* The port came back with another MTU: mtu() answers it at once and the
 * daemon gets mtu_changed from its loop. */
void pubd_fake_set_mtu(struct pubd_fake *fk, uint32_t mtu);
/* Send credits: each datagram accepted takes one; send accepts a prefix of
 * what is offered. -1: unlimited (the default). Adding credits to a fake
 * that ran out queues a writable event. */
void pubd_fake_set_credits(struct pubd_fake *fk, long credits);
void pubd_fake_add_credits(struct pubd_fake *fk, long n);
/* Times send accepted fewer datagrams than offered. */
uint64_t pubd_fake_short_sends(const struct pubd_fake *fk);
/* Sends of lent payloads (pubd_tx_dgram.lent) pin them, as a fabric
 * sending in place does, until pubd_fake_complete unpins the n oldest
 * (returns how many), reading their bytes as the device would; closing
 * the fake completes the rest. */
void pubd_fake_set_pin_lent(struct pubd_fake *fk, bool on);
size_t pubd_fake_pinned(const struct pubd_fake *fk);
size_t pubd_fake_complete(struct pubd_fake *fk, size_t n);
/* Pinned buffers that were no longer lent when their send completed (a
 * lender copied one away while the device read it): a bug, always 0. */
uint64_t pubd_fake_pin_broken(const struct pubd_fake *fk);

/* What the daemon sent, oldest first, and not yet taken by a transfer. */
size_t pubd_fake_sent_count(const struct pubd_fake *fk);
const struct pubd_fake_sent *pubd_fake_sent_at(const struct pubd_fake *fk, size_t i);
void pubd_fake_sent_clear(struct pubd_fake *fk);
/* Datagrams sent in total (not reset by clear). */
uint64_t pubd_fake_sent_total(const struct pubd_fake *fk);
/* Instead of recording (a copy and an allocation per datagram), hand each
 * datagram sent to fn as the daemon gathered it; NULL records again. For
 * fuzzers, which only count what goes out. */
typedef void (*pubd_fake_tap_fn)(void *ctx, int slot, const struct pubd_tx_dgram *d);
void pubd_fake_set_tap(struct pubd_fake *fk, pubd_fake_tap_fn fn, void *ctx);

/* Impairments applied by pubd_fake_transfer, per datagram; deterministic
 * for a given seed. Rates are in parts per million. */
struct pubd_fake_impair {
	uint32_t loss_ppm;
	uint32_t dup_ppm;
	uint32_t reorder_ppm; /* swapped with a later datagram within window */
	uint32_t reorder_window;
	uint64_t seed;
};

struct pubd_fake_transfer_stats {
	uint64_t moved, lost, duplicated, reordered, not_joined;
};

/*
 * Move everything from's daemon sent into to's receive path (to may be
 * from: its own loopback), applying imp (NULL: none). A datagram arrives
 * on to's slot joined at the same address, if that slot is listening;
 * otherwise the network drops it (not_joined). Clears from's record.
 */
void pubd_fake_transfer(struct pubd_fake *from, struct pubd_fake *to, const struct pubd_fake_impair *imp,
			struct pubd_fake_transfer_stats *st);
/* This fake's unicast address: received datagrams carry it as from (8
 * bytes), and send_to takes it; unique in the process. pubd_fake_transfer
 * hands a unicast datagram only to the fake it names. */
uint64_t pubd_fake_peer_id(const struct pubd_fake *fk);
/* Like pubd_fake_inject, as sent by the fake whose peer id is from. */
void pubd_fake_inject_from(struct pubd_fake *fk, int slot, const void *data, uint32_t len, uint64_t from);
/* Hand the daemon one received datagram on slot (-1: arrived on no group
 * address, e.g. unicast to the port). */
void pubd_fake_inject(struct pubd_fake *fk, int slot, const void *data, uint32_t len, bool self);

#endif
