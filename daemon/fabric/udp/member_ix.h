/* SPDX-License-Identifier: MIT */
/*
 * The udp fabric's memberships by group address, for the receive path
 * (which slot a datagram's destination address belongs to) and for joins
 * (does a membership of this address exist). Open addressing with linear
 * probing, at most half full, backward-shift deletion: a lookup costs a
 * probe or two however many groups are joined. A linear walk cost 4 to 5
 * instructions a joined address for every datagram received.
 */
#ifndef PUBD_UDP_MEMBER_IX_H
#define PUBD_UDP_MEMBER_IX_H

#include <stdint.h>
#include <sys/socket.h>

struct membership;

struct udp_member_ix {
	struct membership **v; /* NULL: an empty place */
	unsigned mask;	       /* places - 1 (a power of two), 0 before the first add */
	unsigned n;
};

/* The membership of group's address (family and address; the port is not
 * compared), or NULL. */
struct membership *udp_member_ix_find(const struct udp_member_ix *ix, const struct sockaddr_storage *group);
/* Add m (no membership of its address may be in ix yet). 0 or -ENOMEM. */
int udp_member_ix_add(struct udp_member_ix *ix, struct membership *m);
/* Take m out (nothing happens if it is not in ix). */
void udp_member_ix_del(struct udp_member_ix *ix, const struct membership *m);
void udp_member_ix_free(struct udp_member_ix *ix);

#endif
