/* SPDX-License-Identifier: MIT */
/*
 * The udp fabric: IP multicast over one UDP socket, the same wire format as
 * verbs. For hosts without an RDMA device and for multi-host tests in network
 * namespaces.
 *
 * One socket carries every group:
 *  - bound to the wildcard address and fabric.udp_port with SO_REUSEADDR, so
 *    several daemons on one host each get a copy of every datagram;
 *  - IP_MULTICAST_ALL / IPV6_MULTICAST_ALL off: a socket bound to the wildcard
 *    would otherwise receive every group any socket on the host joined;
 *  - multicast loop on: another daemon on this host must hear us. Our own
 *    looped-back datagrams are dropped by the daemon (source id), not here;
 *  - the destination address of each datagram (IP_PKTINFO / IPV6_PKTINFO)
 *    says which group it was sent to, i.e. which slot.
 *
 * Family: an IPv4 fabric.address makes an IPv4 socket, an IPv6 one an IPv6
 * socket; an interface name makes a dual-stack IPv6 socket that carries both
 * (IPv4 groups as v4-mapped addresses), or IPv4 only when the kernel has no
 * IPv6. The loopback interface (the default when fabric.address is unset) is
 * IPv4 only: Linux does not loop IPv6 multicast back on lo. The MTU is the interface MTU less the IP and UDP
 * headers of the family with the larger header the socket carries, so every
 * datagram fits in one frame whichever group it goes to.
 *
 * Joins are per address: two slots on one address share one membership,
 * reference-counted. IGMP/MLD have no join confirmation, so a join is "up"
 * as soon as setsockopt succeeds; group_state is reported from the loop (a
 * zero-delay timer), never from inside join(), so the daemon sees the same
 * asynchronous shape as on verbs.
 *
 * This header is private to the files of daemon/fabric/udp/:
 *   open.c        open (interface, MTU, the two sockets), close, the ops table
 *   socket.c      the receive and send sockets and their options
 *   membership.c  slots, and the group memberships they share
 *   member_ix.c   the memberships by address (member_ix.h)
 *   rx.c          receiving: recvmmsg batches, destination and source
 *   tx.c          sending: sendmmsg batches, waiting for room
 *   status.c      the "fabric" status table
 *   addr.c        address helpers shared by the above
 */
#ifndef PUBD_UDP_INTERNAL_H
#define PUBD_UDP_INTERNAL_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "config.h"
#include "fabric.h"
#include "fabric_counters.h"
#include "member_ix.h"

#ifndef IPV6_MULTICAST_ALL
#define IPV6_MULTICAST_ALL 29 /* linux/in6.h, since Linux 4.20 */
#endif

#define UDP_MAX_PAYLOAD 65507u /* 65535 - 20 (IPv4) - 8 (UDP) */
#define UDP4_OVERHEAD	28u    /* IPv4 header 20 + UDP 8 */
#define UDP6_OVERHEAD	48u    /* IPv6 header 40 + UDP 8 */
#define RX_BATCH	32
/* Batches per wakeup: enough to drain a burst, bounded so the loop still
 * serves client sockets and timers while a flood arrives. */
#define RX_BATCHES_PER_WAKEUP 16
#define TX_BATCH	      64
/* 32 MiB: a 16 MiB message (plus headers) in flight from one publisher
 * fits in the receive queue, and the kernel doubles it for bookkeeping. */
#define SOCK_BUF_BYTES (32 << 20)
#define DEFAULT_HOPS   1
/* The smallest IB MTU: a wire header (48 bytes) plus a useful payload. */
#define PUBD_FABRIC_MIN_MTU 256u

enum fam {
	FAM_V4 = 1,
	FAM_V6 = 2,
	FAM_BOTH = 3,
};

struct membership {
	struct sockaddr_storage group; /* port 0, as given (AF_INET or AF_INET6) */
	unsigned refs;
	int first_slot; /* lowest receiving slot on this address: rx maps to it */
	unsigned at;	/* its place in pubd_fabric.members */
};

struct slot {
	bool used;
	bool recv;	 /* joined with PUBD_JOIN_RECV: may listen */
	bool pending_up; /* group_state(up) not reported yet */
	int family;	 /* of the group address */
	struct sockaddr_storage dest;
	socklen_t dest_len;	       /* in the socket's family (v4-mapped on a dual socket) */
	struct membership *m;	       /* held while listening: the group's datagrams come in */
	struct sockaddr_storage group; /* port 0: what the membership names */
};

/* The host's addresses pubd knows its datagrams by, at most (a host past
 * it keeps the first: the interface's, then others in the kernel's order). */
#define SELF_ADDRS_MAX 65536

struct pubd_fabric {
	int fd;		 /* receives: bound to the group port every daemon shares */
	int sfd;	 /* sends: a port of its own, which tells our datagrams apart */
	uint16_t sport;	 /* sfd's port */
	int sock_family; /* AF_INET or AF_INET6 */
	enum fam fams;	 /* which group families the socket carries */
	struct pubd_loop *loop;
	struct pubd_loop_watch *watch;
	struct pubd_loop_watch *swatch; /* sfd: EPOLLOUT while a send waits for room */
	struct pubd_loop_timer *up_timer;
	bool want_out;
	bool loopback; /* the interface is lo */
	/* UDP segmentation offload (UDP_SEGMENT): runs of equal datagrams go
	 * down the stack as one; off after the kernel refused it once. */
	bool gso_off;
	uint64_t gso_sends, gso_datagrams;
	const struct pubd_fabric_events *ev;
	void *ctx;

	char ifname[IF_NAMESIZE];
	unsigned ifindex;
	uint32_t if_mtu;
	char *address;		 /* fabric.address as configured, NULL when unset */
	struct in_addr if_addr4; /* the configured IPv4 address, or 0 */
	/* The host's addresses, the interface's first (IPv4 as v4-mapped): a
	 * datagram from one of them and from sport is one we sent. Sorted
	 * too, for from_self's lookup. */
	struct in6_addr *self_addrs, *self_sorted;
	unsigned nself_addrs;
	bool self_filter;	    /* our own datagrams come cut to nothing (selffilter.c) */
	unsigned self_filter_addrs; /* from the first this many of self_addrs */
	int nlfd;		    /* NETLINK_ROUTE: the host's addresses changed (selfaddr.c) */
	struct pubd_loop_watch *nlwatch;
	uint64_t self_addr_changes; /* times the list changed after open */
	uint16_t port;
	uint32_t mtu;	      /* what a datagram may take now (link.c) */
	uint32_t mtu_max;     /* the MTU chosen at open: the receive ring's, and fabric.mtu's bound */
	uint64_t mtu_changes; /* times the interface's MTU changed it after open */
	int rcvbuf, sndbuf;   /* as the kernel reports them */
	bool rcvbuf_forced, sndbuf_forced;

	struct slot *slots;
	unsigned nslots;
	struct membership **members;
	unsigned nmembers, members_cap;
	struct udp_member_ix members_ix;   /* the same by address */
	struct membership *rx_last_member; /* the last a datagram was found in (rx.c), or NULL */

	/* Receive ring: RX_BATCH buffers of mtu + 1 bytes (the extra byte
	 * detects datagrams larger than our MTU: MSG_TRUNC). */
	uint8_t *rxbuf;
	size_t rxbuf_size;
	struct mmsghdr rx_msgs[RX_BATCH];
	unsigned rx_dirty; /* headers [0, rx_dirty) were written by the kernel: reset them */
	struct iovec rx_iov[RX_BATCH];
	struct sockaddr_storage rx_src[RX_BATCH];
	union {
		struct cmsghdr align;
		uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(struct in_pktinfo)) +
			    CMSG_SPACE(sizeof(uint32_t))];
	} rx_cmsg[RX_BATCH];
	struct pubd_rx_dgram rx_out[RX_BATCH];

	uint64_t cnt[PUBD_FC__COUNT];	/* the counters both fabrics keep (fabric_counters.h) */
	uint32_t rx_kernel_drops;	/* SO_RXQ_OVFL: the socket's cumulative drop count */
	uint64_t rx_kernel_drops_total; /* the same, past the 32 bits' wrap (pubd_rx_dgram.kernel_drops) */
};

/* addr.c */
const char *udp_fam_name(enum fam f);
const char *udp_addr_str(const struct sockaddr *sa, char *buf, size_t len);
bool udp_same_group(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
void udp_map_v4(struct in6_addr *out, const struct in_addr *a);

/* socket.c */
int udp_setup_socket(struct pubd_fabric *f, int literal_family);
int udp_setup_send_socket(struct pubd_fabric *f);

/* membership.c */
struct slot *udp_get_slot(struct pubd_fabric *f, int slot);
int udp_mcast_op(struct pubd_fabric *f, const struct sockaddr_storage *group, bool join);
int udp_join(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen, enum pubd_join_mode mode);
int udp_listen(struct pubd_fabric *f, int slot, bool on);
void udp_leave(struct pubd_fabric *f, int slot);
void udp_on_up_timer(void *ctx, uint64_t now);

/* rx.c */
void udp_on_socket(void *ctx, uint32_t events);
int udp_poll(struct pubd_fabric *f);

/* tx.c */
void udp_on_send_socket(void *ctx, uint32_t events);
int udp_send(struct pubd_fabric *f, int slot, const struct pubd_tx_dgram *d, unsigned n);
int udp_send_to(struct pubd_fabric *f, const void *peer, uint32_t peer_len, const struct pubd_tx_dgram *d, unsigned n);
uint32_t udp_peer_host(const void *peer, uint32_t peer_len, uint8_t *out);
/* Read what arrived on the send socket: unicast to us (loss repair). */
void udp_drain_send_socket(struct pubd_fabric *f);

/* link.c: the interface's MTU, kept current */
/* The bytes of IP and UDP headers on each datagram (by the groups' family). */
uint32_t udp_overhead(const struct pubd_fabric *f);
/* The largest UDP payload the interface's MTU (f->if_mtu) leaves. */
uint32_t udp_payload_max(const struct pubd_fabric *f);
/* Read the interface's MTU again; true when f->mtu changed (not told). */
bool udp_link_refresh(struct pubd_fabric *f);
/* The kernel announced a change of the interface: the engine is told of a
 * new MTU (fabric_events.mtu_changed). */
void udp_link_changed(struct pubd_fabric *f);

/* selfaddr.c: the host's addresses, collected at open and kept current */
int udp_self_addrs_collect(struct pubd_fabric *f);
/* Watch for addresses added and removed (logged and left when it cannot). */
void udp_self_addrs_watch(struct pubd_fabric *f);
void udp_self_addrs_close(struct pubd_fabric *f);
/* a is one of the host's addresses (v4-mapped for IPv4). */
bool udp_is_self_addr(const struct pubd_fabric *f, const struct in6_addr *a);

/* selffilter.c: our own datagrams cut to nothing on the group socket (logged and left when refused) */
void udp_self_filter_attach(struct pubd_fabric *f);

/* status.c */
void udp_status(const struct pubd_fabric *f, struct pub_table_builder *tb);

#endif
