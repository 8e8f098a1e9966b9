/* SPDX-License-Identifier: MIT */
/*
 * An LD_PRELOAD library that injects rdmacm and verbs faults into a program
 * (pubd, in the Soft-RoCE cases), steered by environment variables:
 *
 *   PUBD_FAULT_JOIN_ERROR=N[,M...]  the Nth (1-based) RDMA_CM_EVENT_MULTICAST_JOIN
 *                                   the program reads becomes a MULTICAST_ERROR
 *                                   (status -ENETRESET), as the SA or the port
 *                                   would report a failed or dropped join
 *   PUBD_FAULT_AH_FAIL=N[,M...]     the Nth ibv_create_ah call fails (ENOMEM)
 *   PUBD_FAULT_SEND_FAIL=N:SECS     from the Nth ibv_post_send call on, every
 *                                   post fails (ENOMEM, nothing posted) for SECS
 *                                   seconds, as a provider out of queue space or
 *                                   memory would
 *   PUBD_FAULT_RECV_FAIL=N:SECS     the same for ibv_post_srq_recv
 *
 * Each injected fault is reported on stderr ("fault_shim: ..."), so the
 * program's log shows where it happened. The event keeps its librdmacm
 * bookkeeping (rdma_ack_cm_event counts it against the join whatever its
 * type says), so the program sees exactly what a real error looks like.
 * Single-threaded programs only: the counters are not atomic. Built with
 * _GNU_SOURCE (the project defines it) for RTLD_NEXT.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Is n one of the numbers in the comma-separated list env names? */
static bool listed(const char *env, unsigned long n)
{
	const char *s = getenv(env);

	while (s && *s) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);

		if (end == s)
			return false;
		if (v == n)
			return true;
		s = *end == ',' ? end + 1 : end;
	}
	return false;
}

static void *next_sym(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		fprintf(stderr, "fault_shim: %s not found: %s\n", name, dlerror());
		abort();
	}
	return p;
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	static int (*real)(struct rdma_event_channel *, struct rdma_cm_event **);
	static unsigned long joins;
	int ret;

	if (!real)
		real = (int (*)(struct rdma_event_channel *, struct rdma_cm_event **))next_sym("rdma_get_cm_event");
	ret = real(channel, event);
	if (ret == 0 && (*event)->event == RDMA_CM_EVENT_MULTICAST_JOIN) {
		joins++;
		if (listed("PUBD_FAULT_JOIN_ERROR", joins)) {
			fprintf(stderr, "fault_shim: MULTICAST_JOIN event #%lu turned into MULTICAST_ERROR\n", joins);
			(*event)->event = RDMA_CM_EVENT_MULTICAST_ERROR;
			(*event)->status = -ENETRESET;
		}
	}
	return ret;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	static struct ibv_ah *(*real)(struct ibv_pd *, struct ibv_ah_attr *);
	static unsigned long calls;

	if (!real)
		real = (struct ibv_ah * (*)(struct ibv_pd *, struct ibv_ah_attr *)) next_sym("ibv_create_ah");
	calls++;
	if (listed("PUBD_FAULT_AH_FAIL", calls)) {
		fprintf(stderr, "fault_shim: ibv_create_ah call #%lu fails with ENOMEM\n", calls);
		errno = ENOMEM;
		return NULL;
	}
	return real(pd, attr);
}

/*
 * ibv_post_send and ibv_post_srq_recv are inline calls through the
 * context's ops table, so they cannot be interposed by name: the QP's
 * context gets wrappers in its ops table when rdmacm creates the QP (all QPs
 * and SRQs of the context then go through them; pubd has one of each). pubd
 * posts its first receives after creating the QP.
 */
static int (*real_post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **);
static int (*real_post_srq_recv)(struct ibv_srq *, struct ibv_recv_wr *, struct ibv_recv_wr **);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One "fail from call N for SECS seconds" window, as env describes it. */
struct window {
	const char *env, *what;
	unsigned long calls, failed;
	double until;
};

static bool window_fails(struct window *w)
{
	unsigned long from = 0;
	double secs = 0;

	w->calls++;
	if (sscanf(getenv(w->env), "%lu:%lf", &from, &secs) != 2 || w->calls < from)
		return false;
	if (w->calls == from) {
		w->until = now_s() + secs;
		fprintf(stderr, "fault_shim: %s fails from call #%lu for %g s\n", w->what, w->calls, secs);
	}
	if (w->until && now_s() < w->until) {
		w->failed++;
		return true;
	}
	if (w->until) {
		fprintf(stderr, "fault_shim: %s works again at call #%lu (%lu failed)\n", w->what, w->calls, w->failed);
		w->until = 0;
	}
	return false;
}

static int faulty_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	static struct window w = {.env = "PUBD_FAULT_SEND_FAIL", .what = "ibv_post_send"};

	if (window_fails(&w)) {
		*bad = wr;
		return ENOMEM;
	}
	return real_post_send(qp, wr, bad);
}

static int faulty_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	static struct window w = {.env = "PUBD_FAULT_RECV_FAIL", .what = "ibv_post_srq_recv"};

	if (window_fails(&w)) {
		*bad = wr;
		return ENOMEM;
	}
	return real_post_srq_recv(srq, wr, bad);
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	static int (*real)(struct rdma_cm_id *, struct ibv_qp_init_attr_ex *);
	struct ibv_context_ops *ops;
	int ret;

	if (!real)
		real = (int (*)(struct rdma_cm_id *, struct ibv_qp_init_attr_ex *))next_sym("rdma_create_qp_ex");
	ret = real(id, attr);
	if (ret)
		return ret;
	ops = &id->qp->context->ops;
	if (getenv("PUBD_FAULT_SEND_FAIL") && ops->post_send != faulty_post_send) {
		real_post_send = ops->post_send;
		ops->post_send = faulty_post_send;
	}
	if (getenv("PUBD_FAULT_RECV_FAIL") && ops->post_srq_recv != faulty_post_srq_recv) {
		real_post_srq_recv = ops->post_srq_recv;
		ops->post_srq_recv = faulty_post_srq_recv;
	}
	return 0;
}
