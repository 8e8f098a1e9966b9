/* SPDX-License-Identifier: MIT */
/*
 * ud_send: send well-formed pubd datagrams straight to a QP number over UD,
 * the way a hostile or confused peer could, not through a multicast join.
 *
 *   ud_send DEVICE SRC_IP DST_IP QPN GROUP COUNT
 *
 * From DEVICE port 1 (its RoCEv2 GID for SRC_IP), COUNT datagrams to QPN with
 * rdmacm's well-known Q_Key (RDMA_UDP_QKEY, 0x01234567), addressed to DST_IP:
 * a unicast address (the receiving port's own) or a multicast group address,
 * which reaches a host that joined the group whatever the QP number says.
 * Each carries a one-fragment pubd message of GROUP from source id
 * 0x5eed5eed5eed5eed, sequence 0..COUNT-1. Prints "sent COUNT". Exit 1 on
 * any error.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "wire.h"

#define UDP_QKEY  0x01234567u /* RDMA_UDP_QKEY: what rdmacm gives a UD QP */
#define SOURCE_ID 0x5eed5eed5eed5eedull
#define PAYLOAD	  "ud_send: not through a group join"

/* The GID index of DEV's port 1 that is the RoCEv2 GID of ip (::ffff:ip). */
static int find_gid(struct ibv_context *ctx, const char *dev, const uint8_t want[16])
{
	for (int i = 0; i < 256; i++) {
		union ibv_gid gid;
		char path[128], type[32] = "";
		FILE *fp;

		if (ibv_query_gid(ctx, 1, i, &gid))
			break;
		if (memcmp(gid.raw, want, 16))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d", dev, i);
		fp = fopen(path, "re");
		if (fp) {
			if (!fgets(type, sizeof(type), fp))
				type[0] = 0;
			fclose(fp);
		}
		if (strstr(type, "v2"))
			return i;
	}
	return -1;
}

static int v4_mapped(const char *text, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	return inet_pton(AF_INET, text, gid + 12) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct ibv_device **list = NULL;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_ah *ah = NULL;
	struct ibv_mr *mr = NULL;
	uint8_t sgid[16], dgid[16], buf[PUBD_WIRE_HDR_LEN + sizeof(PAYLOAD)];
	unsigned long qpn, count, sent = 0;
	int n, gid_index, ret = 1;

	if (argc != 7) {
		fprintf(stderr, "usage: ud_send DEVICE SRC_IP DST_IP QPN GROUP COUNT\n");
		return 1;
	}
	qpn = strtoul(argv[4], NULL, 0);
	count = strtoul(argv[6], NULL, 0);
	if (v4_mapped(argv[2], sgid) || v4_mapped(argv[3], dgid)) {
		fprintf(stderr, "ud_send: %s or %s is not an IPv4 address\n", argv[2], argv[3]);
		return 1;
	}
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (strcmp(ibv_get_device_name(list[i]), argv[1]) == 0)
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "ud_send: no device %s\n", argv[1]);
		goto out;
	}
	gid_index = find_gid(ctx, argv[1], sgid);
	if (gid_index < 0) {
		fprintf(stderr, "ud_send: %s port 1 has no RoCEv2 GID for %s\n", argv[1], argv[2]);
		goto out;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), 0) : NULL;
	if (!mr) {
		perror("ud_send: ibv_alloc_pd/ibv_create_cq/ibv_reg_mr");
		goto out;
	}
	struct ibv_qp_init_attr qa = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	};
	qp = ibv_create_qp(pd, &qa);
	if (!qp) {
		perror("ud_send: ibv_create_qp");
		goto out;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x5eed};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
		perror("ud_send: QP to INIT");
		goto out;
	}
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) {
		perror("ud_send: QP to RTR");
		goto out;
	}
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .sq_psn = 0};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		perror("ud_send: QP to RTS");
		goto out;
	}
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.grh = {.sgid_index = (uint8_t)gid_index, .hop_limit = 64},
		.port_num = 1,
	};

	memcpy(aa.grh.dgid.raw, dgid, 16);
	ah = ibv_create_ah(pd, &aa);
	if (!ah) {
		perror("ud_send: ibv_create_ah");
		goto out;
	}
	for (sent = 0; sent < count; sent++) {
		struct pubd_wire_hdr h = {
			.version = PUBD_WIRE_VERSION,
			.group_id = pubd_group_id(argv[5], strlen(argv[5])),
			.source_id = SOURCE_ID,
			.msg_seq = sent,
			.msg_len = sizeof(PAYLOAD),
			.frag_count = 1,
		};
		struct ibv_sge sge = {(uintptr_t)buf, sizeof(buf), mr->lkey};
		struct ibv_send_wr wr =
					   {
						   .wr_id = sent,
						   .sg_list = &sge,
						   .num_sge = 1,
						   .opcode = IBV_WR_SEND,
						   .send_flags = IBV_SEND_SIGNALED,
						   .wr.ud = {.ah = ah,
							     .remote_qpn = (uint32_t)qpn,
							     .remote_qkey = UDP_QKEY},
					   },
				   *bad;
		struct ibv_wc wc;
		int polled;

		pubd_wire_encode(&h, buf);
		memcpy(buf + PUBD_WIRE_HDR_LEN, PAYLOAD, sizeof(PAYLOAD));
		if (ibv_post_send(qp, &wr, &bad)) {
			perror("ud_send: ibv_post_send");
			goto out;
		}
		/* One at a time: a bounded busy poll (rxe completes in microseconds). */
		for (long spin = 0; (polled = ibv_poll_cq(cq, 1, &wc)) == 0 && spin < 100000000; spin++)
			;
		if (polled != 1 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "ud_send: send %lu: %s\n", sent,
				polled == 1 ? ibv_wc_status_str(wc.status) : "no completion");
			goto out;
		}
	}
	printf("sent %lu\n", sent);
	ret = 0;
out:
	if (ah)
		ibv_destroy_ah(ah);
	if (qp)
		ibv_destroy_qp(qp);
	if (mr)
		ibv_dereg_mr(mr);
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
