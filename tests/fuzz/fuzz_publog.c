/* SPDX-License-Identifier: MIT */
/*
 * A client's shared-memory logs as a hostile client fills them, through the
 * real server (publog.c, dlog.c, admit.c) and engine on the fake fabric.
 * Each input: one client says HELLO asking for shared memory, maps the
 * logs pubd hands over, optionally subscribes, then plays records of
 * u8 op and its argument bytes (a short last record takes what is left):
 *   RAW     u16 off, u8 n, bytes   write bytes into the publish log's ring
 *   RECORD  u8 g, u16 len, u8 f    a record as libpub writes it (group g % 4,
 *                                  3 unknown; f bit 0: MORE, bit 1: a later
 *                                  piece, bit 2: PUB_SYNC's req_id) or not
 *   COMMIT  u64                    a raw commit word at the writer's tail
 *   CTL     u8 which, u64          the control page's claim, head, tail or
 *                                  reader_sleeping, as the client may set them
 *   SLOT    u8 s, u64              group log reader slot s % 4 in the deliver
 *                                  log's control page (how far the client
 *                                  says it has read a group log): any value,
 *                                  true or not (pubd's head must not follow
 *                                  a lie back, past the tail or into a record)
 *   DLOG    u16 off, u64           the deliver log as the client may write
 *                                  it: off 0xffff its head (read position),
 *                                  else 8 bytes at ring offset off * 8 (a
 *                                  commit word, a length): what pubd reads
 *                                  there when pubd ends the client (its
 *                                  unread records are kept until it hangs
 *                                  up, then nothing)
 *   RING                           the doorbell
 *   TURN    u8                     u8 % 8 + 1 loop turns
 *   READ                           the client reads its socket and its
 *                                  deliver log (releasing what it read)
 *   HANGUP                         the client closes its socket
 *   CLAIM                          a record claimed and never committed
 *   COMPLETE u8                    the fabric completes u8 % 8 + 1 of its
 *                                  oldest sends: the fake pins every lent
 *                                  payload it sends, as verbs sending in
 *                                  place does, until its send completes
 * Checked after each input, once the client is gone and the daemon settled:
 * no client, pause, queued output or transmit left; every byte taken from
 * the client budget given back; once the fabric's sends completed, no
 * message lent from a log any more; no log waiting to be read; per group,
 * published = sent by the fabric (nothing fails there), but nothing at all
 * sent for group c, a host group (scope: host); and the daemon's
 * dropped counter covers every drop counted by scope. Violations abort.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deliverlog_format.h"
#include "proto.h"
#include "publog_format.h"
#include "server_internal.h" /* white-box: the budget and the log counters */
#include "shmlog.h"
#include "test_daemon_harness.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NGROUPS 3
static const char *const group_names[] = {"a", "b", "c", "nosuch"};
static const char config[] = "limits:\n  max_message_size: 256KiB\n  publish_log: 64KiB\n  deliver_log: 64KiB\n"
			     "groups:\n"
			     "  - name: a\n    address: 239.79.1.1\n"
			     "  - name: b\n    address: 239.79.1.2\n    publish: [uid:54321]\n"
			     "  - name: c\n    scope: host\n";

enum op {
	O_RAW,
	O_RECORD,
	O_COMMIT,
	O_CTL,
	O_RING,
	O_TURN,
	O_READ,
	O_HANGUP,
	O_CLAIM,
	O_COMPLETE,
	O_SLOT,
	O_DLOG,
	O__COUNT
};

static struct hd H;
static bool started;
static uint64_t sent_by_slot[16];

struct client {
	struct hc c;
	uint8_t *pmap, *dmap;
	size_t plen, dlen;
	int fds[6];
	struct pub_shmlog_writer w;
	struct pub_shmlog_reader r;
};

struct run {
	const uint8_t *data;
	size_t size, pos;
	struct client cl;
	uint32_t req;
	bool dlog_written; /* DLOG wrote into the deliver log: its records are not all pubd's */
};

static void on_sent(void *ctx, int slot, const struct pubd_tx_dgram *d)
{
	struct pubd_wire_hdr w;
	uint8_t buf[2048];
	const uint8_t *p;
	size_t plen;

	(void)ctx;
	if (d->hdr_len + d->payload_len > sizeof(buf))
		abort();
	if (d->hdr_len)
		memcpy(buf, d->hdr, d->hdr_len);
	if (d->payload_len)
		memcpy(buf + d->hdr_len, d->payload, d->payload_len);
	if (pubd_wire_decode(buf, d->hdr_len + d->payload_len, &w, &p, &plen) != 0)
		abort();
	if (slot >= 0 && slot < 16)
		sent_by_slot[slot] += pubd_wire_msgs_completed(&w);
}

static void remove_files(void)
{
	unlink(H.sock_path);
	unlink(H.cfg_path);
	rmdir(H.dir);
}

static void start(void)
{
	if (hd_start(&H, NULL, config) < 0)
		abort();
	atexit(remove_files);
	pubd_fake_set_tap(H.fk, on_sent, NULL);
	pubd_fake_set_pin_lent(H.fk, true);
	started = true;
}

static uint8_t arg(const struct run *r, size_t i)
{
	return r->pos + i < r->size ? r->data[r->pos + i] : 0;
}

static uint64_t arg64(const struct run *r, size_t i)
{
	uint64_t v = 0;
	int k;

	for (k = 7; k >= 0; k--)
		v = v << 8 | arg(r, i + (size_t)k);
	return v;
}

static void take(struct run *r, size_t n)
{
	r->pos = r->pos + n < r->size ? r->pos + n : r->size;
}

/* HELLO with PUB_HELLO_F_SHM; the WELCOME, both SHM frames and 6 fds. */
static bool shm_connect(struct client *cl)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	uint8_t hello[64], buf[1024];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	ssize_t n = -1;
	int tries;

	if (hc_connect(&H, &cl->c, 0) < 0 ||
	    hc_write(&cl->c, hello, (size_t)pub_proto_enc_hello(hello, sizeof(hello), PUB_HELLO_F_SHM, "f", 1), 1000))
		return false;
	for (tries = 0; tries < 100 && n <= 0; tries++) {
		hd_turn(&H, 0);
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl);
		n = recvmsg(cl->c.fd, &mh, MSG_DONTWAIT);
	}
	cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(6 * sizeof(int)))
		abort(); /* the daemon must hand both logs to a client within budget */
	memcpy(cl->fds, CMSG_DATA(cm), sizeof(cl->fds));
	/* Sealed: the client cannot shrink what pubd reads and writes. */
	if (ftruncate(cl->fds[0], 0) == 0 || errno != EPERM)
		abort();
	cl->plen = pub_shmlog_map_len(64 * 1024);
	cl->dlen = cl->plen;
	cl->pmap = mmap(NULL, cl->plen, PROT_READ | PROT_WRITE, MAP_SHARED, cl->fds[0], 0);
	cl->dmap = mmap(NULL, cl->dlen, PROT_READ | PROT_WRITE, MAP_SHARED, cl->fds[3], 0);
	if (cl->pmap == MAP_FAILED || cl->dmap == MAP_FAILED ||
	    pub_shmlog_writer_init(&cl->w, cl->pmap, cl->plen, false) < 0 ||
	    pub_shmlog_reader_init(&cl->r, cl->dmap, cl->dlen, 0, 0, 0) < 0)
		abort();
	return true;
}

static void shm_close(struct client *cl)
{
	unsigned i;

	hc_close(&cl->c);
	if (cl->pmap && cl->pmap != MAP_FAILED)
		munmap(cl->pmap, cl->plen);
	if (cl->dmap && cl->dmap != MAP_FAILED)
		munmap(cl->dmap, cl->dlen);
	for (i = 0; i < 6; i++)
		close(cl->fds[i]);
}

static void ring(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		abort();
}

static void op_raw(struct run *r)
{
	uint32_t off = (uint32_t)(arg(r, 0) | arg(r, 1) << 8) & (r->cl.w.cap - 1), n = arg(r, 2), i;

	take(r, 3);
	for (i = 0; i < n && r->pos < r->size; i++, r->pos++)
		r->cl.pmap[PUB_SHMLOG_CTL_LEN + ((off + i) & (r->cl.w.cap - 1))] = r->data[r->pos];
}

static void op_record(struct run *r)
{
	const char *g = group_names[arg(r, 0) % 4];
	uint32_t len = (uint32_t)(arg(r, 1) | arg(r, 2) << 8) % 20000, flags = arg(r, 3), glen;
	bool later = flags & 2;
	uint8_t *b;

	take(r, 4);
	glen = later ? 0 : (uint32_t)strlen(g);
	b = pub_shmlog_claim(&r->cl.w, PUB_SHMLOG_MSG, flags & 1 ? PUB_SHMLOG_F_MORE : 0, len + (flags >> 3),
			     PUB_PUBLOG_HEAD + glen + len);
	if (!b)
		return; /* no room: pubd has not read enough yet */
	memset(b + pub_publog_put_head(b, flags & 4 ? ++r->req : 0, g, (uint8_t)glen), 'x', len);
	pub_shmlog_commit(&r->cl.w);
}

static void op_commit(struct run *r)
{
	uint64_t v = arg64(r, 0);

	take(r, 8);
	memcpy(r->cl.pmap + PUB_SHMLOG_CTL_LEN + (r->cl.w.tail & (r->cl.w.cap - 1)), &v, sizeof(v));
}

static void op_ctl(struct run *r)
{
	struct pub_shmlog_ctl *ctl = (struct pub_shmlog_ctl *)r->cl.pmap;
	uint8_t which = arg(r, 0);
	uint64_t v = arg64(r, 1);

	take(r, 9);
	switch (which % 4) {
	case 0:
		atomic_store(&ctl->claim, v);
		break;
	case 1:
		atomic_store(&ctl->head, v);
		break;
	case 2:
		atomic_store(&ctl->tail, v);
		break;
	default:
		atomic_store(&ctl->reader_sleeping, (uint32_t)v);
		break;
	}
}

static void op_slot(struct run *r)
{
	uint8_t slot = arg(r, 0) % 4;
	uint64_t v = arg64(r, 1);

	take(r, 9);
	atomic_store_explicit(pub_deliverlog_slot(r->cl.dmap, slot), v, memory_order_release);
}

static void op_dlog(struct run *r)
{
	uint32_t off = (uint32_t)(arg(r, 0) | arg(r, 1) << 8);
	uint64_t v = arg64(r, 2);

	take(r, 10);
	r->dlog_written = true;
	if (off == 0xffff)
		atomic_store(&((struct pub_shmlog_ctl *)r->cl.dmap)->head, v);
	else
		memcpy(r->cl.dmap + PUB_SHMLOG_CTL_LEN + ((off * 8) & (r->cl.r.cap - 8)), &v, 8);
}

/* What pubd sent: the socket drained, the deliver log read and given back. */
static void op_read(struct run *r)
{
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	uint8_t buf[4096];

	while (r->cl.c.fd >= 0 && read(r->cl.c.fd, buf, sizeof(buf)) > 0)
		;
	while (pub_shmlog_next(&r->cl.r, &v) == 1) {
		if (pub_deliverlog_decode(&v, &p) < 0) {
			if (r->dlog_written)
				break; /* what DLOG wrote there, not pubd */
			abort();       /* pubd wrote a record it should not have */
		}
		pub_shmlog_consume(&r->cl.r, &v);
	}
	if (pub_shmlog_release(&r->cl.r))
		ring(r->cl.fds[5]);
}

static void play(struct run *r, uint8_t op)
{
	unsigned n;

	switch (op % O__COUNT) {
	case O_RAW:
		op_raw(r);
		break;
	case O_RECORD:
		op_record(r);
		break;
	case O_COMMIT:
		op_commit(r);
		break;
	case O_CTL:
		op_ctl(r);
		break;
	case O_RING:
		ring(r->cl.fds[1]);
		break;
	case O_TURN:
		for (n = arg(r, 0) % 8 + 1, take(r, 1); n; n--)
			hd_turn(&H, 0);
		break;
	case O_READ:
		op_read(r);
		break;
	case O_HANGUP:
		hc_close(&r->cl.c);
		break;
	case O_CLAIM:
		if (pub_shmlog_claim(&r->cl.w, PUB_SHMLOG_MSG, 0, 10, PUB_PUBLOG_HEAD + 1 + 10))
			r->cl.w.open = NULL; /* ...and the writer dies before its commit */
		break;
	case O_COMPLETE:
		pubd_fake_complete(H.fk, arg(r, 0) % 8 + 1);
		take(r, 1);
		break;
	case O_SLOT:
		op_slot(r);
		break;
	case O_DLOG:
		op_dlog(r);
		break;
	}
}

struct snap {
	uint64_t published[NGROUPS], dropped, scoped;
};

static void snapshot(struct snap *s)
{
	unsigned i;

	s->dropped = H.d.counters[PUBD_CTR_MSG_DROPPED];
	s->scoped = pubd_drops_msg_total(&H.d.drops);
	for (i = 0; i < NGROUPS; i++) {
		struct pubd_group *g = hd_group(&H, group_names[i]);

		s->published[i] = g->published;
		s->scoped += pubd_drops_msg_total(&g->drops) + pubd_drops_msg_total(&g->sub_drops);
	}
}

static void settle_and_check(const struct snap *before)
{
	struct snap after;
	unsigned i, turns;

	/* Every send completes in the end: the pins go, so do the logs. */
	for (turns = 0; turns < 1000; turns++) {
		pubd_fake_complete(H.fk, pubd_fake_pinned(H.fk));
		if (!hd_turn(&H, 0) && !H.d.ipc.nclients && !H.d.tx.queued_msgs && !pubd_fake_pinned(H.fk))
			break;
	}
	pubd_fake_complete(H.fk, pubd_fake_pinned(H.fk));
	pubd_ipc_settle(&H.d.ipc);
	if (H.d.ipc.nclients || H.d.ipc.npaused || H.d.ipc.dirty || H.d.ipc.nlog_more || H.d.tx.queued_msgs)
		abort();
	if (H.d.ipc.charged) {
		fprintf(stderr, "client budget: %zu bytes still charged with no client\n", H.d.ipc.charged);
		abort();
	}
	/* No message still lent from a log that is gone; never more copied
	 * than lent. */
	if (H.d.ipc.lending || H.d.counters[PUBD_CTR_PUBLOG_LENT_COPIED] > H.d.counters[PUBD_CTR_PUBLOG_LENT])
		abort();
	/* No pinned payload copied away while the fabric read it in place. */
	if (pubd_fake_pin_broken(H.fk))
		abort();
	snapshot(&after);
	for (i = 0; i < NGROUPS; i++) {
		struct pubd_group *g = hd_group(&H, group_names[i]);

		uint64_t published = after.published[i] - before->published[i];

		/* A host group: nothing of it ever goes to the fabric. */
		if (g->host ? sent_by_slot[g->slot] != 0 : published != sent_by_slot[g->slot]) {
			fprintf(stderr, "group %s: published %llu, sent %llu\n", g->name, (unsigned long long)published,
				(unsigned long long)sent_by_slot[g->slot]);
			abort();
		}
	}
	if (after.dropped - before->dropped < after.scoped - before->scoped)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run r;
	struct snap before;
	uint8_t frame[300];

	if (!started)
		start();
	memset(&r, 0, sizeof(r));
	r.data = data;
	r.size = size;
	memset(sent_by_slot, 0, sizeof(sent_by_slot));
	snapshot(&before);
	if (!shm_connect(&r.cl))
		abort();
	/* The first byte's low bit: a subscriber to group a too (deliveries);
	 * the next: to c, the host group (its messages come straight from the
	 * publish log's records into the deliver or group log). */
	if (size && (data[0] & 1))
		hc_write(&r.cl.c, frame,
			 (size_t)pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_SUBSCRIBE, 1, "a", 1), 1000);
	if (size && (data[0] & 2))
		hc_write(&r.cl.c, frame,
			 (size_t)pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_SUBSCRIBE, 2, "c", 1), 1000);
	r.pos = size ? 1 : 0;
	while (r.pos < size) {
		uint8_t op = data[r.pos++];

		if (r.cl.c.fd < 0 && op % O__COUNT != O_TURN)
			continue; /* gone: only the daemon's turns are left to play */
		play(&r, op);
		hd_turn(&H, 0);
	}
	shm_close(&r.cl);
	settle_and_check(&before);
	return 0;
}
