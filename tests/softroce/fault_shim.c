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
