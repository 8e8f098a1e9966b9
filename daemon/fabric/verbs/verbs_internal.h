/* SPDX-License-Identifier: MIT */
/*
 * The verbs fabric: RDMA unreliable-datagram (UD) multicast through librdmacm.
 *
 * One rdma_cm_id (RDMA_PS_UDP) bound to fabric.address selects the device and
 * port. On it: a PD, one CQ with a completion channel, one SRQ fed from one
 * registered slab, one UD QP on that SRQ, and one registered send slab.
 * Every group address is joined once with rdma_join_multicast_ex(), however
 * many slots share it; the join event gives the AH attributes, the remote
 * QPN (0xffffff) and the Q_Key to send with.
 *
 * Three fds sit on the daemon's loop: the rdmacm event channel, the CQ's
 * completion channel and the device's async fd. Nothing here blocks or
 * sleeps; joins complete on RDMA_CM_EVENT_MULTICAST_JOIN.
 *
 * Failures after open are never fatal: a group error is retried with
 * backoff; a port going down leaves every group and rejoins when the port is
 * active again (RoCE raises no multicast error on a link flap, so nobody
 * else would); device removal, an address change or a fatal QP/CQ/device
 * event tear the device resources down and build them again, retrying each
 * second until the device is back.
 *
 * Facts used below come from rdma-core's man pages and librdmacm/cma.c
 * (v44), the kernel's drivers/infiniband/sw/rxe and core/cma.c (6.1), and
 * /work/shared/verbs-facts.md.
 *
 * This header is private to the files of daemon/fabric/verbs/, one verbs
 * object or concern each (in the manner of rdma-core):
 *   ops.c     open, close, the ops table, the address probe
 *   device.c  the device resources: built in steps, torn down, rebuilt
 *   qp.c      the UD QP: creation and its state
 *   port.c    port state and the active MTU watch
 *   async.c   device async events, one hub per ibv_context
 *   cm.c      the rdmacm id's events: multicast joins and their AHs
 *   mcast.c   slots and the multicast addresses they share
 *   mcast6.c  IPv6 groups on RoCE, joined without rdma_cm (which refuses them)
 *   join_type.c  send-only or full member, following listening
 *   ah.c      address handles retired while sends may name them
 *   peer_ah.c address handles for unicast replies to peers (loss repair),
 *             cached per peer, within a bound
 *   srq.c     the receive slab and the SRQ, refilled against its watermark
 *   cq.c      draining the CQ: receive and send completions, lingering
 *   send.c    the send slab and the send path, multicast and unicast
 *   timers.c  deferred work (kick) and every retry (one timer)
 *   status.c  the "fabric" status table
 *   util.c    small helpers shared by the above
 */
#ifndef PUBD_VERBS_INTERNAL_H
#define PUBD_VERBS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "ah_cache.h"
#include "fabric.h"
#include "fabric_counters.h"
#include "jointype.h"
#include "linger.h"

#define CQ_BATCH	  32	       /* work completions per ibv_poll_cq */
#define POST_BATCH	  32	       /* WRs linked per post call */
#define CQ_BUDGET	  512	       /* completions per dispatch before yielding to the loop */
#define TX_WRID		  (1ull << 63) /* send WR ids carry this bit and the post sequence */
#define MAX_SLOTS	  65535	       /* the join context keeps the mc index in 16 bits */
#define REQ_INLINE	  256	       /* max_inline_data asked for; providers may give less */
#define RETRY_MIN_NS	  500000000ull
#define RETRY_MAX_NS	  30000000000ull
#define DEV_RETRY_NS	  1000000000ull
#define REBUILD_MAX_NS	  30000000000ull /* longest wait before rebuilding after a failure */
#define REBUILD_STABLE_NS 60000000000ull /* up this long: the next loss is not a repeat */
#define PORT_CHECK_NS	  1000000000ull	 /* how often the port's active MTU is read */
#define FAULT_LOG_NS	  10000000000ull /* repeating faults: one log line per this period */
#define POST_RETRY_MIN_NS 1000000ull
#define POST_RETRY_MAX_NS 1000000000ull

/* X(id, name): the counters only verbs keeps. They follow the common ones
 * (fabric_counters.h) in struct pubd_fabric's cnt[]. */
#define VERBS_COUNTERS(X)                          \
	X(RX_WC_ERRORS, "rx_completion_errors")    \
	X(RX_POST_ERRORS, "rx_post_errors")        \
	X(TX_INLINE, "tx_inline")                  \
	X(TX_WC_ERRORS, "tx_completion_errors")    \
	X(TX_TOO_BIG, "tx_too_big")                \
	X(SRQ_LIMIT_EVENTS, "srq_limit_events")    \
	X(SRQ_REFILLS, "srq_refills")              \
	X(CQ_EVENTS, "cq_events")                  \
	X(JOINS, "joins")                          \
	X(ATTACHES, "qp_attaches")                 \
	X(DETACHES, "qp_detaches")                 \
	X(ATTACH_ERRORS, "qp_attach_errors")       \
	X(JOIN_ERRORS, "join_errors")              \
	X(MC_ERRORS, "multicast_errors")           \
	X(REJOINS, "rejoins")                      \
	X(ADDR_CHANGE, "addr_change_events")       \
	X(DEVICE_REMOVAL, "device_removal_events") \
	X(PORT_ERR, "port_err_events")             \
	X(PORT_ACTIVE, "port_active_events")       \
	X(PORT_OTHER, "port_other_events")         \
	X(FATAL_EVENTS, "fatal_async_events")      \
	X(REBUILDS, "device_rebuilds")             \
	X(TX_UNICAST, "tx_unicast")                \
	X(TX_BAD_PEER, "tx_bad_peer")              \
	X(TX_IN_PLACE, "tx_in_place")              \
	X(TX_REGISTER_FAILS, "tx_register_failures")

enum vc {
	VC__BEFORE = PUBD_FC__COUNT - 1, /* the common counters come first */
#define X(id, name) VC_##id,
	VERBS_COUNTERS(X)
#undef X
		VC__COUNT /* add new ones before this */
};

struct vmc {
	bool used;
	bool joined;	  /* librdmacm holds a join for addr: leave it before anything else */
	bool pending;	  /* join issued, its event not seen yet */
	bool up;	  /* ah is valid: sends go out */
	bool want_recv;	  /* some slot receives: needs a full-member join */
	bool attached;	  /* the QP takes this group's datagrams (ibv_attach_mcast) */
	bool no_sendonly; /* a send-only join failed here: use full member */
	bool mld;	  /* mcast6.c: mld_fd holds the group's MLD membership */
	int mld_fd;
	uint32_t join_flags; /* RDMA_MC_JOIN_FLAG_* of the current join */
	uint32_t gen;	     /* tells this join's events from a previous one's */
	unsigned refs;
	int32_t rx_slot; /* slot reported for datagrams to this address */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char name[INET6_ADDRSTRLEN];
	uint8_t mgid[16];
	uint32_t dst4; /* mgid bytes 12..15, as found at GRH bytes 36..39 */
	struct ibv_ah *ah;
	uint32_t qpn, qkey;
	uint16_t mlid;	   /* from the join event; what attach and detach name */
	uint64_t retry_at; /* 0: no retry scheduled */
	uint64_t retry_delay;
	uint64_t up_at;	     /* when the last join completed; 0: not since the last failure */
	uint64_t idle_since; /* when the last listener left */
	uint64_t hold_at;    /* the hold-off before going send-only runs out; 0: none */
};

struct vslot {
	bool used;
	bool up;	  /* group_state(up) was reported */
	bool notify;	  /* report up from the kick timer (never from inside join()) */
	bool listening;	  /* a RECV slot that wants the group's datagrams now */
	bool listen_wait; /* listen(on) answered 1: ev.listening when the full join completes */
	int mc;
	enum pubd_join_mode mode;
};

/* An AH may still be named by posted sends: free it once they completed. */
struct dead_ah {
	struct ibv_ah *ah;
	uint64_t seq; /* tx_posted when it was retired */
};

/*
 * A fault that can repeat (a post failing, completion errors, a device
 * that will not come back) is logged once per FAULT_LOG_NS with the count
 * of those held back since, so a fault storm cannot flood the log.
 */
struct ratelog {
	uint64_t next_ns;
	uint64_t held;
};

/* True when this occurrence may be logged; *held says how many were not. */
bool verbs_ratelog_ok(struct ratelog *r, uint64_t *held);

/*
 * Calls from the verbs objects up to the device's lifecycle (device.c): a
 * CQ, port, async or CM error that means the device must be rebuilt. Set
 * when the fabric opens, so the files below never call device.c by name.
 */
struct verbs_up {
	void (*dev_lost)(struct pubd_fabric *f, const char *why, bool removed);
};
extern const struct verbs_up verbs_device_up;

struct pubd_fabric {
	const struct verbs_up *up;
	struct pubd_loop *loop;
	struct pubd_fabric_events ev;
	void *ctx;

	/* configuration */
	char address[128];
	struct sockaddr_storage bind_addr;
	uint32_t cfg_mtu, srq_depth, srq_wm, sq_depth;

	/* lives as long as the fabric */
	struct rdma_event_channel *cm_ch;
	struct pubd_loop_watch *cm_watch;
	struct pubd_loop_timer *kick;  /* deferred work: notifications, CQ beyond budget */
	struct pubd_loop_timer *retry; /* rejoins and device rebuilds */
	bool kicked;
	bool qp_check; /* a send failed: the QP may have left RTS */

	/* device resources: verbs_dev_setup() builds, verbs_dev_teardown() releases */
	bool dev_ok;
	bool port_active;
	bool sendonly_ok;      /* cleared when the provider refuses send-only joins */
	uint64_t join_hold_ns; /* fabric.sendonly_hold_ms: full member this long after the last listener */
	uint64_t dev_retry_at;
	unsigned dev_retry_logged;
	uint64_t rebuild_delay; /* grows while rebuilt resources keep failing at once */
	uint64_t rebuilt_at;	/* when the device resources were last built */
	uint64_t port_check_at; /* next read of the port's active MTU; 0: none */
	uint64_t cm_resume_at;	/* the cm channel failed: not watched until then */
	uint64_t tx_retry_at;	/* a send post failed: writable no sooner than this */
	uint64_t tx_retry_delay;
	uint64_t rx_retry_at; /* a receive post failed: refill again then */
	uint64_t rx_retry_delay;
	bool opened;	   /* verbs_open succeeded: a later setup problem is not fatal */
	bool mtu_capped;   /* fabric.mtu exceeds the port's active MTU (after a change) */
	uint32_t told_mtu; /* the MTU the daemon knows (open, then ev.mtu_changed) */
	struct ratelog rl_rx_post, rl_tx_post, rl_rx_wc, rl_tx_wc, rl_srq_limit, rl_rebuild, rl_cm, rl_register;
	struct rdma_cm_id *id;
	char dev_name[64];
	uint8_t port;
	uint8_t link_layer;
	uint32_t active_mtu; /* bytes */
	uint32_t mtu;	     /* largest datagram we send */
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch;
	struct ibv_cq *cq;
	unsigned cq_unacked;
	bool cq_armed;		   /* an event will come with the next completion */
	struct pubd_linger linger; /* fabric.rx_linger_us: polls of the unarmed CQ before arming it */
	struct ibv_srq *srq;
	struct ibv_qp *qp; /* owned by id (rdma_create_qp_ex / rdma_destroy_qp) */
	bool block_self_lb;
	uint8_t self_gid[16]; /* the port GID our sends carry (from the joins) */
	bool self_gid_ok;
	uint32_t max_inline;
	struct pubd_loop_watch *comp_watch;
	bool hub_attached; /* on the async hub of id->verbs */

	uint8_t *rx_slab;
	size_t rx_stride;
	struct ibv_mr *rx_mr;
	uint32_t *rx_free; /* buffers not posted to the SRQ */
	uint32_t rx_nfree;
	uint32_t srq_posted;
	uint32_t srq_min_fill;

	uint8_t *tx_slab;
	size_t tx_stride;
	struct ibv_mr *tx_mr;
	uint64_t tx_posted, tx_done; /* sequence numbers: credits = sq_depth - (posted - done) */
	/* Sends in place (inplace.c): per send queue entry, the lent buffer a
	 * posted send reads, pinned until tx_done passes it; and the publish
	 * logs registered with the PD. */
	struct pubd_msgbuf **tx_lent;
	struct pubd_mem_region *regions;
	unsigned signal_every;
	bool tx_blocked; /* a send came up short: call ev.writable when credits return */

	struct dead_ah *dead;
	unsigned ndead, capdead;

	/* Unicast replies (send_to): AHs per peer, and the GID index they
	 * are sent from (per GID type; -1 not looked up since the build). */
	struct pubd_ah_cache peer_ahs;
	int reply_sgid_v2, reply_sgid_v1;

	struct vslot *slots;
	unsigned nslots;
	struct vmc *mcs;
	unsigned nmcs;
	uint32_t gen;
	int last_rx_mc; /* one-entry cache for the rx address lookup */

	uint64_t cnt[VC__COUNT];
};

/* devlist.c: the RDMA devices found, for an error ("rxe0 (on eth0), ...", or "none (...)") */
void verbs_devices_found(char *buf, size_t cap);

/* util.c */
int verbs_set_nonblock(int fd);
const char *verbs_err_str(int neg);
uint32_t verbs_mtu_bytes(enum ibv_mtu m);
const char *verbs_link_layer_name(uint8_t ll);

/* timers.c */
void verbs_kick(struct pubd_fabric *f);
void verbs_arm_retry(struct pubd_fabric *f);
void verbs_on_kick(void *ctx, uint64_t now);
void verbs_on_retry(void *ctx, uint64_t now);

/* device.c */
int verbs_dev_setup(struct pubd_fabric *f, bool quiet);
void verbs_dev_teardown(struct pubd_fabric *f);
void verbs_dev_lost(struct pubd_fabric *f, const char *why, bool removed);
void verbs_try_rebuild(struct pubd_fabric *f);

/* qp.c */
int verbs_create_qp(struct pubd_fabric *f);
bool verbs_qp_usable(struct pubd_fabric *f);

/* port.c */
void verbs_port_went_down(struct pubd_fabric *f);
void verbs_port_came_up(struct pubd_fabric *f);
void verbs_port_check(struct pubd_fabric *f, uint64_t now);

/* async.c */
int verbs_hub_attach(struct pubd_fabric *f);
void verbs_hub_detach(struct pubd_fabric *f);

/* cm.c */
int verbs_mc_join(struct pubd_fabric *f, int idx);
void verbs_mc_leave(struct pubd_fabric *f, struct vmc *m);
void verbs_on_cm(void *ctx, uint32_t events);

/* mcast.c */
void verbs_notify_slots(struct pubd_fabric *f, int idx, bool up, int err);
void verbs_mc_retry_later(struct pubd_fabric *f, struct vmc *m);
int verbs_mc_sync_attach(struct pubd_fabric *f, int idx);
void verbs_mc_down(struct pubd_fabric *f, int idx, int err);
void verbs_rejoin_all(struct pubd_fabric *f);
int verbs_join(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen,
	       enum pubd_join_mode mode);
int verbs_listen(struct pubd_fabric *f, int slot, bool on);
void verbs_mc_apply(struct pubd_fabric *f, int idx);

/* join_type.c */
enum pubd_jt_action verbs_mc_decide(struct pubd_fabric *f, int idx);
void verbs_mc_listening_done(struct pubd_fabric *f, int idx);
const char *verbs_join_state(const struct pubd_fabric *f, int slot);
void verbs_leave(struct pubd_fabric *f, int slot);

/* mcast6.c */
bool verbs_mc6_manual(const struct pubd_fabric *f, const struct vmc *m);
int verbs_mc6_join(struct pubd_fabric *f, int idx);
void verbs_mc6_leave(struct pubd_fabric *f, struct vmc *m);

/* ah.c */
void verbs_ah_retire(struct pubd_fabric *f, struct ibv_ah *ah);
void verbs_ah_reap(struct pubd_fabric *f, bool all);

/* peer_ah.c */
int verbs_peer_ah_init(struct pubd_fabric *f);
void verbs_peer_ah_close(struct pubd_fabric *f);
void verbs_peer_ah_flush(struct pubd_fabric *f);
struct ibv_ah *verbs_peer_ah_get(struct pubd_fabric *f, const struct pubd_ud_addr *a, int *err);

/* srq.c */
int verbs_rx_setup(struct pubd_fabric *f, bool quiet);
int verbs_rx_start(struct pubd_fabric *f, bool quiet);
void verbs_rx_teardown(struct pubd_fabric *f);
void verbs_rx_arm_limit(struct pubd_fabric *f);
unsigned verbs_rx_refill(struct pubd_fabric *f);

/* cq.c */
unsigned verbs_drain_cq(struct pubd_fabric *f, unsigned budget, bool *more);
bool verbs_arm_cq(struct pubd_fabric *f);
void verbs_process_cq(struct pubd_fabric *f);
void verbs_on_comp(void *ctx, uint32_t events);
int verbs_poll(struct pubd_fabric *f);
int verbs_linger(struct pubd_fabric *f, bool busy);

/* send.c */
int verbs_tx_setup(struct pubd_fabric *f, bool quiet);
void verbs_tx_teardown(struct pubd_fabric *f);

/* inplace.c: a lent payload sent from where it lies, no copy */
int verbs_inplace_setup(struct pubd_fabric *f);
void verbs_inplace_teardown(struct pubd_fabric *f);
bool verbs_inplace_lkey(struct pubd_fabric *f, const struct pubd_tx_dgram *x, uint32_t *lkey);
void verbs_inplace_posted(struct pubd_fabric *f, uint64_t seq, struct pubd_msgbuf *m);
void verbs_inplace_done(struct pubd_fabric *f, uint64_t from, uint64_t to);
uint64_t verbs_tx_credits(const struct pubd_fabric *f, bool unicast);
int verbs_send(struct pubd_fabric *f, int slot, const struct pubd_tx_dgram *d, unsigned n);
uint32_t verbs_peer_host(const void *peer, uint32_t peer_len, uint8_t *out);
int verbs_send_to(struct pubd_fabric *f, const void *peer, uint32_t peer_len, const struct pubd_tx_dgram *d,
		  unsigned n);

/* status.c */
void verbs_status(const struct pubd_fabric *f, struct pub_table_builder *tb);

/* While a rebuild keeps failing, its reasons are logged once per period
 * (verbs_try_rebuild), not on every attempt: quiet says so. */
#define SETUP_ERR(...)                          \
	do {                                    \
		if (quiet)                      \
			log_debug(__VA_ARGS__); \
		else                            \
			log_err(__VA_ARGS__);   \
	} while (0)
#define SETUP_NOTE(...)                          \
	do {                                     \
		if (quiet)                       \
			log_debug(__VA_ARGS__);  \
		else                             \
			log_notice(__VA_ARGS__); \
	} while (0)

/* The context a join carries to its CM events: the mc slot and its
 * generation, no pointer to outlive (mcast.c joins, cm.c reads it back). */
static inline void *verbs_join_ctx(unsigned idx, uint32_t gen)
{
	return (void *)(((uintptr_t)gen << 16) | idx);
}

static inline void verbs_join_ctx_decode(const void *p, unsigned *idx, uint32_t *gen)
{
	uintptr_t v = (uintptr_t)p;

	*idx = v & 0xffff;
	*gen = (uint32_t)(v >> 16);
}

#endif
