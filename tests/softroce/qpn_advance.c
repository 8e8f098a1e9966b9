/* SPDX-License-Identifier: MIT */
/*
 * qpn_advance: move a device's next QP number forward, so that a test can
 * give two daemons on two rxe devices the same QP number (rxe hands QP
 * numbers out per device, cyclically, from its QP pool).
 *
 *   qpn_advance DEVICE NEXT
 *
 * Creates and destroys UD QPs on DEVICE until one got NEXT - 1, so the next
 * QP created there gets NEXT (if nothing else creates one in between).
 * Prints the number of the last QP it created. NEXT 0 creates one QP: a way
 * to read where the device stands. Exit 1 when the device is already past
 * NEXT - 1 (the pool would have to wrap) or on a verbs error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#define MAX_STEPS 100000

int main(int argc, char **argv)
{
	struct ibv_device **list = NULL;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	unsigned long next;
	uint32_t last = 0;
	int n, ret = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: qpn_advance DEVICE NEXT\n");
		return 1;
	}
	next = strtoul(argv[2], NULL, 0);
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (strcmp(ibv_get_device_name(list[i]), argv[1]) == 0)
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "qpn_advance: no device %s\n", argv[1]);
		goto out;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	if (!cq) {
		perror("qpn_advance: ibv_alloc_pd/ibv_create_cq");
		goto out;
	}
	for (int step = 0; step < MAX_STEPS; step++) {
		struct ibv_qp_init_attr a = {
			.send_cq = cq,
			.recv_cq = cq,
			.qp_type = IBV_QPT_UD,
			.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
		};
		struct ibv_qp *qp = ibv_create_qp(pd, &a);

		if (!qp) {
			perror("qpn_advance: ibv_create_qp");
			goto out;
		}
		last = qp->qp_num;
		ibv_destroy_qp(qp);
		if (next == 0 || last + 1 == next)
			break;
		if (step == 0 && last + 1 > next) {
			fprintf(stderr, "qpn_advance: %s is at QP %u, past %lu\n", argv[1], last, next - 1);
			goto out;
		}
	}
	if (next && last + 1 != next) {
		fprintf(stderr, "qpn_advance: %s did not reach QP %lu (at %u)\n", argv[1], next - 1, last);
		goto out;
	}
	printf("%u\n", last);
	ret = 0;
out:
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	return ret;
}
