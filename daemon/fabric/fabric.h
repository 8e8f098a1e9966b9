/* SPDX-License-Identifier: MIT */
/*
 * The seam between pubd and the wire. A fabric moves datagrams to and from
 * multicast groups; it knows nothing of clients, messages or reassembly.
 * Two implementations: verbs (rdmacm UD multicast) and udp (IP multicast).
 *
 * Groups are identified by a slot number the daemon chooses (stable for the
 * life of the group). The fabric registers its own fds on the daemon's loop.
 *
 * Send: the daemon offers a batch of datagrams (header + payload slice, so
 * the payload is gathered from the message buffer); the fabric accepts a
 * prefix of the batch. Fewer than offered means it is out of credits (send
 * queue or socket buffer full): the daemon keeps the rest and waits for
 * ev->writable, applying back-pressure to publishers meanwhile.
 *
 * Receive: the fabric calls ev->rx with batches. The buffers stay valid only
 * for the call; the fabric reposts them after it returns.
 */
#ifndef PUBD_FABRIC_H
#define PUBD_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"

struct pubd_loop;
struct pubd_config;
struct pub_table_builder;

/*
 * A peer's address as a fabric can send back to it (send_to): opaque to the
 * daemon, at most PUBD_FABRIC_PEER_MAX bytes. udp: the sender's socket
 * address (struct sockaddr_in or _in6); verbs: what an address handle
 * and a UD send need (struct pubd_ud_peer: the GRH's source GID, the
 * source QPN, LID and SL; 28 bytes).
 */
#define PUBD_FABRIC_PEER_MAX 32
/* The part of a peer that names its machine (peer_host) at most. */
#define PUBD_FABRIC_HOST_MAX 16

struct pubd_rx_dgram {
	const uint8_t *data;
	uint32_t len;
	int32_t slot;	   /* group slot, from the destination address; -1 when unknown */
	bool self;	   /* sent by this fabric's own endpoint and looped back, where the
			    * fabric can tell (verbs: the source QP); raw groups rely on it */
	uint32_t from_len; /* 0: the fabric cannot tell who sent it */
	const void *from;  /* the sender (see PUBD_FABRIC_PEER_MAX); valid during the call */
	/* Datagrams the kernel dropped on this fabric's way in before this one
	 * was queued, counted since the fabric started (udp: SO_RXQ_OVFL);
	 * always 0 where the fabric cannot tell (verbs). A jump in a stream
	 * that these drops account for is loss, not forgery (reasm_push.c). */
	uint64_t kernel_drops;
};

struct pubd_msgbuf;

struct pubd_tx_dgram {
	const void *hdr; /* NULL/0 on raw groups */
	uint32_t hdr_len;
	const void *payload;
	uint32_t payload_len;
	/* The payload lies in this lent buffer (a client's publish log), or
	 * NULL. A fabric that sends it in place, without copying, pins the
	 * buffer once the send is posted and unpins it when the device is done
	 * with it (msgbuf.h); others ignore it. */
	struct pubd_msgbuf *lent;
};

struct pubd_fabric_events {
	void (*rx)(void *ctx, const struct pubd_rx_dgram *d, unsigned n);
	/* Credits are back after a short send. */
	void (*writable)(void *ctx);
	/* A group became usable for sending (joined) or stopped being (err < 0).
	 * Never for a slot after its leave, until it is joined again: a group
	 * a reload puts in the slot gets no event of the one before. */
	void (*group_state)(void *ctx, int slot, bool up, int err);
	/* Optional (NULL: ignored). The largest datagram changed (a port came back with another active
	 * MTU, and the fabric was rebuilt with it). Messages are cut for the
	 * new MTU from then on; datagrams already cut for a larger one are not
	 * offered again. */
	void (*mtu_changed)(void *ctx, uint32_t mtu);
	/* Optional. A listen(slot, on) that answered 1 took effect: the group's
	 * datagrams come in now (verbs: the full-member join completed). */
	void (*listening)(void *ctx, int slot);
};

struct pubd_fabric;

struct pubd_fabric_ops {
	const char *name; /* "verbs", "udp" */
	/* Open on the address in cfg (fabric.address etc.). -errno on failure,
	 * with a log line that says which address and what was found. */
	int (*open)(struct pubd_fabric **out, const struct pubd_config *cfg, struct pubd_loop *loop,
		    const struct pubd_fabric_events *ev, void *ctx);
	void (*close)(struct pubd_fabric *f); /* leaves all groups */
	/* Start joining; the group is usable for sending after group_state(up). */
	int (*join)(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen,
		    enum pubd_join_mode mode);
	void (*leave)(struct pubd_fabric *f, int slot);
	/* Start or stop taking a RECV slot's datagrams, keeping the join (verbs:
	 * attach or detach the QP; udp: add or drop the socket's membership).
	 * Without it, a host that only publishes to a group still receives
	 * every datagram it sends back from the fabric, and discards it.
	 * Takes effect at once where the group is joined, else when it is.
	 * 0, 1 when it takes effect later (verbs: a send-only join becomes a
	 * full one; ev.listening says when), or -errno when it could not (the
	 * slot keeps its old state). */
	int (*listen)(struct pubd_fabric *f, int slot, bool on);
	/* Returns how many of the n datagrams were accepted (0..n), or -errno on
	 * a hard error (the group is not joined, a datagram exceeds the MTU). */
	int (*send)(struct pubd_fabric *f, int slot, const struct pubd_tx_dgram *d, unsigned n);
	/* Send datagrams to one peer (unicast: loss repair's NAKs and repairs),
	 * peer as a received datagram's from. Like send: how many were accepted,
	 * or -errno; -EOPNOTSUPP (or NULL) where the fabric cannot. A call
	 * with no peer and n 0 is a probe: 0 where unicast works. */
	int (*send_to)(struct pubd_fabric *f, const void *peer, uint32_t peer_len, const struct pubd_tx_dgram *d,
		       unsigned n);
	/* The part of a peer (as send_to takes it) that names its machine, not
	 * one socket or QP of it (udp: the IP address; verbs: the GID, or the
	 * LID without one), into out (PUBD_FABRIC_HOST_MAX bytes): its length,
	 * 0 when the peer is not one. What a host's many ports or QPs share:
	 * flow control's penalties are by host (core/flow_ctl.h). */
	uint32_t (*peer_host)(const void *peer, uint32_t peer_len, uint8_t *out);
	/* Largest datagram (header + payload) this fabric carries. */
	uint32_t (*mtu)(const struct pubd_fabric *f);
	/* Key/value rows for `pubctl status` (table "fabric", columns key:s, value:s). */
	void (*status)(const struct pubd_fabric *f, struct pub_table_builder *tb);
	/* Drain pending receive work without waiting (busy-poll hook); returns work done. */
	int (*poll)(struct pubd_fabric *f);
	/* Called once per loop iteration, before the daemon may sleep. While
	 * datagrams keep coming (within fabric.rx_linger_us of each other) the
	 * fabric takes them by polling here rather than by waking on an event
	 * for each, and returns non-zero to keep the loop from sleeping; busy
	 * says the loop has other work (so this poll is not an idle one).
	 * Returns 0 once the fabric will wake the loop itself (re-armed).
	 * NULL where waking costs little. */
	int (*linger)(struct pubd_fabric *f, bool busy);
	/* Optional: the slot's join type for `pubctl groups` (verbs:
	 * "sendonly", "full", "joining", "-"). NULL: the daemon tells it from
	 * whether the group listens. */
	const char *(*join_state)(const struct pubd_fabric *f, int slot);
};

extern const struct pubd_fabric_ops pubd_fabric_udp_ops;
extern const struct pubd_fabric_ops pubd_fabric_verbs_ops;

/*
 * Does this address sit on an RDMA device? (for fabric.type: auto)
 * Returns 1 yes, 0 no, -errno when it cannot tell. Fills dev (may be NULL)
 * with the device name.
 */
int pubd_fabric_verbs_probe(const char *address, char *dev, size_t devlen);

#endif
