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
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "config.h"
#include "fabric.h"
#include "log.h"
#include "grh.h"
#include "loop.h"
#include "proto.h"

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

#define COUNTERS(X)                                \
	X(RX_DGRAMS, "rx_datagrams")               \
	X(RX_BYTES, "rx_bytes")                    \
	X(RX_UNKNOWN_GROUP, "rx_unknown_group")    \
	X(RX_TRUNCATED, "rx_truncated")            \
	X(RX_WC_ERRORS, "rx_completion_errors")    \
	X(RX_POST_ERRORS, "rx_post_errors")        \
	X(TX_DGRAMS, "tx_datagrams")               \
	X(TX_BYTES, "tx_bytes")                    \
	X(TX_INLINE, "tx_inline")                  \
	X(TX_WC_ERRORS, "tx_completion_errors")    \
	X(TX_POST_ERRORS, "tx_post_errors")        \
	X(TX_NO_CREDITS, "tx_out_of_credits")      \
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
	X(REBUILDS, "device_rebuilds")

enum vc {
#define X(id, name) VC_##id,
	COUNTERS(X)
#undef X
		VC__COUNT /* add new ones before this */
};

static const char *const counter_names[VC__COUNT] = {
#define X(id, name) [VC_##id] = name,
	COUNTERS(X)
#undef X
};

/* One joined multicast address; several slots may share it. */
struct vmc {
	bool used;
	bool joined;	     /* librdmacm holds a join for addr: leave it before anything else */
	bool pending;	     /* join issued, its event not seen yet */
	bool up;	     /* ah is valid: sends go out */
	bool want_recv;	     /* some slot receives: needs a full-member join */
	bool attached;	     /* the QP takes this group's datagrams (ibv_attach_mcast) */
	bool no_sendonly;    /* a send-only join failed here: use full member */
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
	uint64_t up_at; /* when the last join completed; 0: not since the last failure */
};

struct vslot {
	bool used;
	bool up;	/* group_state(up) was reported */
	bool notify;	/* report up from the kick timer (never from inside join()) */
	bool listening; /* a RECV slot that wants the group's datagrams now */
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
static bool ratelog_ok(struct ratelog *r, uint64_t *held)
{
	uint64_t now = pubd_now_ns();

	if (r->next_ns && now < r->next_ns) {
		r->held++;
		return false;
	}
	*held = r->held;
	r->held = 0;
	r->next_ns = now + FAULT_LOG_NS;
	return true;
}

struct pubd_fabric {
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

	/* device resources: dev_setup() builds, dev_teardown() releases */
	bool dev_ok;
	bool port_active;
	bool sendonly_ok; /* cleared when the provider refuses send-only joins */
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
	bool opened;	   /* vopen succeeded: a later setup problem is not fatal */
	bool mtu_capped;   /* fabric.mtu exceeds the port's active MTU (after a change) */
	uint32_t told_mtu; /* the MTU the daemon knows (open, then ev.mtu_changed) */
	struct ratelog rl_rx_post, rl_tx_post, rl_rx_wc, rl_tx_wc, rl_srq_limit, rl_rebuild, rl_cm;
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
	bool cq_armed;	       /* an event will come with the next completion */
	uint64_t linger_ns;    /* fabric.rx_linger_us */
	uint32_t linger_polls; /* idle loop polls that take about linger_ns (calibrated) */
	uint32_t linger_left;  /* idle polls before the CQ is armed */
	uint32_t linger_runs;  /* lingers begun, for timing one in 4 */
	uint64_t linger_t0;    /* when a timed linger began; 0: not timed */
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
	unsigned signal_every;
	bool tx_blocked; /* a send came up short: call ev.writable when credits return */

	struct dead_ah *dead;
	unsigned ndead, capdead;

	struct vslot *slots;
	unsigned nslots;
	struct vmc *mcs;
	unsigned nmcs;
	uint32_t gen;
	int last_rx_mc; /* one-entry cache for the rx address lookup */

	uint64_t cnt[VC__COUNT];
};

static void process_cq(struct pubd_fabric *f);
static void dev_lost(struct pubd_fabric *f, const char *why, bool removed);
static int dev_setup(struct pubd_fabric *f, bool quiet);
static void rejoin_all(struct pubd_fabric *f);

/* ---- small helpers ---- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static const char *err_str(int neg)
{
	return strerror(neg < 0 ? -neg : neg);
}

static void addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
						  : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;

	if (!inet_ntop(sa->sa_family, a, buf, len))
		snprintf(buf, len, "?");
}

/*
 * fabric.address: an IP literal (v4 or v6, "%scope" allowed) or an
 * interface name, whose first IPv4 address (else first IPv6) is used.
 */
static int parse_address(const char *text, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_family = AF_UNSPEC}, *ai = NULL;
	struct ifaddrs *ifa = NULL, *i;
	int ret = -ENOENT;

	memset(ss, 0, sizeof(*ss));
	if (!text || !*text)
		return -EINVAL;
	if (getaddrinfo(text, NULL, &hints, &ai) == 0) {
		memcpy(ss, ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
		return 0;
	}
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (int fam = 0; fam < 2 && ret; fam++)
		for (i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || strcmp(i->ifa_name, text))
				continue;
			if (i->ifa_addr->sa_family != (fam ? AF_INET6 : AF_INET))
				continue;
			memcpy(ss, i->ifa_addr, fam ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
			ret = 0;
			break;
		}
	freeifaddrs(ifa);
	return ret;
}

/* A canonical copy of a group address: same bytes for the same group, so
 * rdma_leave_multicast (which memcmp()s the address, librdmacm/cma.c) finds it. */
static int norm_group(const struct sockaddr *sa, socklen_t len, struct sockaddr_storage *out, socklen_t *outlen)
{
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in *o = (struct sockaddr_in *)out;

		o->sin_family = AF_INET;
		o->sin_addr = ((const struct sockaddr_in *)sa)->sin_addr;
		*outlen = sizeof(*o);
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 *o = (struct sockaddr_in6 *)out;

		o->sin6_family = AF_INET6;
		o->sin6_addr = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		o->sin6_scope_id = ((const struct sockaddr_in6 *)sa)->sin6_scope_id;
		*outlen = sizeof(*o);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

static const char *link_layer_name(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet (RoCE)";
	default:
		return "unspecified";
	}
}

/* The join context: mc index and generation, no pointer to outlive. */
static void *join_ctx(unsigned idx, uint32_t gen)
{
	return (void *)(((uintptr_t)gen << 16) | idx);
}

static void join_ctx_decode(const void *p, unsigned *idx, uint32_t *gen)
{
	uintptr_t v = (uintptr_t)p;

	*idx = v & 0xffff;
	*gen = (uint32_t)(v >> 16);
}

static bool gen_matches(uint32_t a, uint32_t b)
{
	/* On 32-bit only 16 bits of the generation survive the pointer. */
	if (sizeof(uintptr_t) < 8)
		return (a & 0xffff) == (b & 0xffff);
	return a == b;
}

static void kick(struct pubd_fabric *f)
{
	if (!f->kicked) {
		f->kicked = true;
		pubd_loop_timer_arm(f->kick, 0); /* a deadline in the past: next iteration */
	}
}

static void arm_retry(struct pubd_fabric *f)
{
	uint64_t next = UINT64_MAX;

	if (!f->dev_ok && f->dev_retry_at)
		next = f->dev_retry_at;
	if (f->dev_ok) {
		uint64_t at[] = {f->port_check_at, f->tx_retry_at, f->rx_retry_at};

		for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++)
			if (at[i] && at[i] < next)
				next = at[i];
	}
	if (f->cm_resume_at && f->cm_resume_at < next)
		next = f->cm_resume_at;
	for (unsigned i = 0; i < f->nmcs; i++)
		if (f->mcs[i].used && f->mcs[i].retry_at && f->mcs[i].retry_at < next)
			next = f->mcs[i].retry_at;
	pubd_loop_timer_arm(f->retry, next);
}

/* ---- address handles ---- */

static void ah_retire(struct pubd_fabric *f, struct ibv_ah *ah)
{
	struct dead_ah *d;

	if (!ah)
		return;
	/* Sends are completed in order; once tx_done passes this point no WR
	 * that could name the AH is outstanding. */
	if (f->tx_done >= f->tx_posted) {
		ibv_destroy_ah(ah);
		return;
	}
	if (f->ndead == f->capdead) {
		unsigned cap = f->capdead ? f->capdead * 2 : 8;

		d = realloc(f->dead, cap * sizeof(*d));
		if (!d) {
			/* Cannot defer: destroying early only risks sends that
			 * are failing anyway; leaking would be worse over time. */
			log_warn("verbs: out of memory deferring an AH; destroying it now");
			ibv_destroy_ah(ah);
			return;
		}
		f->dead = d;
		f->capdead = cap;
	}
	f->dead[f->ndead++] = (struct dead_ah){ah, f->tx_posted};
}

static void ah_reap(struct pubd_fabric *f, bool all)
{
	unsigned i = 0;

	while (i < f->ndead) {
		if (all || f->dead[i].seq <= f->tx_done) {
			ibv_destroy_ah(f->dead[i].ah);
			f->dead[i] = f->dead[--f->ndead];
		} else {
			i++;
		}
	}
}

/* ---- groups ---- */

static void mc_update(struct pubd_fabric *f, int idx)
{
	struct vmc *m = &f->mcs[idx];

	m->want_recv = false;
	m->rx_slot = -1;
	for (unsigned s = 0; s < f->nslots; s++) {
		if (!f->slots[s].used || f->slots[s].mc != idx)
			continue;
		if (f->slots[s].mode & PUBD_JOIN_RECV) {
			m->want_recv = true;
			if (m->rx_slot < 0)
				m->rx_slot = (int32_t)s;
		}
	}
	if (m->rx_slot < 0) /* send-only groups still name a slot for stray traffic */
		for (unsigned s = 0; s < f->nslots; s++)
			if (f->slots[s].used && f->slots[s].mc == idx) {
				m->rx_slot = (int32_t)s;
				break;
			}
}

/* Tell the daemon about every slot on mc idx whose state changes. */
static void notify_slots(struct pubd_fabric *f, int idx, bool up, int err)
{
	for (unsigned s = 0; s < f->nslots; s++) {
		/* Re-read each time: the callback may join or leave. */
		struct vslot *v = &f->slots[s];

		if (!v->used || v->mc != idx || v->up == up)
			continue;
		v->up = up;
		v->notify = false;
		f->ev.group_state(f->ctx, (int)s, up, err);
	}
}

static void mc_retry_later(struct pubd_fabric *f, struct vmc *m)
{
	uint64_t now = pubd_now_ns();

	/* A join that fails again soon after it came up keeps backing off:
	 * a group that errors at once after every join would otherwise be
	 * rejoined (and logged) twice a second for ever. */
	if (m->up_at && now - m->up_at >= REBUILD_STABLE_NS)
		m->retry_delay = 0;
	m->up_at = 0;
	m->retry_delay = m->retry_delay ? m->retry_delay * 2 : RETRY_MIN_NS;
	if (m->retry_delay > RETRY_MAX_NS)
		m->retry_delay = RETRY_MAX_NS;
	m->retry_at = now + m->retry_delay;
	arm_retry(f);
}

static int mc_join(struct pubd_fabric *f, int idx)
{
	struct vmc *m = &f->mcs[idx];
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.addr = (struct sockaddr *)&m->addr,
	};
	int ret;

	if (!f->dev_ok || !f->port_active || m->joined)
		return 0;
	m->retry_at = 0;
	/* A send-only full member is not attached to the QP and, on RoCE,
	 * sends no IGMP report (rdma_join_multicast(3), core/cma.c): used for
	 * groups this daemon only publishes to. */
	if (!m->want_recv && !m->no_sendonly && f->sendonly_ok)
		attr.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	else
		attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	m->gen = ++f->gen;
	ret = rdma_join_multicast_ex(f->id, &attr, join_ctx((unsigned)idx, m->gen)) ? -errno : 0;
	if (ret && attr.join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
		/* Kernels or providers without send-only support refuse it here;
		 * a full member works everywhere. */
		log_info("verbs: %s: send-only join refused (%s); joining as full member", m->name, err_str(ret));
		if (ret == -ENOSYS || ret == -EINVAL || ret == -EOPNOTSUPP)
			f->sendonly_ok = false;
		m->no_sendonly = true;
		attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
		ret = rdma_join_multicast_ex(f->id, &attr, join_ctx((unsigned)idx, m->gen)) ? -errno : 0;
	}
	if (ret) {
		f->cnt[VC_JOIN_ERRORS]++;
		log_warn("verbs: joining %s on %s failed: %s; retrying", m->name, f->dev_name, err_str(ret));
		mc_retry_later(f, m);
		return ret;
	}
	m->joined = true;
	m->pending = true;
	m->join_flags = attr.join_flags;
	log_debug("verbs: joining %s on %s as %s", m->name, f->dev_name,
		  attr.join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER ? "send-only full member" : "full member");
	return 0;
}

/* Drop librdmacm's join (and the QP attachment); keep the group's slots. */
static void mc_leave(struct pubd_fabric *f, struct vmc *m)
{
	if (m->joined && f->id) {
		/* Never called with an unacked event of this join in hand:
		 * rdma_leave_multicast waits for those acks (librdmacm/cma.c). */
		if (rdma_leave_multicast(f->id, (struct sockaddr *)&m->addr))
			log_debug("verbs: leaving %s: %s", m->name, strerror(errno));
	}
	m->joined = false;
	m->pending = false;
	m->attached = false;
}

/*
 * Attach the QP to the group while some slot listens, detach it while none
 * does, keeping the join either way. A full-member join is attached by
 * librdmacm when its event is processed (ucma_process_join); rdma_leave_
 * multicast detaches and ignores the result, so a group we detached
 * ourselves leaves cleanly. Attach and detach are synchronous verbs: the
 * first datagram after a successful attach is ours.
 */
static int mc_sync_attach(struct pubd_fabric *f, int idx)
{
	struct vmc *m = &f->mcs[idx];
	bool want = false;
	int ret;

	for (unsigned s = 0; s < f->nslots && !want; s++)
		want = f->slots[s].used && f->slots[s].mc == idx && f->slots[s].listening;
	if (!m->up || !f->qp || m->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER || want == m->attached)
		return 0;
	if (want) {
		ret = ibv_attach_mcast(f->qp, (const union ibv_gid *)m->mgid, m->mlid);
		if (ret) {
			ret = ret > 0 ? -ret : -EIO; /* the verb returns an errno value */
			f->cnt[VC_ATTACH_ERRORS]++;
			log_warn("verbs: attaching the QP to %s failed: %s", m->name, err_str(ret));
			return ret;
		}
		f->cnt[VC_ATTACHES]++;
	} else {
		ret = ibv_detach_mcast(f->qp, (const union ibv_gid *)m->mgid, m->mlid);
		if (ret)
			log_warn("verbs: detaching the QP from %s: %s", m->name, strerror(ret));
		f->cnt[VC_DETACHES]++;
	}
	m->attached = want;
	log_debug("verbs: %s %s the QP", m->name, want ? "attached to" : "detached from");
	return 0;
}

static void mc_down(struct pubd_fabric *f, int idx, int err)
{
	struct vmc *m = &f->mcs[idx];

	mc_leave(f, m);
	m->up = false;
	ah_retire(f, m->ah);
	m->ah = NULL;
	notify_slots(f, idx, false, err);
}

static int mc_find_or_add(struct pubd_fabric *f, const struct sockaddr_storage *a, socklen_t alen)
{
	int free_idx = -1;

	for (unsigned i = 0; i < f->nmcs; i++) {
		if (!f->mcs[i].used) {
			if (free_idx < 0)
				free_idx = (int)i;
			continue;
		}
		if (f->mcs[i].addrlen == alen && !memcmp(&f->mcs[i].addr, a, alen))
			return (int)i;
	}
	if (free_idx < 0) {
		unsigned cap = f->nmcs ? f->nmcs * 2 : 8;
		struct vmc *n;

		if (cap > MAX_SLOTS)
			return -ENOSPC;
		n = realloc(f->mcs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + f->nmcs, 0, (cap - f->nmcs) * sizeof(*n));
		free_idx = (int)f->nmcs;
		f->mcs = n;
		f->nmcs = cap;
	}
	struct vmc *m = &f->mcs[free_idx];

	memset(m, 0, sizeof(*m));
	m->used = true;
	m->rx_slot = -1;
	m->addr = *a;
	m->addrlen = alen;
	addr_text((const struct sockaddr *)a, m->name, sizeof(m->name));
	return free_idx;
}

/* ---- receive ---- */

static void rx_arm_limit(struct pubd_fabric *f)
{
	struct ibv_srq_attr a = {.srq_limit = f->srq_wm};
	int ret;

	if (!f->srq || !f->srq_wm)
		return;
	/* The device raises IBV_EVENT_SRQ_LIMIT_REACHED once when the posted
	 * count drops below srq_limit and then clears it (rxe sets it to 0):
	 * re-armed after every refill (ibv_modify_srq(3)). */
	ret = ibv_modify_srq(f->srq, &a, IBV_SRQ_LIMIT);
	if (ret)
		log_warn("verbs: arming srq_limit %u on %s: %s", f->srq_wm, f->dev_name, strerror(ret));
}

/* Post every buffer on the free list, in linked batches. */
static unsigned rx_refill(struct pubd_fabric *f)
{
	struct ibv_recv_wr wr[POST_BATCH], *bad;
	struct ibv_sge sge[POST_BATCH];
	unsigned posted = 0;

	while (f->rx_nfree) {
		unsigned n = f->rx_nfree < POST_BATCH ? f->rx_nfree : POST_BATCH;
		uint32_t *idx = &f->rx_free[f->rx_nfree - n];
		int ret;

		for (unsigned i = 0; i < n; i++) {
			sge[i] = (struct ibv_sge){
				.addr = (uintptr_t)(f->rx_slab + (size_t)idx[i] * f->rx_stride),
				.length = (uint32_t)f->rx_stride,
				.lkey = f->rx_mr->lkey,
			};
			wr[i] = (struct ibv_recv_wr){
				.wr_id = idx[i],
				.next = i + 1 < n ? &wr[i + 1] : NULL,
				.sg_list = &sge[i],
				.num_sge = 1,
			};
		}
		ret = ibv_post_srq_recv(f->srq, wr, &bad);
		if (ret) {
			/* WRs before bad_wr were posted (ibv_post_srq_recv(3)); the
			 * rest stay on the free list for the next refill. */
			unsigned ok = (unsigned)(bad - wr);
			uint64_t held;

			memmove(idx, idx + ok, (n - ok) * sizeof(*idx));
			f->rx_nfree -= ok;
			f->srq_posted += ok;
			posted += ok;
			f->cnt[VC_RX_POST_ERRORS]++;
			if (ratelog_ok(&f->rl_rx_post, &held))
				log_warn("verbs: posting receives on %s: %s (%u buffers unposted; %" PRIu64
					 " more failures since the last report); retrying with back-off",
					 f->dev_name, strerror(ret), f->rx_nfree, held);
			/* Completions may never come to refill from (an empty SRQ
			 * takes nothing): the retry timer tries again. */
			f->rx_retry_delay = f->rx_retry_delay ? f->rx_retry_delay * 2 : POST_RETRY_MIN_NS;
			if (f->rx_retry_delay > POST_RETRY_MAX_NS)
				f->rx_retry_delay = POST_RETRY_MAX_NS;
			f->rx_retry_at = pubd_now_ns() + f->rx_retry_delay;
			arm_retry(f);
			return posted;
		}
		f->rx_nfree -= n;
		f->srq_posted += n;
		posted += n;
	}
	f->rx_retry_delay = 0;
	f->rx_retry_at = 0;
	return posted;
}

/*
 * The slot of the group a datagram was addressed to, or -1 when it was not
 * addressed to a group whose datagrams this QP takes now (joined and
 * attached). The work completion does not say whether the datagram came by
 * multicast: a peer can send to this QP's number directly, with the
 * well-known Q_Key, to a unicast address or even to a group address it knows
 * we joined but do not listen on. Only the destination in front of the
 * payload tells, so it must name an attached group exactly: the IPv4
 * destination of a RoCEv2/IPv4 header, else the whole destination GID.
 */
static int32_t rx_slot_of(struct pubd_fabric *f, const uint8_t *grh, bool has_grh)
{
	enum pubd_grh_kind kind;
	uint32_t dst4;

	if (!has_grh)
		return -1;
	kind = pubd_grh_kind(grh);
	if (kind == PUBD_GRH_UNKNOWN)
		return -1;
	memcpy(&dst4, grh + PUBD_GRH_DST4_OFF, 4);
	/* A linear scan over the joined addresses (tens, not thousands),
	 * with the last hit tried first: a stream hits it every time. */
	for (unsigned k = 0; k <= f->nmcs; k++) {
		int i = k == 0 ? f->last_rx_mc : (int)k - 1;
		struct vmc *m;

		if (i < 0 || (unsigned)i >= f->nmcs)
			continue;
		m = &f->mcs[i];
		if (!m->used || m->dst4 != dst4 || !m->joined || !m->attached)
			continue;
		if (kind == PUBD_GRH_IPV4 ? m->addr.ss_family != AF_INET
					  : memcmp(grh + PUBD_GRH_DGID_OFF, m->mgid, 16) != 0)
			continue;
		f->last_rx_mc = i;
		return m->rx_slot;
	}
	return -1;
}

static void tx_complete(struct pubd_fabric *f, const struct ibv_wc *wc)
{
	uint64_t seq = wc->wr_id & ~TX_WRID;

	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR) {
		uint64_t held;

		f->cnt[VC_TX_WC_ERRORS]++;
		f->qp_check = true;
		if (ratelog_ok(&f->rl_tx_wc, &held))
			log_warn("verbs: send completion error on %s: %s (vendor 0x%x; %" PRIu64
				 " more since the last report)",
				 f->dev_name, ibv_wc_status_str(wc->status), wc->vendor_err, held);
	}
	/* The send queue completes in order: a signalled WR's completion
	 * retires every unsignalled one posted before it. */
	if (seq + 1 > f->tx_done)
		f->tx_done = seq + 1;
}

/* Poll up to budget completions; hand receives to the daemon in batches. */
static unsigned drain_cq(struct pubd_fabric *f, unsigned budget, bool *more)
{
	struct ibv_wc wc[CQ_BATCH];
	struct pubd_rx_dgram rx[CQ_BATCH];
	uint32_t bufs[CQ_BATCH];
	unsigned done = 0;

	*more = false;
	while (f->cq) {
		unsigned nrx = 0, nbuf = 0;
		int n;

		if (done >= budget) {
			*more = true;
			break;
		}
		n = ibv_poll_cq(f->cq, CQ_BATCH, wc);
		if (n < 0) {
			log_err("verbs: ibv_poll_cq on %s failed (%d)", f->dev_name, n);
			dev_lost(f, "CQ poll error", false);
			break;
		}
		if (n == 0)
			break;
		for (int i = 0; i < n; i++) {
			const struct ibv_wc *w = &wc[i];
			uint8_t *buf;

			if (w->wr_id & TX_WRID) {
				tx_complete(f, w);
				continue;
			}
			bufs[nbuf++] = (uint32_t)w->wr_id;
			f->srq_posted--;
			if (w->status != IBV_WC_SUCCESS) {
				uint64_t held;

				if (w->status != IBV_WC_WR_FLUSH_ERR) {
					f->cnt[VC_RX_WC_ERRORS]++;
					if (ratelog_ok(&f->rl_rx_wc, &held))
						log_warn("verbs: receive completion error on %s: %s (%" PRIu64
							 " more since the last report)",
							 f->dev_name, ibv_wc_status_str(w->status), held);
				}
				continue;
			}
			/* byte_len counts the 40 GRH bytes (ibv_poll_cq(3)). */
			if (w->byte_len < PUBD_GRH_LEN) {
				f->cnt[VC_RX_TRUNCATED]++;
				continue;
			}
			buf = f->rx_slab + (size_t)w->wr_id * f->rx_stride;
			rx[nrx].data = buf + PUBD_GRH_LEN;
			rx[nrx].len = w->byte_len - PUBD_GRH_LEN;
			rx[nrx].slot = rx_slot_of(f, buf, w->wc_flags & IBV_WC_GRH);
			/* The adapter loops our own multicast back (rxe cannot block
			 * it). A QP number alone does not tell: QP numbers are per
			 * device, so a peer on another port can have ours. */
			rx[nrx].self = f->qp && w->src_qp == f->qp->qp_num && f->self_gid_ok &&
				       pubd_grh_from_gid(buf, f->self_gid);
			if (rx[nrx].slot < 0)
				f->cnt[VC_RX_UNKNOWN_GROUP]++;
			f->cnt[VC_RX_BYTES] += rx[nrx].len;
			nrx++;
		}
		if (f->srq_posted < f->srq_min_fill)
			f->srq_min_fill = f->srq_posted;
		f->cnt[VC_RX_DGRAMS] += nrx;
		if (nrx)
			f->ev.rx(f->ctx, rx, nrx);
		/* The daemon is done with the bytes: back to the SRQ at once. */
		if (nbuf && f->rx_free) {
			memcpy(f->rx_free + f->rx_nfree, bufs, nbuf * sizeof(*bufs));
			f->rx_nfree += nbuf;
			rx_refill(f);
		}
		done += (unsigned)n;
	}
	ah_reap(f, false);
	/* After a failed post, credits alone do not make it writable: the
	 * retry timer says when to try again (tx_retry_at). */
	if (f->tx_blocked && !f->tx_retry_at && f->tx_posted - f->tx_done < f->sq_depth) {
		f->tx_blocked = false;
		f->ev.writable(f->ctx);
	}
	return done;
}

/*
 * A failed send can move a UD QP to SQE or ERR (the IB spec's QP state
 * machine; rxe does it when the link drops under a send), and every later
 * send is then flushed: the group looks joined but nothing leaves. Nothing
 * moves it back by itself, so rebuild the device resources when it is not
 * in RTS.
 */
static bool qp_usable(struct pubd_fabric *f)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (!f->qp)
		return false;
	if (ibv_query_qp(f->qp, &attr, IBV_QP_STATE, &init))
		return true; /* cannot tell: leave it to the next error */
	return attr.qp_state == IBV_QPS_RTS;
}

/* Ask for an event at the next completion. false: the device is gone. */
static bool arm_cq(struct pubd_fabric *f)
{
	int ret = ibv_req_notify_cq(f->cq, 0);

	if (ret) {
		log_err("verbs: ibv_req_notify_cq on %s: %s", f->dev_name, strerror(ret));
		dev_lost(f, "CQ notification error", false);
		return false;
	}
	f->cq_armed = true;
	return true;
}

static void process_cq(struct pubd_fabric *f)
{
	bool more;
	unsigned n;

	f->cq_armed = false; /* an event came, or the kick: the arm is spent */
	n = drain_cq(f, CQ_BUDGET, &more);
	if (!f->cq)
		return;
	if (f->qp_check) {
		f->qp_check = false;
		if (!qp_usable(f)) {
			dev_lost(f, "the QP left RTS after a send error", false);
			return;
		}
	}
	if (more) {
		kick(f); /* yield to the other fds; continue next iteration */
		return;
	}
	/* In a train of completions: leave the CQ unarmed and let vlinger
	 * poll on from the loop; it arms before the loop may sleep. */
	if (n && f->linger_ns) {
		f->linger_left = f->linger_polls;
		f->linger_t0 = 0;
		return;
	}
	/* Drain, re-arm, drain again: a completion that lands between the
	 * last empty poll and the arm raises no event (ibv_req_notify_cq(3)). */
	if (!arm_cq(f))
		return;
	drain_cq(f, CQ_BUDGET, &more);
	if (more)
		kick(f);
}

static void on_comp(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;
	struct ibv_cq *cq;
	void *cq_ctx;

	/* One CQ raises at most one event per ibv_req_notify_cq, so one read
	 * takes it; a second would only return EAGAIN (a system call per
	 * wakeup). The fd is level-triggered: anything left wakes us again. */
	if (f->comp_ch && ibv_get_cq_event(f->comp_ch, &cq, &cq_ctx) == 0) {
		f->cq_unacked++;
		f->cnt[VC_CQ_EVENTS]++;
	} else if (f->comp_ch && errno != EAGAIN && errno != EWOULDBLOCK) {
		/* A channel that is readable but cannot be read (the device was
		 * disassociated) would wake the loop for ever: rebuild. */
		log_err("verbs: reading the completion channel of %s: %s", f->dev_name, strerror(errno));
		dev_lost(f, "completion channel error", true);
		return;
	}
	/* Acks take a lock: batch them; ibv_destroy_cq waits for all of them. */
	if (f->cq && f->cq_unacked >= 64) {
		ibv_ack_cq_events(f->cq, f->cq_unacked);
		f->cq_unacked = 0;
	}
	if (f->cq)
		process_cq(f);
}

/* ---- device async events ---- */

static void port_went_down(struct pubd_fabric *f)
{
	if (!f->port_active)
		return;
	f->port_active = false;
	/* RoCE keeps the groups through a flap without telling anyone; leave
	 * them so that the rejoin on PORT_ACTIVE starts clean. */
	for (unsigned i = 0; i < f->nmcs; i++)
		if (f->mcs[i].used) {
			f->mcs[i].retry_at = 0;
			mc_down(f, (int)i, -ENETDOWN);
		}
}

static void port_came_up(struct pubd_fabric *f)
{
	struct ibv_port_attr pa;
	int ret;

	ret = ibv_query_port(f->id->verbs, f->port, &pa);
	if (ret) {
		log_warn("verbs: querying %s port %u: %s", f->dev_name, f->port, strerror(ret));
		return;
	}
	/* rxe reports ACTIVE for the netdev coming up and again for its
	 * carrier: act once. */
	if (pa.state != IBV_PORT_ACTIVE || f->port_active)
		return;
	if (mtu_bytes(pa.active_mtu) != f->active_mtu) {
		/* Receive buffers are sized for the old MTU: build anew. */
		log_notice("verbs: %s port %u active MTU changed %u -> %u", f->dev_name, f->port, f->active_mtu,
			   mtu_bytes(pa.active_mtu));
		dev_lost(f, "MTU change", false);
		return;
	}
	f->port_active = true;
	if (!qp_usable(f)) {
		dev_lost(f, "the QP is not in RTS after the link came back", false);
		return;
	}
	log_notice("verbs: %s port %u active: rejoining", f->dev_name, f->port);
	rejoin_all(f);
}

/* One device event for fabric f (already acked). */
static void handle_async(struct pubd_fabric *f, enum ibv_event_type type, int port)
{
	uint64_t held;

	if (!f->dev_ok || (port >= 0 && port != f->port))
		return;
	switch (type) {
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		f->cnt[VC_SRQ_LIMIT_EVENTS]++;
		if (ratelog_ok(&f->rl_srq_limit, &held))
			log_info(
				"verbs: %s SRQ fell below its low watermark %u: draining the CQ and refilling (%" PRIu64
				" more times since the last report)",
				f->dev_name, f->srq_wm, held);
		process_cq(f); /* consumed buffers sit in the CQ: drain reposts them */
		if (!f->dev_ok)
			break;
		rx_refill(f);
		f->cnt[VC_SRQ_REFILLS]++;
		rx_arm_limit(f);
		break;
	case IBV_EVENT_PORT_ERR:
		f->cnt[VC_PORT_ERR]++;
		log_warn("verbs: %s port %u down: leaving the groups until it is active", f->dev_name, f->port);
		port_went_down(f);
		break;
	case IBV_EVENT_PORT_ACTIVE:
		f->cnt[VC_PORT_ACTIVE]++;
		port_came_up(f);
		break;
	case IBV_EVENT_CLIENT_REREGISTER:
		/* The SM lost its records (ibacm rejoins here too). */
		f->cnt[VC_PORT_OTHER]++;
		log_notice("verbs: %s port %u: client reregister: rejoining", f->dev_name, f->port);
		port_went_down(f);
		port_came_up(f);
		break;
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_GID_CHANGE:
		/* On IB the kernel turns these into multicast errors for
		 * the affected joins, handled there. */
		f->cnt[VC_PORT_OTHER]++;
		log_info("verbs: %s port %u: %s", f->dev_name, f->port, ibv_event_type_str(type));
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_CQ_ERR:
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_DEVICE_FATAL:
		f->cnt[VC_FATAL_EVENTS]++;
		log_err("verbs: %s: %s", f->dev_name, ibv_event_type_str(type));
		dev_lost(f, ibv_event_type_str(type), type == IBV_EVENT_DEVICE_FATAL);
		return; /* the context is gone */
	default:
		log_debug("verbs: %s: %s", f->dev_name, ibv_event_type_str(type));
		break;
	}
}

/*
 * librdmacm opens each device once per process and hands the same
 * ibv_context to every id bound to it (librdmacm/cma.c, ucma_get_device),
 * so fabrics on one device share one async fd. A hub per context reads it
 * and routes each event to the fabric that owns the SRQ, QP or CQ named,
 * and port and device events to every fabric on the context. One loop
 * thread only, like the rest of pubd.
 */
struct async_hub {
	struct ibv_context *verbs;
	struct pubd_loop_watch *watch;
	struct pubd_fabric *fabrics[8];
	unsigned n;
	struct async_hub *next;
};

static struct async_hub *hubs;

static struct async_hub *hub_of(struct ibv_context *verbs)
{
	for (struct async_hub *h = hubs; h; h = h->next)
		if (h->verbs == verbs)
			return h;
	return NULL;
}

static bool hub_has(struct ibv_context *verbs, struct pubd_fabric *f)
{
	struct async_hub *h = hub_of(verbs);

	for (unsigned i = 0; h && i < h->n; i++)
		if (h->fabrics[i] == f)
			return true;
	return false;
}

static void on_async(void *ctx, uint32_t events)
{
	struct ibv_context *verbs = ctx;
	struct async_hub *h;
	struct ibv_async_event ae;

	while ((h = hub_of(verbs)) && ibv_get_async_event(verbs, &ae) == 0) {
		struct pubd_fabric *to[8];
		enum ibv_event_type type = ae.event_type;
		unsigned n = 0;
		int port = -1;

		switch (type) {
		case IBV_EVENT_SRQ_LIMIT_REACHED:
		case IBV_EVENT_SRQ_ERR:
			for (unsigned i = 0; i < h->n; i++)
				if (h->fabrics[i]->srq == ae.element.srq)
					to[n++] = h->fabrics[i];
			break;
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_PATH_MIG:
		case IBV_EVENT_PATH_MIG_ERR:
			for (unsigned i = 0; i < h->n; i++)
				if (h->fabrics[i]->qp == ae.element.qp)
					to[n++] = h->fabrics[i];
			break;
		case IBV_EVENT_CQ_ERR:
			for (unsigned i = 0; i < h->n; i++)
				if (h->fabrics[i]->cq == ae.element.cq)
					to[n++] = h->fabrics[i];
			break;
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_PKEY_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
		case IBV_EVENT_GID_CHANGE:
			port = ae.element.port_num;
			/* fall through */
		default:
			memcpy(to, h->fabrics, h->n * sizeof(*to));
			n = h->n;
			break;
		}
		/* Ack first: destroying the object waits for its acks
		 * (ibv_get_async_event(3)), and a handler may destroy it. */
		ibv_ack_async_event(&ae);
		for (unsigned i = 0; i < n; i++)
			if (hub_has(verbs, to[i])) /* an earlier handler may have torn it down */
				handle_async(to[i], type, port);
	}
	if (h && errno != EAGAIN && errno != EWOULDBLOCK) {
		/* Readable but failing (a disassociated device): the level-
		 * triggered fd would wake the loop for ever. Every fabric on the
		 * context rebuilds; the last one's teardown drops the hub. */
		struct pubd_fabric *to[8];
		unsigned n = h->n;
		int err = errno;

		memcpy(to, h->fabrics, n * sizeof(*to));
		log_err("verbs: reading the async events of %s: %s", ibv_get_device_name(verbs->device), strerror(err));
		for (unsigned i = 0; i < n; i++)
			if (hub_has(verbs, to[i]))
				dev_lost(to[i], "async event channel error", true);
	}
}

static int hub_attach(struct pubd_fabric *f)
{
	struct ibv_context *verbs = f->id->verbs;
	struct async_hub *h = hub_of(verbs);
	int ret;

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
		ret = set_nonblock(verbs->async_fd);
		if (!ret) {
			h->watch = pubd_loop_watch(f->loop, verbs->async_fd, EPOLLIN, on_async, verbs);
			if (!h->watch)
				ret = errno ? -errno : -ENOMEM;
		}
		if (ret) {
			free(h);
			return ret;
		}
		h->verbs = verbs;
		h->next = hubs;
		hubs = h;
	}
	if (h->n == sizeof(h->fabrics) / sizeof(h->fabrics[0]))
		return -EMFILE;
	h->fabrics[h->n++] = f;
	f->hub_attached = true;
	return 0;
}

static void hub_detach(struct pubd_fabric *f)
{
	struct async_hub *h, **pp;

	if (!f->hub_attached)
		return;
	f->hub_attached = false;
	h = hub_of(f->id->verbs);
	if (!h)
		return;
	for (unsigned i = 0; i < h->n; i++)
		if (h->fabrics[i] == f) {
			h->fabrics[i] = h->fabrics[--h->n];
			break;
		}
	if (h->n)
		return;
	pubd_loop_unwatch(h->watch);
	for (pp = &hubs; *pp != h; pp = &(*pp)->next)
		;
	*pp = h->next;
	free(h);
}

/* ---- device setup and teardown ---- */

static void dev_teardown(struct pubd_fabric *f)
{
	/* Strict reverse order of dev_setup; the cm id goes last. */
	hub_detach(f);
	if (f->comp_watch) {
		pubd_loop_unwatch(f->comp_watch);
		f->comp_watch = NULL;
	}
	for (unsigned i = 0; i < f->nmcs; i++) {
		struct vmc *m = &f->mcs[i];

		if (!m->used)
			continue;
		mc_leave(f, m); /* detaches the QP: before the QP goes */
		m->up = false;
		ah_retire(f, m->ah);
		m->ah = NULL;
	}
	/* The QP before the AHs (created after it, by join events): posted
	 * sends may still name them until the QP is gone. */
	if (f->qp) {
		rdma_destroy_qp(f->id);
		f->qp = NULL;
	}
	f->self_gid_ok = false;
	ah_reap(f, true);
	if (f->tx_mr) {
		ibv_dereg_mr(f->tx_mr);
		f->tx_mr = NULL;
	}
	free(f->tx_slab);
	f->tx_slab = NULL;
	if (f->rx_mr) {
		ibv_dereg_mr(f->rx_mr);
		f->rx_mr = NULL;
	}
	free(f->rx_slab);
	f->rx_slab = NULL;
	free(f->rx_free);
	f->rx_free = NULL;
	f->rx_nfree = 0;
	f->srq_posted = 0;
	if (f->srq) {
		ibv_destroy_srq(f->srq);
		f->srq = NULL;
	}
	if (f->cq) {
		if (f->cq_unacked)
			ibv_ack_cq_events(f->cq, f->cq_unacked);
		f->cq_unacked = 0;
		ibv_destroy_cq(f->cq);
		f->cq = NULL;
	}
	if (f->comp_ch) {
		ibv_destroy_comp_channel(f->comp_ch);
		f->comp_ch = NULL;
	}
	if (f->pd) {
		ibv_dealloc_pd(f->pd);
		f->pd = NULL;
	}
	if (f->id) {
		rdma_destroy_id(f->id);
		f->id = NULL;
	}
	f->tx_posted = f->tx_done = 0;
	/* tx_blocked survives: the daemon still waits for ev.writable, which
	 * try_rebuild gives it once there are credits again. */
	f->tx_retry_at = f->rx_retry_at = 0;
	f->port_check_at = 0;
	f->dev_ok = false;
	f->port_active = false;
}

static int create_qp(struct pubd_fabric *f)
{
	/* Try the most we would like first, then step down: not every
	 * provider takes IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (there is no
	 * capability bit for it) or inline data. */
	static const struct {
		bool block_lb;
		uint32_t inl;
	} tries[] = {{true, REQ_INLINE}, {false, REQ_INLINE}, {false, 0}};
	int ret = -EINVAL;

	for (unsigned t = 0; t < sizeof(tries) / sizeof(tries[0]); t++) {
		struct ibv_qp_init_attr_ex a = {
			.qp_type = IBV_QPT_UD,
			.send_cq = f->cq,
			.recv_cq = f->cq,
			.srq = f->srq,
			.sq_sig_all = 0,
			.cap = {.max_send_wr = f->sq_depth, .max_send_sge = 2, .max_inline_data = tries[t].inl},
			.comp_mask = IBV_QP_INIT_ATTR_PD,
			.pd = f->pd,
		};

		if (tries[t].block_lb) {
			a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
			a.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
		}
		/* rdma_create_qp_ex also moves a UD QP to RTS with the
		 * RDMA_UDP_QKEY (librdmacm/cma.c, ucma_init_ud_qp). */
		if (rdma_create_qp_ex(f->id, &a) == 0) {
			f->qp = f->id->qp;
			f->block_self_lb = tries[t].block_lb;
			f->max_inline = a.cap.max_inline_data;
			return 0;
		}
		ret = -errno;
		log_debug("verbs: UD QP on %s (block self loopback %d, inline %u): %s", f->dev_name, tries[t].block_lb,
			  tries[t].inl, strerror(-ret));
	}
	return ret;
}

/* While a rebuild keeps failing, its reasons are logged once per period
 * (try_rebuild), not on every attempt. */
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

static int dev_setup(struct pubd_fabric *f, bool quiet)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_srq_init_attr sa = {0};
	char where[sizeof(f->address) + 16];
	size_t sz;
	int ret;

	snprintf(where, sizeof(where), "fabric.address %s", f->address);
	ret = rdma_create_id(f->cm_ch, &f->id, f, RDMA_PS_UDP) ? -errno : 0;
	if (ret) {
		f->id = NULL;
		SETUP_ERR("verbs: rdma_create_id: %s", err_str(ret));
		goto fail;
	}
	ret = rdma_bind_addr(f->id, (struct sockaddr *)&f->bind_addr) ? -errno : 0;
	if (ret) {
		SETUP_ERR("verbs: %s: rdma_bind_addr: %s", where, err_str(ret));
		goto fail;
	}
	if (!f->id->verbs) {
		ret = -ENODEV;
		SETUP_ERR("verbs: %s is not on an RDMA device (rdma_bind_addr found none)", where);
		goto fail;
	}
	snprintf(f->dev_name, sizeof(f->dev_name), "%s", ibv_get_device_name(f->id->verbs->device));
	f->port = f->id->port_num;
	ret = -ibv_query_device(f->id->verbs, &da);
	if (!ret)
		ret = -ibv_query_port(f->id->verbs, f->port, &pa);
	if (ret) {
		SETUP_ERR("verbs: querying %s port %u: %s", f->dev_name, f->port, err_str(ret));
		goto fail;
	}
	if (da.max_mcast_grp == 0 || da.max_srq == 0) {
		ret = -EOPNOTSUPP;
		SETUP_ERR("verbs: %s cannot do %s (max_mcast_grp %d, max_srq %d)", f->dev_name,
			  da.max_mcast_grp == 0 ? "multicast" : "shared receive queues", da.max_mcast_grp, da.max_srq);
		goto fail;
	}
	f->link_layer = pa.link_layer;
	f->active_mtu = mtu_bytes(pa.active_mtu);
	f->port_active = pa.state == IBV_PORT_ACTIVE;
	if (f->cfg_mtu && f->cfg_mtu > f->active_mtu && !f->opened) {
		/* Sending more than the path MTU is not possible on UD (the
		 * device drops it without a word): refuse to start. */
		ret = -EINVAL;
		SETUP_ERR("verbs: fabric.mtu %u is larger than the active MTU %u of %s port %u (fabric.address %s): "
			  "set fabric.mtu to at most %u, or auto",
			  f->cfg_mtu, f->active_mtu, f->dev_name, f->port, f->address, f->active_mtu);
		goto fail;
	}
	if (f->cfg_mtu && f->cfg_mtu > f->active_mtu) {
		/* The port came back (or changed) with a smaller MTU while we
		 * run: failing the rebuild would leave the fabric down until
		 * someone edits the configuration. Run at the port's MTU, say so
		 * once, and go back to fabric.mtu when the port carries it. */
		if (!f->mtu_capped)
			log_err("verbs: fabric.mtu %u is larger than the active MTU %u of %s port %u now: sending "
				"datagrams of at most %u until the port carries %u again",
				f->cfg_mtu, f->active_mtu, f->dev_name, f->port, f->active_mtu, f->cfg_mtu);
		f->mtu_capped = true;
		f->mtu = f->active_mtu;
	} else {
		if (f->mtu_capped)
			log_notice("verbs: %s port %u carries fabric.mtu %u again (active MTU %u)", f->dev_name,
				   f->port, f->cfg_mtu, f->active_mtu);
		f->mtu_capped = false;
		f->mtu = f->cfg_mtu ? f->cfg_mtu : f->active_mtu;
	}
	if (f->srq_depth > (uint32_t)da.max_srq_wr) {
		SETUP_NOTE("verbs: srq_depth %u exceeds %s's max_srq_wr %d; using %d", f->srq_depth, f->dev_name,
			   da.max_srq_wr, da.max_srq_wr);
		f->srq_depth = (uint32_t)da.max_srq_wr;
	}
	if (f->sq_depth > (uint32_t)da.max_qp_wr) {
		SETUP_NOTE("verbs: send_queue_depth %u exceeds %s's max_qp_wr %d; using %d", f->sq_depth, f->dev_name,
			   da.max_qp_wr, da.max_qp_wr);
		f->sq_depth = (uint32_t)da.max_qp_wr;
	}
	if (f->srq_wm >= f->srq_depth) {
		ret = -EINVAL;
		SETUP_ERR("verbs: srq_low_watermark %u must be below srq_depth %u", f->srq_wm, f->srq_depth);
		goto fail;
	}
	if ((int)(f->srq_depth + f->sq_depth) > da.max_cqe) {
		ret = -EINVAL;
		SETUP_ERR("verbs: srq_depth + send_queue_depth (%u) exceeds %s's max_cqe %d",
			  f->srq_depth + f->sq_depth, f->dev_name, da.max_cqe);
		goto fail;
	}

	f->pd = ibv_alloc_pd(f->id->verbs);
	if (!f->pd) {
		ret = -errno;
		SETUP_ERR("verbs: ibv_alloc_pd on %s: %s", f->dev_name, err_str(ret));
		goto fail;
	}
	f->comp_ch = ibv_create_comp_channel(f->id->verbs);
	if (!f->comp_ch) {
		ret = -errno;
		SETUP_ERR("verbs: ibv_create_comp_channel on %s: %s", f->dev_name, err_str(ret));
		goto fail;
	}
	/* One CQ for both directions, deep enough for every posted receive
	 * and every send, so it cannot overrun. */
	f->cq = ibv_create_cq(f->id->verbs, (int)(f->srq_depth + f->sq_depth), f, f->comp_ch, 0);
	if (!f->cq) {
		ret = -errno;
		SETUP_ERR("verbs: ibv_create_cq(%u) on %s: %s", f->srq_depth + f->sq_depth, f->dev_name, err_str(ret));
		goto fail;
	}
	sa.attr.max_wr = f->srq_depth;
	sa.attr.max_sge = 1;
	f->srq = ibv_create_srq(f->pd, &sa);
	if (!f->srq) {
		ret = -errno;
		SETUP_ERR("verbs: ibv_create_srq(%u) on %s: %s", f->srq_depth, f->dev_name, err_str(ret));
		goto fail;
	}

	/* Receive slab: GRH + active MTU per buffer (not fabric.mtu: a peer
	 * may send up to the path MTU), rounded to a cache line. */
	f->rx_stride = (PUBD_GRH_LEN + f->active_mtu + 63) & ~(size_t)63;
	sz = f->rx_stride * f->srq_depth;
	if (posix_memalign((void **)&f->rx_slab, 4096, sz)) {
		f->rx_slab = NULL;
		ret = -ENOMEM;
		SETUP_ERR("verbs: no memory for %zu bytes of receive buffers", sz);
		goto fail;
	}
	memset(f->rx_slab, 0, sz);
	f->rx_mr = ibv_reg_mr(f->pd, f->rx_slab, sz, IBV_ACCESS_LOCAL_WRITE);
	if (!f->rx_mr) {
		ret = -errno;
		SETUP_ERR("verbs: registering %zu bytes of receive buffers on %s: %s (RLIMIT_MEMLOCK?)", sz,
			  f->dev_name, err_str(ret));
		goto fail;
	}
	f->rx_free = calloc(f->srq_depth, sizeof(*f->rx_free));
	if (!f->rx_free) {
		ret = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < f->srq_depth; i++)
		f->rx_free[i] = f->srq_depth - 1 - i;
	f->rx_nfree = f->srq_depth;

	f->tx_stride = (f->mtu + 63) & ~(size_t)63;
	sz = f->tx_stride * f->sq_depth;
	if (posix_memalign((void **)&f->tx_slab, 4096, sz)) {
		f->tx_slab = NULL;
		ret = -ENOMEM;
		SETUP_ERR("verbs: no memory for %zu bytes of send buffers", sz);
		goto fail;
	}
	memset(f->tx_slab, 0, sz);
	f->tx_mr = ibv_reg_mr(f->pd, f->tx_slab, sz, 0);
	if (!f->tx_mr) {
		ret = -errno;
		SETUP_ERR("verbs: registering %zu bytes of send buffers on %s: %s (RLIMIT_MEMLOCK?)", sz, f->dev_name,
			  err_str(ret));
		goto fail;
	}

	ret = create_qp(f);
	if (ret) {
		SETUP_ERR("verbs: creating a UD QP on %s: %s", f->dev_name, err_str(ret));
		goto fail;
	}
	f->signal_every = f->sq_depth / 4 ? f->sq_depth / 4 : 1;
	if (f->signal_every > 64)
		f->signal_every = 64;

	rx_refill(f);
	if (f->srq_posted == 0) {
		ret = -EIO;
		SETUP_ERR("verbs: could not post any receive buffer on %s", f->dev_name);
		goto fail;
	}
	f->srq_min_fill = f->srq_posted;
	rx_arm_limit(f);

	ret = set_nonblock(f->comp_ch->fd);
	if (ret)
		goto fail;
	ret = -ibv_req_notify_cq(f->cq, 0);
	if (ret) {
		SETUP_ERR("verbs: ibv_req_notify_cq on %s: %s", f->dev_name, err_str(ret));
		goto fail;
	}
	f->cq_armed = true;
	f->comp_watch = pubd_loop_watch(f->loop, f->comp_ch->fd, EPOLLIN, on_comp, f);
	if (!f->comp_watch) {
		ret = errno ? -errno : -ENOMEM;
		goto fail;
	}
	ret = hub_attach(f);
	if (ret) {
		SETUP_ERR("verbs: watching the async events of %s: %s", f->dev_name, err_str(ret));
		goto fail;
	}
	f->dev_ok = true;
	f->dev_retry_logged = 0;
	f->rebuilt_at = pubd_now_ns();
	f->port_check_at = f->rebuilt_at + PORT_CHECK_NS;
	f->tx_retry_at = f->rx_retry_at = 0;
	f->tx_retry_delay = f->rx_retry_delay = 0;
	arm_retry(f); /* the port check */
	log_notice("verbs: %s on %s port %u (%s), state %s, MTU %u (active %u), SRQ %u/%u posted, low watermark "
		   "%u, send queue %u, inline %u, self-loopback block %s",
		   f->address, f->dev_name, f->port, link_layer_name(f->link_layer), ibv_port_state_str(pa.state),
		   f->mtu, f->active_mtu, f->srq_posted, f->srq_depth, f->srq_wm, f->sq_depth, f->max_inline,
		   f->block_self_lb ? "on" : "unsupported (filtering by source id)");
	return 0;
fail:
	dev_teardown(f);
	return ret;
}
#undef SETUP_ERR
#undef SETUP_NOTE

static void rejoin_all(struct pubd_fabric *f)
{
	for (unsigned i = 0; i < f->nmcs; i++)
		if (f->mcs[i].used && f->mcs[i].refs && !f->mcs[i].joined) {
			f->cnt[VC_REJOINS]++;
			f->mcs[i].retry_delay = 0;
			mc_join(f, (int)i);
		}
}

/* Lose the device resources, tell the daemon every group is down, and try
 * to build them again from the retry timer. */
static void dev_lost(struct pubd_fabric *f, const char *why, bool removed)
{
	if (!f->dev_ok)
		return;
	log_warn("verbs: %s on %s: releasing the device and rebuilding", why, f->dev_name);
	/* Not usable from here on, also for joins the daemon makes from
	 * inside the group_state callbacks below. */
	f->dev_ok = false;
	for (unsigned i = 0; i < f->nmcs; i++)
		if (f->mcs[i].used) {
			f->mcs[i].retry_at = 0;
			mc_down(f, (int)i, -ENETDOWN);
		}
	dev_teardown(f);
	if (removed) {
		/* librdmacm keeps each device's ibv_context open until its
		 * device list is resynced, which only a GUID miss or
		 * rdma_get_devices() does (librdmacm/cma.c, sync_devices_list).
		 * Providers without disassociate (rxe) make the kernel's
		 * unregister wait for that close: resync now, so the context
		 * goes as soon as the last id on the device is destroyed. */
		struct ibv_context **l = rdma_get_devices(NULL);

		if (l)
			rdma_free_devices(l);
	}
	/* Resources that fail again soon after each rebuild (a fatal event
	 * or a send error that keeps coming) are rebuilt ever later, up to
	 * REBUILD_MAX_NS: never a rebuild loop at the speed of the fault. */
	uint64_t now = pubd_now_ns();

	if (f->rebuilt_at && now - f->rebuilt_at < REBUILD_STABLE_NS) {
		f->rebuild_delay = f->rebuild_delay ? f->rebuild_delay * 2 : DEV_RETRY_NS;
		if (f->rebuild_delay > REBUILD_MAX_NS)
			f->rebuild_delay = REBUILD_MAX_NS;
	} else {
		f->rebuild_delay = 0;
	}
	if (f->rebuild_delay)
		log_warn("verbs: %s: lost again %.1f s after the last rebuild: rebuilding in %.0f s", f->address,
			 (double)(now - f->rebuilt_at) / 1e9, (double)f->rebuild_delay / 1e9);
	f->dev_retry_at = now + f->rebuild_delay;
	arm_retry(f);
}

static void try_rebuild(struct pubd_fabric *f)
{
	uint64_t held = 0;
	/* The first failed attempt says why in full; later ones once per
	 * FAULT_LOG_NS, with the number of attempts in between. */
	bool say = ratelog_ok(&f->rl_rebuild, &held);
	int ret = dev_setup(f, !say);

	if (ret) {
		if (say)
			log_warn("verbs: %s: device not back yet (%s; %" PRIu64
				 " more attempts since the last report); retrying every second",
				 f->address, err_str(ret), held);
		f->dev_retry_logged++;
		f->dev_retry_at = pubd_now_ns() + DEV_RETRY_NS;
		arm_retry(f);
		return;
	}
	f->rl_rebuild = (struct ratelog){0};
	f->cnt[VC_REBUILDS]++;
	f->dev_retry_at = 0;
	arm_retry(f); /* the port check and retries of the new resources */
	if (f->mtu != f->told_mtu && f->ev.mtu_changed) {
		/* Before the rejoins: the daemon cuts for the new MTU before
		 * any group comes up again and its queue is offered. */
		f->told_mtu = f->mtu;
		f->ev.mtu_changed(f->ctx, f->mtu);
	}
	/* Credits are all back with the new send queue: a daemon that was
	 * waiting for them would otherwise wait for ever. */
	if (f->tx_blocked && f->dev_ok) {
		f->tx_blocked = false;
		f->ev.writable(f->ctx);
	}
	if (f->dev_ok)
		rejoin_all(f);
}

/* ---- timers ---- */

static void on_kick(void *ctx, uint64_t now)
{
	struct pubd_fabric *f = ctx;

	f->kicked = false;
	for (unsigned s = 0; s < f->nslots; s++) {
		struct vslot *v = &f->slots[s];

		if (!v->used || !v->notify)
			continue;
		v->notify = false;
		if (!v->up && f->mcs[v->mc].up) {
			v->up = true;
			f->ev.group_state(f->ctx, (int)s, true, 0);
		}
	}
	if (f->cq)
		process_cq(f);
}

/*
 * Soft-RoCE (and some RoCE drivers) change a port's active MTU with the
 * netdev's MTU without any port event, and a UD send larger than it is
 * dropped without an error (rxe fakes its completion, IB spec C10-93.1.1):
 * read it once per PORT_CHECK_NS and rebuild for the new MTU.
 */
static void port_check(struct pubd_fabric *f, uint64_t now)
{
	struct ibv_port_attr pa;

	f->port_check_at = now + PORT_CHECK_NS;
	if (!f->port_active || ibv_query_port(f->id->verbs, f->port, &pa))
		return;
	if (pa.state == IBV_PORT_ACTIVE && mtu_bytes(pa.active_mtu) && mtu_bytes(pa.active_mtu) != f->active_mtu) {
		log_notice("verbs: %s port %u active MTU changed %u -> %u", f->dev_name, f->port, f->active_mtu,
			   mtu_bytes(pa.active_mtu));
		dev_lost(f, "MTU change", false);
	}
}

static void on_retry(void *ctx, uint64_t now)
{
	struct pubd_fabric *f = ctx;

	if (f->cm_resume_at && f->cm_resume_at <= now) {
		f->cm_resume_at = 0;
		pubd_loop_watch_mod(f->cm_watch, EPOLLIN);
	}
	if (f->dev_ok && f->rx_retry_at && f->rx_retry_at <= now) {
		f->rx_retry_at = 0;
		rx_refill(f);
	}
	if (f->dev_ok && f->tx_retry_at && f->tx_retry_at <= now) {
		f->tx_retry_at = 0;
		if (f->tx_blocked && f->tx_posted - f->tx_done < f->sq_depth) {
			f->tx_blocked = false;
			f->ev.writable(f->ctx); /* may post, fail and set tx_retry_at again */
		}
	}
	if (f->dev_ok && f->port_check_at && f->port_check_at <= now)
		port_check(f, now);
	if (!f->dev_ok) {
		if (f->dev_retry_at && f->dev_retry_at <= now)
			try_rebuild(f);
		else
			arm_retry(f);
		return;
	}
	for (unsigned i = 0; i < f->nmcs; i++) {
		struct vmc *m = &f->mcs[i];

		if (m->used && m->refs && m->retry_at && m->retry_at <= now && !m->joined) {
			f->cnt[VC_REJOINS]++;
			mc_join(f, (int)i);
		}
	}
	arm_retry(f);
}

/* ---- rdmacm events ---- */

/* The GID our datagrams leave with: the source GID of the AH a join
 * returns. rx() compares it with a looped-back datagram's source. */
static void note_self_gid(struct pubd_fabric *f, const struct ibv_ah_attr *ah)
{
	union ibv_gid gid;

	if (!ah->is_global || ibv_query_gid(f->id->verbs, f->port, ah->grh.sgid_index, &gid)) {
		f->self_gid_ok = false;
		return;
	}
	memcpy(f->self_gid, gid.raw, sizeof(f->self_gid));
	f->self_gid_ok = true;
}
/*
 * A join's event, already acknowledged: e is a copy of the event, and only
 * its values are used (the AH attributes, Q_Key, QPN and our context in
 * private_data), never what its pointers named. Acknowledged first because
 * what this may do waits for that acknowledgement: rdma_leave_multicast
 * (on an error, a failed AH, or a daemon that leaves a group from its
 * group_state callback) blocks until every event reported for the join is
 * acked, then frees the join that the ack would touch (librdmacm/cma.c).
 */
static void on_join_event(struct pubd_fabric *f, struct rdma_cm_event *e, enum rdma_cm_event_type type, int status)
{
	unsigned idx;
	uint32_t gen;
	struct vmc *m;

	join_ctx_decode(e->param.ud.private_data, &idx, &gen);
	if (idx >= f->nmcs || !f->mcs[idx].used || !f->mcs[idx].joined || !gen_matches(f->mcs[idx].gen, gen)) {
		/* A join left since (slot reused, group gone): not ours now. */
		log_debug("verbs: stale %s for join %u/%u ignored", rdma_event_str(type), idx, gen);
		return;
	}
	m = &f->mcs[idx];
	if (type == RDMA_CM_EVENT_MULTICAST_JOIN) {
		char mgid[INET6_ADDRSTRLEN];
		struct ibv_ah *ah = ibv_create_ah(f->pd, &e->param.ud.ah_attr);

		if (!ah) {
			int err = -errno;

			f->cnt[VC_JOIN_ERRORS]++;
			log_warn("verbs: %s joined but ibv_create_ah failed: %s; retrying", m->name, err_str(err));
			mc_down(f, (int)idx, err);
			mc_retry_later(f, m);
			return;
		}
		f->cnt[VC_JOINS]++;
		note_self_gid(f, &e->param.ud.ah_attr);
		ah_retire(f, m->ah); /* a rejoin or an upgrade replaces it */
		m->ah = ah;
		m->qpn = e->param.ud.qp_num;
		m->qkey = e->param.ud.qkey;
		m->mlid = e->param.ud.ah_attr.dlid;
		memcpy(m->mgid, e->param.ud.ah_attr.grh.dgid.raw, 16);
		memcpy(&m->dst4, m->mgid + 12, 4);
		m->pending = false;
		m->up = true;
		m->up_at = pubd_now_ns();
		/* librdmacm attached the QP for a full member; detach it at once
		 * if nobody listens yet. A failed attach for a listener leaves
		 * the group up for sending and tries again with the next
		 * listen(on) or rejoin. */
		m->attached = m->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER;
		f->cnt[VC_ATTACHES] += m->attached;
		mc_sync_attach(f, (int)idx);
		log_info("verbs: joined %s on %s as %s (mgid %s, qpn 0x%x, qkey 0x%x)", m->name, f->dev_name,
			 m->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER ? "send-only full member"
										: "full member",
			 inet_ntop(AF_INET6, m->mgid, mgid, sizeof(mgid)) ? mgid : "?", m->qpn, m->qkey);
		notify_slots(f, (int)idx, true, 0);
		return;
	}

	/* MULTICAST_ERROR: the join failed, or (IB) the SA/port dropped it. */
	f->cnt[VC_MC_ERRORS]++;
	log_warn("verbs: multicast error on %s (%s): %s", m->name, f->dev_name, status ? err_str(status) : "no status");
	bool was_sendonly = m->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER && m->pending;

	mc_down(f, (int)idx, status < 0 ? status : -EIO);
	if (was_sendonly && !m->no_sendonly) {
		/* Send-only joins need SM support on IB: fall back at once. */
		m->no_sendonly = true;
		f->cnt[VC_REJOINS]++;
		mc_join(f, (int)idx);
		return;
	}
	mc_retry_later(f, m);
}

static void on_cm(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;
	struct rdma_cm_event *e;

	while (rdma_get_cm_event(f->cm_ch, &e) == 0) {
		/* Copy what we need and ack before anything else: rdma_leave_
		 * multicast and rdma_destroy_id wait for the acks of their
		 * events (a single thread waiting for itself: for ever), and
		 * free what a later ack would write to. Every handler below
		 * runs on the copy only. */
		struct rdma_cm_event copy = *e;
		enum rdma_cm_event_type type = e->event;
		int status = e->status;
		bool ours = e->id == f->id;

		rdma_ack_cm_event(e);
		e = NULL;
		if (type == RDMA_CM_EVENT_MULTICAST_JOIN || type == RDMA_CM_EVENT_MULTICAST_ERROR) {
			/* ah_attr is copied by value; private_data is the context. */
			if (ours && f->dev_ok)
				on_join_event(f, &copy, type, status);
			continue;
		}
		if (!ours) {
			log_debug("verbs: %s for an old id ignored", rdma_event_str(type));
			continue;
		}
		switch (type) {
		case RDMA_CM_EVENT_ADDR_CHANGE:
			/* E.g. a bonding failover: the address may sit on another
			 * port or device now. */
			f->cnt[VC_ADDR_CHANGE]++;
			log_warn("verbs: address change for %s", f->address);
			dev_lost(f, "address change", false);
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			/* The id must be destroyed (rdma_get_cm_event(3)). */
			f->cnt[VC_DEVICE_REMOVAL]++;
			log_warn("verbs: device %s removed", f->dev_name);
			dev_lost(f, "device removal", true);
			break;
		default:
			log_debug("verbs: %s (status %d) ignored", rdma_event_str(type), status);
			break;
		}
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK) {
		uint64_t held;
		int err = errno;

		/* The fd stays readable while reading it fails: stop watching
		 * it for a second rather than spin on it. */
		if (ratelog_ok(&f->rl_cm, &held))
			log_warn("verbs: rdma_get_cm_event: %s (%" PRIu64
				 " more since the last report); pausing it for 1 s",
				 strerror(err), held);
		if (!pubd_loop_watch_mod(f->cm_watch, 0)) {
			f->cm_resume_at = pubd_now_ns() + DEV_RETRY_NS;
			arm_retry(f);
		}
	}
}

/* ---- ops ---- */

static void vclose(struct pubd_fabric *f);

static int vopen(struct pubd_fabric **out, const struct pubd_config *cfg, struct pubd_loop *loop,
		 const struct pubd_fabric_events *ev, void *ctx)
{
	struct pubd_fabric *f;
	int ret;

	*out = NULL;
	if (!cfg->fabric_address || !*cfg->fabric_address) {
		log_err("verbs: fabric.address is not set: it selects the RDMA device and port");
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->loop = loop;
	f->ev = *ev;
	f->ctx = ctx;
	f->last_rx_mc = -1;
	f->sendonly_ok = true;
	snprintf(f->address, sizeof(f->address), "%s", cfg->fabric_address);
	/* 0 means "not set" for every size: the documented defaults. */
	f->cfg_mtu = cfg->mtu;
	f->srq_depth = cfg->srq_depth ? cfg->srq_depth : 1024;
	f->srq_wm = cfg->srq_low_watermark ? cfg->srq_low_watermark : f->srq_depth / 4;
	f->sq_depth = cfg->send_queue_depth ? cfg->send_queue_depth : 512;
	/* Busy polling polls anyway, and arms after every drain. */
	f->linger_ns = cfg->busy_poll ? 0 : (uint64_t)cfg->rx_linger_us * 1000;
	/* A first guess of a microsecond a poll round; vlinger corrects it. */
	f->linger_polls = cfg->rx_linger_us ? cfg->rx_linger_us : 1;

	ret = parse_address(f->address, &f->bind_addr);
	if (ret) {
		log_err("verbs: fabric.address %s is neither an IP address nor an interface with one", f->address);
		goto fail;
	}
	f->cm_ch = rdma_create_event_channel();
	if (!f->cm_ch) {
		ret = -errno;
		log_err("verbs: rdma_create_event_channel: %s (is rdma_ucm loaded?)", err_str(ret));
		goto fail;
	}
	ret = set_nonblock(f->cm_ch->fd);
	if (ret)
		goto fail;
	f->cm_watch = pubd_loop_watch(loop, f->cm_ch->fd, EPOLLIN, on_cm, f);
	f->kick = pubd_loop_timer(loop, on_kick, f);
	f->retry = pubd_loop_timer(loop, on_retry, f);
	if (!f->cm_watch || !f->kick || !f->retry) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = dev_setup(f, false);
	if (ret)
		goto fail;
	f->opened = true;
	f->told_mtu = f->mtu;
	*out = f;
	return 0;
fail:
	vclose(f);
	return ret;
}

static void vclose(struct pubd_fabric *f)
{
	if (!f)
		return;
	dev_teardown(f);
	if (f->retry)
		pubd_loop_timer_free(f->retry);
	if (f->kick)
		pubd_loop_timer_free(f->kick);
	if (f->cm_watch)
		pubd_loop_unwatch(f->cm_watch);
	if (f->cm_ch)
		rdma_destroy_event_channel(f->cm_ch);
	free(f->dead);
	free(f->mcs);
	free(f->slots);
	free(f);
}

static int vjoin(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen,
		 enum pubd_join_mode mode)
{
	struct sockaddr_storage a;
	socklen_t alen;
	struct vmc *m;
	bool upgrade;
	int idx, ret;

	if (slot < 0 || slot >= MAX_SLOTS || !(mode & PUBD_JOIN_BOTH))
		return -EINVAL;
	ret = norm_group(addr, addrlen, &a, &alen);
	if (ret)
		return ret;
	if (a.ss_family == AF_INET ? !IN_MULTICAST(ntohl(((struct sockaddr_in *)&a)->sin_addr.s_addr))
				   : !IN6_IS_ADDR_MULTICAST(&((struct sockaddr_in6 *)&a)->sin6_addr))
		return -EINVAL;
	if ((unsigned)slot >= f->nslots) {
		unsigned cap = f->nslots ? f->nslots : 16;
		struct vslot *n;

		while (cap <= (unsigned)slot)
			cap *= 2;
		n = realloc(f->slots, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + f->nslots, 0, (cap - f->nslots) * sizeof(*n));
		f->slots = n;
		f->nslots = cap;
	}
	if (f->slots[slot].used)
		return -EEXIST;
	idx = mc_find_or_add(f, &a, alen);
	if (idx < 0)
		return idx;
	m = &f->mcs[idx];
	f->slots[slot] = (struct vslot){.used = true,
					.mc = idx,
					.mode = mode,
					.listening = (mode & PUBD_JOIN_RECV) && !(mode & PUBD_JOIN_IDLE)};
	m->refs++;
	upgrade = (mode & PUBD_JOIN_RECV) && m->joined && m->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	mc_update(f, idx);
	if (upgrade) {
		/* A send-only join is not attached to the QP: rejoin as a full
		 * member; the old AH keeps sends going until the new event. */
		mc_leave(f, m);
		mc_join(f, idx);
	} else if (!m->joined) {
		mc_join(f, idx);
	} else if (m->up) {
		mc_sync_attach(f, idx);
		f->slots[slot].notify = true;
		kick(f);
	}
	return 0;
}

static int vlisten(struct pubd_fabric *f, int slot, bool on)
{
	struct vslot *v;
	int ret;

	if (slot < 0 || (unsigned)slot >= f->nslots || !f->slots[slot].used)
		return -EBADSLT;
	v = &f->slots[slot];
	if (!(v->mode & PUBD_JOIN_RECV))
		return on ? -EINVAL : 0;
	if (v->listening == on)
		return 0;
	v->listening = on;
	ret = mc_sync_attach(f, v->mc);
	if (ret)
		v->listening = !on;
	return ret;
}

static void vleave(struct pubd_fabric *f, int slot)
{
	struct vmc *m;
	int idx;

	if (slot < 0 || (unsigned)slot >= f->nslots || !f->slots[slot].used)
		return;
	idx = f->slots[slot].mc;
	memset(&f->slots[slot], 0, sizeof(f->slots[slot]));
	m = &f->mcs[idx];
	if (--m->refs > 0) {
		mc_update(f, idx); /* a full join stays full: no need to churn */
		mc_sync_attach(f, idx);
		return;
	}
	mc_leave(f, m);
	ah_retire(f, m->ah);
	memset(m, 0, sizeof(*m)); /* gen 0: any late event is stale */
	if (f->last_rx_mc == idx)
		f->last_rx_mc = -1;
	arm_retry(f);
}

static int vsend(struct pubd_fabric *f, int slot, const struct pubd_tx_dgram *d, unsigned n)
{
	struct ibv_send_wr wr[POST_BATCH], *bad;
	struct ibv_sge sge[POST_BATCH][2];
	struct vmc *m;
	uint64_t credits;
	unsigned want, done = 0;

	if (slot < 0 || (unsigned)slot >= f->nslots || !f->slots[slot].used)
		return -EBADSLT;
	m = &f->mcs[f->slots[slot].mc];
	if (!f->dev_ok || !m->up || !m->ah)
		return -ENOTCONN;
	/* Refuse the whole batch before posting any of it: UD cannot carry
	 * more than the path MTU, and a datagram cut short is worse. */
	for (unsigned i = 0; i < n; i++)
		if ((uint64_t)d[i].hdr_len + d[i].payload_len > f->mtu) {
			f->cnt[VC_TX_TOO_BIG]++;
			return -EMSGSIZE;
		}
	credits = f->sq_depth - (f->tx_posted - f->tx_done);
	want = n < credits ? n : (unsigned)credits;
	if (want < n) {
		f->tx_blocked = true;
		f->cnt[VC_TX_NO_CREDITS]++;
	}
	while (done < want) {
		unsigned k = want - done < POST_BATCH ? want - done : POST_BATCH;
		int ret;

		for (unsigned i = 0; i < k; i++) {
			const struct pubd_tx_dgram *x = &d[done + i];
			uint64_t seq = f->tx_posted + i;
			uint32_t len = x->hdr_len + x->payload_len;
			struct ibv_send_wr *w = &wr[i];

			*w = (struct ibv_send_wr){
				.wr_id = TX_WRID | seq,
				.next = i + 1 < k ? &wr[i + 1] : NULL,
				.sg_list = sge[i],
				.opcode = IBV_WR_SEND,
				.wr.ud = {.ah = m->ah, .remote_qpn = m->qpn, .remote_qkey = m->qkey},
			};
			if (len <= f->max_inline) {
				/* Inline: the provider copies at post time, no lkey. */
				int ns = 0;

				if (x->hdr_len)
					sge[i][ns++] = (struct ibv_sge){(uintptr_t)x->hdr, x->hdr_len, 0};
				if (x->payload_len)
					sge[i][ns++] = (struct ibv_sge){(uintptr_t)x->payload, x->payload_len, 0};
				w->num_sge = ns;
				w->send_flags = IBV_SEND_INLINE;
				f->cnt[VC_TX_INLINE]++;
			} else {
				/* Slot seq % depth is free: credits keep at most
				 * sq_depth sends outstanding. */
				uint8_t *p = f->tx_slab + (size_t)(seq % f->sq_depth) * f->tx_stride;

				if (x->hdr_len) /* raw groups carry no header */
					memcpy(p, x->hdr, x->hdr_len);
				if (x->payload_len)
					memcpy(p + x->hdr_len, x->payload, x->payload_len);
				sge[i][0] = (struct ibv_sge){(uintptr_t)p, len, f->tx_mr->lkey};
				w->num_sge = 1;
			}
			/* Signal every Nth and the last of each post, so no
			 * unsignalled tail is left without a completion to
			 * return its credits. */
			if ((seq + 1) % f->signal_every == 0 || i + 1 == k)
				w->send_flags |= IBV_SEND_SIGNALED;
			f->cnt[VC_TX_BYTES] += len;
		}
		ret = ibv_post_send(f->qp, wr, &bad);
		if (ret) {
			unsigned ok = (unsigned)(bad - wr);
			uint64_t held;

			f->tx_posted += ok;
			done += ok;
			f->cnt[VC_TX_POST_ERRORS]++;
			f->cnt[VC_TX_DGRAMS] += ok;
			/* The WRs are well formed, so the device refused them (queue
			 * full, out of memory, or the QP left RTS): not the message's
			 * fault, so not a drop. Take the rest as out of credits and
			 * let the retry timer make it writable again, backing off
			 * while the posts keep failing; a QP that left RTS is
			 * rebuilt (qp_check). Answering writable at once would spin. */
			if (ratelog_ok(&f->rl_tx_post, &held))
				log_warn("verbs: ibv_post_send on %s: %s (%" PRIu64
					 " more failures since the last report); retrying with back-off",
					 f->dev_name, strerror(ret), held);
			f->qp_check = true;
			kick(f);
			f->tx_blocked = true;
			f->tx_retry_delay = f->tx_retry_delay ? f->tx_retry_delay * 2 : POST_RETRY_MIN_NS;
			if (f->tx_retry_delay > POST_RETRY_MAX_NS)
				f->tx_retry_delay = POST_RETRY_MAX_NS;
			f->tx_retry_at = pubd_now_ns() + f->tx_retry_delay;
			arm_retry(f);
			return (int)done;
		}
		f->tx_retry_delay = 0;
		f->tx_posted += k;
		done += k;
		f->cnt[VC_TX_DGRAMS] += k;
	}
	return (int)done;
}

static uint32_t vmtu(const struct pubd_fabric *f)
{
	return f->mtu;
}

static __attribute__((format(printf, 3, 4))) void row(struct pub_table_builder *tb, const char *key, const char *fmt,
						      ...)
{
	char v[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	pub_table_str(tb, key);
	pub_table_str(tb, v);
}

/* The kernel's own port counters, read now (never on the hot path). */
static void sysfs_counters(const struct pubd_fabric *f, struct pub_table_builder *tb, const char *sub)
{
	char dir[256], path[512], key[300], val[64];
	struct dirent **names = NULL;
	int n;

	snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/ports/%u/%s", f->dev_name, f->port, sub);
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return;
	for (int i = 0; i < n; i++) {
		FILE *fp;

		if (names[i]->d_name[0] == '.')
			goto next;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		fp = fopen(path, "re");
		if (!fp)
			goto next;
		if (fgets(val, sizeof(val), fp)) {
			val[strcspn(val, "\n")] = 0;
			snprintf(key, sizeof(key), "%s.%s", sub, names[i]->d_name);
			row(tb, key, "%s", val);
		}
		fclose(fp);
	next:
		free(names[i]);
	}
	free(names);
}

static void vstatus(const struct pubd_fabric *f, struct pub_table_builder *tb)
{
	unsigned joined = 0, up = 0, attached = 0;

	for (unsigned i = 0; i < f->nmcs; i++) {
		joined += f->mcs[i].used && f->mcs[i].joined;
		up += f->mcs[i].used && f->mcs[i].up;
		attached += f->mcs[i].used && f->mcs[i].attached;
	}
	row(tb, "fabric", "verbs");
	row(tb, "address", "%s", f->address);
	row(tb, "device", "%s", f->dev_ok ? f->dev_name : "(none: waiting for the device)");
	row(tb, "port", "%u", f->port);
	row(tb, "port_state", "%s", f->port_active ? "ACTIVE" : "down");
	row(tb, "link_layer", "%s", link_layer_name(f->link_layer));
	row(tb, "mtu", "%u", f->mtu);
	row(tb, "active_mtu", "%u", f->active_mtu);
	row(tb, "mtu_limited_by_port", "%s", f->mtu_capped ? "yes" : "no");
	row(tb, "srq_depth", "%u", f->srq_depth);
	row(tb, "srq_low_watermark", "%u", f->srq_wm);
	row(tb, "srq_fill", "%u", f->srq_posted);
	row(tb, "srq_min_fill", "%u", f->srq_min_fill);
	row(tb, "send_queue_depth", "%u", f->sq_depth);
	row(tb, "send_credits", "%" PRIu64, f->dev_ok ? f->sq_depth - (f->tx_posted - f->tx_done) : 0);
	row(tb, "max_inline", "%u", f->max_inline);
	row(tb, "self_loopback_block", "%s", f->block_self_lb ? "yes" : "no");
	if (f->qp)
		row(tb, "qp_num", "%u", f->qp->qp_num);
	if (f->self_gid_ok) {
		char gid[INET6_ADDRSTRLEN];

		if (inet_ntop(AF_INET6, f->self_gid, gid, sizeof(gid)))
			row(tb, "gid", "%s", gid);
	}
	row(tb, "groups_joined", "%u", joined);
	row(tb, "groups_up", "%u", up);
	row(tb, "groups_attached", "%u", attached);
	for (unsigned i = 0; i < VC__COUNT; i++)
		row(tb, counter_names[i], "%" PRIu64, f->cnt[i]);
	if (f->dev_ok) {
		sysfs_counters(f, tb, "counters");
		sysfs_counters(f, tb, "hw_counters");
	}
}

static int vpoll(struct pubd_fabric *f)
{
	bool more;

	return f->cq ? (int)drain_cq(f, CQ_BUDGET, &more) : 0;
}

/*
 * Datagrams come in trains (a fragmented message, a burst of publishes),
 * and sleeping on the CQ's event costs a wakeup, a read of the channel and
 * a re-arm each time: under a train, about one wakeup per two datagrams.
 * Instead, after a completion the CQ is left unarmed and polled once per
 * loop iteration (the loop does not sleep while this returns work, so the
 * clients' sockets are served between polls) until linger_ns have passed
 * without one; then it is armed and the loop may sleep. ibv_poll_cq does
 * not enter the kernel on most providers, rxe included.
 */
static int vlinger(struct pubd_fabric *f, bool busy)
{
	unsigned n;
	bool more;

	if (!f->cq || f->cq_armed)
		return 0; /* sleeping is safe: the next completion wakes us */
	n = drain_cq(f, CQ_BUDGET, &more);
	if (n || !f->cq) {
		f->linger_left = f->linger_polls;
		f->linger_t0 = 0;
		return (int)n;
	}
	if (busy)
		return 0; /* the loop comes round again anyway: not an idle poll */
	if (f->linger_left) {
		/* Idle polls are counted, not timed: reading the clock is a
		 * system call where a VM has no vDSO clock (Soft-RoCE under
		 * TCG). One linger in 4 is timed to recalibrate the count. */
		if (f->linger_left == f->linger_polls && f->linger_runs++ % 4 == 0)
			f->linger_t0 = pubd_now_ns();
		f->linger_left--;
		return 1;
	}
	if (f->linger_t0 && f->linger_ns) {
		uint64_t spent = pubd_now_ns() - f->linger_t0;
		uint64_t polls = spent ? (uint64_t)f->linger_polls * f->linger_ns / spent : f->linger_polls;

		/* Shorter at once (lingering too long only burns CPU); longer
		 * halfway, so one preempted run cannot make it ten times long. */
		if (polls > f->linger_polls)
			polls = (polls + f->linger_polls) / 2;
		f->linger_polls = (uint32_t)(polls < 1 ? 1 : polls > 1000000 ? 1000000 : polls);
		f->linger_t0 = 0;
	}
	/* The train is over: arm, and take what came in between. */
	if (!arm_cq(f))
		return 0;
	n = drain_cq(f, CQ_BUDGET, &more);
	if (more)
		kick(f);
	return (int)n;
}

const struct pubd_fabric_ops pubd_fabric_verbs_ops = {
	.name = "verbs",
	.open = vopen,
	.close = vclose,
	.join = vjoin,
	.leave = vleave,
	.listen = vlisten,
	.send = vsend,
	.mtu = vmtu,
	.status = vstatus,
	.poll = vpoll,
	.linger = vlinger,
};

int pubd_fabric_verbs_probe(const char *address, char *dev, size_t devlen)
{
	struct sockaddr_storage ss;
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	int ret;

	if (dev && devlen)
		dev[0] = 0;
	ret = parse_address(address, &ss);
	if (ret)
		return ret == -ENOENT ? -EADDRNOTAVAIL : ret;
	ch = rdma_create_event_channel();
	if (!ch) {
		ret = -errno;
		/* No rdma_cm device node or no RDMA device at all: not on one. */
		if (ret == -ENODEV || ret == -ENOENT || ret == -ENOSYS || ret == -ENXIO)
			ret = 0;
		goto out;
	}
	ret = rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) ? -errno : 0;
	if (ret) {
		id = NULL;
		if (ret == -ENODEV)
			ret = 0;
		goto out;
	}
	/* Binding resolves the address to the device and port that carry it;
	 * an address on a plain NIC binds with no device (id->verbs NULL). */
	ret = rdma_bind_addr(id, (struct sockaddr *)&ss) ? -errno : 0;
	if (ret) {
		if (ret == -ENODEV)
			ret = 0;
		goto out;
	}
	ret = id->verbs != NULL;
	if (ret && dev && devlen)
		snprintf(dev, devlen, "%s", ibv_get_device_name(id->verbs->device));
out:
	if (id)
		rdma_destroy_id(id);
	if (ch)
		rdma_destroy_event_channel(ch);
	return ret;
}
