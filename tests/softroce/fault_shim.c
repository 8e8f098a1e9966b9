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
 * ibv_post_send is an inline call through the context's ops table, so it
 * cannot be interposed by name: the QP's context gets a wrapper in its ops
 * table when rdmacm creates the QP (all QPs of the context then go through
 * it; pubd has one).
 */
static int (*real_post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int faulty_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	static unsigned long calls, failed;
	static double until;
	unsigned long from = 0;
	double secs = 0;

	calls++;
	if (sscanf(getenv("PUBD_FAULT_SEND_FAIL"), "%lu:%lf", &from, &secs) == 2 && calls >= from) {
		if (calls == from) {
			until = now_s() + secs;
			fprintf(stderr, "fault_shim: ibv_post_send fails from call #%lu for %g s\n", calls, secs);
		}
		if (now_s() < until) {
			failed++;
			*bad = wr;
			return ENOMEM;
		}
		if (until) {
			fprintf(stderr, "fault_shim: ibv_post_send works again at call #%lu (%lu failed)\n", calls,
				failed);
			until = 0;
		}
	}
	return real_post_send(qp, wr, bad);
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	static int (*real)(struct rdma_cm_id *, struct ibv_qp_init_attr_ex *);
	int ret;

	if (!real)
		real = (int (*)(struct rdma_cm_id *, struct ibv_qp_init_attr_ex *))next_sym("rdma_create_qp_ex");
	ret = real(id, attr);
	if (ret == 0 && getenv("PUBD_FAULT_SEND_FAIL") && id->qp->context->ops.post_send != faulty_post_send) {
		real_post_send = id->qp->context->ops.post_send;
		id->qp->context->ops.post_send = faulty_post_send;
	}
	return ret;
}
