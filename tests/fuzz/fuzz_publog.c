/* SPDX-License-Identifier: MIT */
/*
 * A client's shared-memory logs as a hostile client fills them, through the
 * real server (publog.c, dlog.c, admit.c, direct.c, direct_read.c) and
 * engine on the fake fabric.
 * Each input: one client says HELLO asking for shared memory, maps the
 * logs pubd hands over, optionally subscribes, then plays records of
 * u8 op and its argument bytes (a short last record takes what is left).
 *
 * The first byte says how:
 *   bit 0    a subscriber to group a too (deliveries)
 *   bit 1    a subscriber to c, the host group (its messages go straight
 *            from the log's records into the deliver or group log)
 *   bit 3    direct mode: HELLO with PUB_HELLO_F_DIRECT too (7 fds: the
 *            logs and the wake page), then PUB_FRAME_DIRECT for the group
 *            bits 4-5 name (a, b, c, nosuch). a and c must be granted (an
 *            SHM frame PUB_SHM_DIRECT_LOG with its 3 fds, then OK), b (its
 *            publish ACL does not allow us) and nosuch refused (ERROR, no
 *            fd): then the client falls back to its publish log. Once
 *            granted, the ops below that write "the log" write the direct
 *            log, in the deliver log's record format (deliverlog_format.h)
 *   bit 6    direct mode: the subscriptions (bits 0, 1) are made, and
 *            answered, before the direct log is asked for (pubd hands it
 *            to its readers at once: WAKER frames before the OK), else
 *            after it
 *   bit 7    direct mode: the direct log is asked for twice (the second
 *            must be refused)
 *
 * Ops ("the log": the direct log when one was granted, else the publish log):
 *   RAW     u16 off, u8 n, bytes   write bytes into the log's ring
 *   RECORD  u8 g, u16 len, u8 f    a record as libpub writes it (group g % 4,
 *                                  3 unknown; f bit 0: MORE, bit 1: a later
 *                                  piece, bit 2: PUB_SYNC's req_id, f >> 3
 *                                  added to the message length) or not; in
 *                                  a direct log the req_id is in the source
 *                                  field, the writer's seq counts messages
 *   COMMIT  u64                    a raw commit word at the writer's tail
 *   CTL     u8 which, u64          the control page's claim, head, tail or
 *                                  reader_sleeping (which % 4), as the client
 *                                  may set them; in a direct log which % 12:
 *                                  those, latest, lazy, retired, wakers_gen,
 *                                  wakers_seen (top bit of the u64: the
 *                                  wakers_gen pubd published, as an honest
 *                                  writer acknowledges it), writer_waiting,
 *                                  closed, or the header's capacity and
 *                                  max_record words
 *   SLOT    u8 s, u64              group log reader slot s % 4 in the deliver
 *                                  log's control page (how far the client
 *                                  says it has read a group log): any value,
 *                                  true or not (pubd's head must not follow
 *                                  a lie back, past the tail or into a record);
 *                                  direct mode with s bit 7: the lost count
 *                                  of slot s % 4 in the client's wake page
 *                                  (what a reader of a direct log says it
 *                                  lost), with bit 6 too its position word
 *                                  (where it says it is: tag and seq)
 *   DLOG    u16 off, u64           the deliver log as the client may write
 *                                  it: off 0xffff its head (read position),
 *                                  else 8 bytes at ring offset off * 8 (a
 *                                  commit word, a length): what pubd reads
 *                                  there when pubd ends the client (its
 *                                  unread records are kept until it hangs
 *                                  up, then nothing)
 *   RING                           the log's doorbell
 *   TURN    u8                     u8 % 8 + 1 loop turns; direct mode, bit 7:
 *                                  then pubd's tick (pubd_ipc_tick, which reads
 *                                  lazy direct logs and frees retired ones),
 *                                  at now (bit 6) or as limits.group_log_drain_ms
 *                                  later
 *   READ                           the client reads its socket and its
 *                                  deliver log (releasing what it read)
 *   HANGUP                         the client closes its socket
 *   CLAIM                          a record claimed and never committed
 *   COMPLETE u8                    the fabric completes u8 % 8 + 1 of its
 *                                  oldest sends: the fake pins every lent
 *                                  payload it sends, as verbs sending in
 *                                  place does, until its send completes
 *   RELOAD  u8                     reload with config variant u8 % 3: as
 *                                  started, c's publish ACL closed to us, or
 *                                  a's subscribe ACL (a change of a's
 *                                  retires its direct logs, live, with
 *                                  readers; c closed to us retires ours of
 *                                  c; c opened again retires nothing)
 *   UNSUB   u8                     UNSUBSCRIBE from group u8 % 4 while
 *                                  connected: pubd counts what the client
 *                                  left unread in that group's logs from
 *                                  where its slot (or wake page) says it is
 *
 * Checked while the input plays: pubd never crashes or aborts, whatever the
 * logs hold; the client budget never holds less than the mappings of the
 * logs still charged to it (a byte given back twice would hide there); and,
 * while the client wrote its logs honestly (no RAW, COMMIT or CTL yet), every
 * message byte the fabric sends is one the client wrote ('x'), both when it
 * is sent and, for a payload sent in place from a lent record, when the
 * send completes (a device reads it until then: the fake pins it until
 * COMPLETE, and pubd must neither punch nor reuse it before). Checked after
 * each input, once the client is gone and the daemon settled: no client,
 * pause, queued output or transmit left; no direct log live (its client
 * gone, each was retired), and every retired one freed by a tick
 * limits.group_log_drain_ms after; as many direct logs retired as opened;
 * every byte taken from the client budget given back (the direct log is
 * charged to it: limits.direct_log); once the fabric's sends completed, no
 * message lent from a log any more; no log waiting to be read; per group,
 * published = sent by the fabric (nothing fails there), but nothing at all
 * sent for group c, a host group (scope: host); and the daemon's
 * dropped counter covers every drop counted by scope. These hold for
 * direct logs as they are: what pubd reads of one is published as from the
 * publish log (to the fabric, counted), what it leaves is counted
 * client_gone, and the lost counts a reader claims are sub_overflow drops
 * counted in the daemon's dropped counter too. Violations abort.
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
#include <sys/stat.h>
#include <unistd.h>

#include "deliverlog_format.h"
#include "directlog.h"
#include "loop.h"
#include "proto.h"
#include "publog_format.h"
#include "server_internal.h" /* white-box: the budget, the log counters, the direct logs */
#include "shmlog.h"
#include "test_daemon_harness.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NGROUPS	   3
#define UNSUBS_MAX 8
#define LOG_CAP	   (64u * 1024)
static const char *const group_names[] = {"a", "b", "c", "nosuch"};
static const char config[] = "limits:\n  max_message_size: 256KiB\n  publish_log: 64KiB\n  deliver_log: 64KiB\n"
			     "  direct_log: 64KiB\n  group_log_drain_ms: 10\n"
			     "groups:\n"
			     "  - name: a\n    address: 239.79.1.1\n"
			     "  - name: b\n    address: 239.79.1.2\n    publish: [uid:54321]\n"
			     "  - name: c\n    scope: host\n";
/* What RELOAD swaps in: who may publish to c, or subscribe to a, changes
 * (each retires the group's direct logs it must; the second ends a
 * subscription). */
#define CONFIG_HEAD                                                                         \
	"limits:\n  max_message_size: 256KiB\n  publish_log: 64KiB\n  deliver_log: 64KiB\n" \
	"  direct_log: 64KiB\n  group_log_drain_ms: 10\n"                                   \
	"groups:\n"
static const char *const variants[] = {
	config,
	CONFIG_HEAD "  - name: a\n    address: 239.79.1.1\n"
		    "  - name: b\n    address: 239.79.1.2\n    publish: [uid:54321]\n"
		    "  - name: c\n    scope: host\n    publish: [uid:54321]\n",
	CONFIG_HEAD "  - name: a\n    address: 239.79.1.1\n    subscribe: [uid:54321]\n"
		    "  - name: b\n    address: 239.79.1.2\n    publish: [uid:54321]\n"
		    "  - name: c\n    scope: host\n",
};
static unsigned variant; /* the one the daemon runs */

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
	O_RELOAD,
	O_UNSUB,
	O__COUNT
};

/* The first byte's bits. */
#define IN_SUB_A	0x01
#define IN_SUB_C	0x02
#define IN_DIRECT	0x08
#define IN_GROUP_SHIFT	4
#define IN_SUB_FIRST	0x40
#define IN_DIRECT_TWICE 0x80

/* Request ids of the setup's frames. */
#define REQ_SUB_A  1
#define REQ_SUB_C  2
#define REQ_DIRECT 100

static struct hd H;
static bool started;
static uint64_t sent_by_slot[16];
/* The client wrote nothing yet that an honest writer would not: every
 * message byte sent is then one it wrote. */
static bool honest;

struct client {
	struct hc c;
	uint8_t *pmap, *dmap, *wake, *xmap; /* publish, deliver log, wake page, direct log */
	size_t plen, dlen, xlen;
	int fds[7];  /* the logs' (and the wake page's, direct mode) */
	int xfds[3]; /* the direct log's memfd, doorbell, space */
	struct pub_shmlog_writer w, xw;
	struct pub_shmlog_reader r;
};

struct run {
	const uint8_t *data;
	size_t size, pos;
	struct client cl;
	uint32_t req;
	unsigned unsubs;   /* UNSUB ops played: a few an input */
	bool dlog_written; /* DLOG wrote into the deliver log: its records are not all pubd's */
	bool direct_mode;  /* HELLO asked for the direct path */
	bool direct;	   /* a direct log was granted: "the log" is it */
	uint64_t seq;	   /* the direct log writer's count of its messages */
	/* The log the ops write: the direct log, or the publish log. */
	uint8_t *lmap;
	struct pub_shmlog_writer *lw;
	int bell;
};

/*
 * The sends the fake pinned (lent payloads sent in place), oldest first, as
 * it completes them: a device reading in place reads the payload until the
 * completion, so the bytes must still be the client's then (a log freed or
 * punched under a send would show here).
 */
#define PINQ 4096

static struct pinned {
	const uint8_t *p;
	size_t n;
} pinq[PINQ];
static size_t pinq_head, pinq_len;

/* The payload bytes of a message the client wrote: all 'x'. */
static void check_bytes(const uint8_t *p, size_t n)
{
	size_t i;

	if (!honest)
		return;
	for (i = 0; i < n; i++)
		if (p[i] != 'x') {
			fprintf(stderr, "sent a byte the client never wrote (0x%02x at %zu of %zu)\n", p[i], i, n);
			abort();
		}
}

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
	if (d->lent) {
		/* Pinned by the fake until completed (pin_lent). */
		if (pinq_len == PINQ)
			abort();
		pinq[(pinq_head + pinq_len++) % PINQ] =
			(struct pinned){.p = (w.flags & PUBD_WIRE_F_BATCH) ? NULL : d->payload, .n = d->payload_len};
	}
	if (w.flags & PUBD_WIRE_F_BATCH) {
		struct pubd_wire_batch_iter it;
		const struct pubd_wire_hdr *m;
		const uint8_t *b;
		size_t blen;

		pubd_wire_batch_begin(&it, &w, p, plen);
		while (pubd_wire_batch_next(&it, &m, &b, &blen))
			check_bytes(b, blen);
	} else if (!(w.flags & (PUBD_WIRE_F_HEARTBEAT | PUBD_WIRE_F_CONTROL))) {
		check_bytes(p, plen);
	}
}

/* The fabric completes its n oldest sends: what they read in place is
 * checked first. */
static void complete(size_t n)
{
	if (pinq_len != pubd_fake_pinned(H.fk)) {
		fprintf(stderr, "pinned sends: the fake holds %zu, the tap saw %zu\n", pubd_fake_pinned(H.fk),
			pinq_len);
		abort();
	}
	if (n > pinq_len)
		n = pinq_len;
	for (; n; n--, pinq_len--, pinq_head = (pinq_head + 1) % PINQ) {
		const struct pinned *e = &pinq[pinq_head];

		if (e->p)
			check_bytes(e->p, e->n);
		pubd_fake_complete(H.fk, 1);
	}
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

/* Sealed: the client cannot shrink what pubd reads and writes. */
static void check_sealed(int fd, size_t len)
{
	struct stat st;

	if (ftruncate(fd, 0) == 0 || errno != EPERM || fstat(fd, &st) < 0 || (size_t)st.st_size < len)
		abort();
}

/* HELLO with PUB_HELLO_F_SHM (and PUB_HELLO_F_DIRECT); the WELCOME, the SHM
 * frames and their 6 fds (7: the wake page's too). */
static bool shm_connect(struct client *cl, bool direct)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	uint8_t hello[64], buf[1024];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	unsigned nfds = direct ? 7 : 6;
	ssize_t n = -1;
	int tries;

	if (hc_connect(&H, &cl->c, 0) < 0 ||
	    hc_write(&cl->c, hello,
		     (size_t)pub_proto_enc_hello(hello, sizeof(hello),
						 PUB_HELLO_F_SHM | (direct ? PUB_HELLO_F_DIRECT : 0), "f", 1),
		     1000))
		return false;
	for (tries = 0; tries < 100 && n <= 0; tries++) {
		hd_turn(&H, 0);
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl);
		n = recvmsg(cl->c.fd, &mh, MSG_DONTWAIT);
	}
	cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(nfds * sizeof(int)))
		abort(); /* the daemon must hand both logs (and the wake page) to a client within budget */
	memcpy(cl->fds, CMSG_DATA(cm), nfds * sizeof(int));
	check_sealed(cl->fds[0], pub_shmlog_map_len(LOG_CAP));
	cl->plen = pub_shmlog_map_len(LOG_CAP);
	cl->dlen = cl->plen;
	cl->pmap = mmap(NULL, cl->plen, PROT_READ | PROT_WRITE, MAP_SHARED, cl->fds[0], 0);
	cl->dmap = mmap(NULL, cl->dlen, PROT_READ | PROT_WRITE, MAP_SHARED, cl->fds[3], 0);
	if (cl->pmap == MAP_FAILED || cl->dmap == MAP_FAILED ||
	    pub_shmlog_writer_init(&cl->w, cl->pmap, cl->plen, false) < 0 ||
	    pub_shmlog_reader_init(&cl->r, cl->dmap, cl->dlen, 0, 0, 0) < 0)
		abort();
	if (direct) {
		cl->wake = mmap(NULL, PUB_WAKE_PAGE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, cl->fds[6], 0);
		if (cl->wake == MAP_FAILED || ((struct pub_wake_page *)cl->wake)->magic != PUB_WAKE_PAGE_MAGIC)
			abort();
	}
	return true;
}

/* ---- the setup's replies, read with their fds ---- */

#define RX_FDS 32

struct rx {
	uint8_t buf[16384];
	size_t len;
	int fdq[RX_FDS];
	unsigned nfd;
};

static void rx_fill(struct client *cl, struct rx *x)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 16)];
	} ctl;
	struct iovec iov = {.iov_base = x->buf + x->len, .iov_len = sizeof(x->buf) - x->len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	ssize_t n;

	if (!iov.iov_len)
		abort(); /* the setup's replies are small */
	n = recvmsg(cl->c.fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return;
	if (mh.msg_flags & MSG_CTRUNC)
		abort(); /* more fds in one message than pubd sends */
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		unsigned k, i;
		int fds[16];

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(cm), k * sizeof(int));
		for (i = 0; i < k; i++) {
			if (x->nfd == RX_FDS)
				abort();
			x->fdq[x->nfd++] = fds[i];
		}
	}
	x->len += (size_t)n;
}

/* The fds an SHM frame of this kind carries (proto.h). */
static unsigned shm_fds(uint32_t kind)
{
	switch (kind) {
	case PUB_SHM_PUBLISH_LOG:
	case PUB_SHM_DELIVER_LOG:
	case PUB_SHM_DIRECT_LOG:
		return 3;
	case PUB_SHM_WAKER:
		return 2;
	case PUB_SHM_GROUP_LOG:
	case PUB_SHM_WAKE_PAGE:
	case PUB_SHM_DIRECT_READ:
		return 1;
	default:
		return 0;
	}
}

static void rx_drop_fds(struct rx *x)
{
	while (x->nfd)
		close(x->fdq[--x->nfd]);
}

/*
 * Read frames until the reply to req: 1 for OK, 0 for ERROR (*code). An SHM
 * frame of kind DIRECT_LOG on the way is kept in *shm with its fds in
 * xfds (xfds NULL: none may come); every other fd is closed.
 */
static int rx_reply(struct client *cl, struct rx *x, uint32_t req, uint32_t *code, struct pub_msg_shm *shm, int *xfds,
		    bool *got)
{
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		uint8_t type;
		uint32_t blen;
		const uint8_t *body;
		size_t need, flen;
		int k;

		k = pub_proto_frame_peek(x->buf, x->len, sizeof(x->buf), &type, &blen, &body, &need);
		if (k < 0)
			abort(); /* pubd wrote a frame it should not have */
		if (k == 0) {
			hd_turn(&H, 0);
			rx_fill(cl, x);
			continue;
		}
		flen = PUB_PROTO_HDR_LEN + (size_t)blen;
		if (type == PUB_FRAME_SHM) {
			struct pub_msg_shm m;
			unsigned n, i;

			if (pub_proto_dec_shm(body, blen, &m) < 0)
				abort();
			n = shm_fds(m.kind);
			if (x->nfd < n)
				abort(); /* the fds go with the frame's first byte */
			if (m.kind == PUB_SHM_DIRECT_LOG) {
				/* Only to what we asked, once. */
				if (!xfds || *got)
					abort();
				*shm = m;
				memcpy(xfds, x->fdq, 3 * sizeof(int));
				*got = true;
			} else {
				for (i = 0; i < n; i++)
					close(x->fdq[i]);
			}
			x->nfd -= n;
			memmove(x->fdq, x->fdq + n, x->nfd * sizeof(int));
		} else if (type == PUB_FRAME_OK || type == PUB_FRAME_ERROR) {
			struct pub_msg_error e;
			struct pub_msg_ok o;
			int res = -1;

			if (type == PUB_FRAME_OK && pub_proto_dec_ok(body, blen, &o) == 0 && o.req_id == req)
				res = 1;
			if (type == PUB_FRAME_ERROR && pub_proto_dec_error(body, blen, &e) == 0 && e.req_id == req) {
				*code = e.code;
				res = 0;
			}
			if (res >= 0) {
				x->len -= flen;
				memmove(x->buf, x->buf + flen, x->len);
				return res;
			}
		}
		x->len -= flen;
		memmove(x->buf, x->buf + flen, x->len);
	}
	abort(); /* pubd must answer */
}

static void subscribe(struct run *r, uint32_t req, const char *g)
{
	uint8_t frame[300];

	hc_write(&r->cl.c, frame,
		 (size_t)pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_SUBSCRIBE, req, g, strlen(g)), 1000);
}

static void op_unsub(struct run *r)
{
	uint8_t frame[300];
	const char *g = group_names[arg(r, 0) % 4];

	take(r, 1);
	/* A client that reads nothing fills its socket: each write then
	 * waits out its deadline, so an input of many would run for minutes
	 * (a slow unit, not a finding). */
	if (r->cl.c.fd >= 0 && r->unsubs++ < UNSUBS_MAX)
		hc_write(&r->cl.c, frame,
			 (size_t)pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_UNSUBSCRIBE, 90, g, strlen(g)),
			 100);
}

/*
 * PUB_FRAME_DIRECT for group gi: a and c (a host group) are granted, b
 * (its publish ACL) and nosuch (no such group) refused; a second request
 * for the same group refused too. Returns whether a log was granted.
 */
static bool ask_direct(struct run *r, struct rx *x, unsigned gi, uint32_t req, bool again)
{
	struct client *cl = &r->cl;
	const char *g = group_names[gi];
	uint64_t opened = H.d.counters[PUBD_CTR_DIRECT_OPENED];
	struct pub_msg_shm m;
	uint32_t code = 0;
	uint8_t frame[300];
	bool got = false;
	int xfds[3] = {-1, -1, -1}, res;

	if (hc_write(&cl->c, frame,
		     (size_t)pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_DIRECT, req, g, strlen(g)), 1000))
		abort();
	res = rx_reply(cl, x, req, &code, &m, xfds, &got);
	if (res != got)
		abort(); /* an OK with no log, or a log and an ERROR */
	if (again || gi == 1 || gi == 3) {
		/* Refused: no log, no fd, nothing opened; the client falls
		 * back to its publish log. */
		if (res != 0 || H.d.counters[PUBD_CTR_DIRECT_OPENED] != opened ||
		    code != (again     ? PUB_ERR_STATE
			     : gi == 1 ? PUB_ERR_ACL
				       : PUB_ERR_NO_GROUP)) {
			fprintf(stderr, "direct log of %s%s: answer %d code %u\n", g, again ? " again" : "", res, code);
			abort();
		}
		return false;
	}
	if (res != 1 || H.d.counters[PUBD_CTR_DIRECT_OPENED] != opened + 1) {
		fprintf(stderr, "direct log of %s refused: code %u\n", g, code);
		abort();
	}
	/* What pubd says of it: the configured size, the group asked for. */
	if (m.capacity != LOG_CAP || m.max_record < 64 || m.max_record > m.capacity / 4 || !m.log_id ||
	    m.group.len != strlen(g) || memcmp(m.group.ptr, g, m.group.len))
		abort();
	memcpy(cl->xfds, xfds, sizeof(xfds));
	check_sealed(cl->xfds[0], pub_shmlog_map_len(m.capacity));
	cl->xlen = pub_shmlog_map_len(m.capacity);
	cl->xmap = mmap(NULL, cl->xlen, PROT_READ | PROT_WRITE, MAP_SHARED, cl->xfds[0], 0);
	if (cl->xmap == MAP_FAILED || pub_shmlog_writer_init(&cl->xw, cl->xmap, cl->xlen, false) < 0 ||
	    cl->xw.cap != m.capacity || cl->xw.max_record != m.max_record ||
	    ((struct pub_shmlog_ctl *)cl->xmap)->kind != PUB_SHM_DIRECT_LOG)
		abort();
	return true;
}

/* Direct mode's setup: subscriptions and the direct log, in the order the
 * first byte says; what else came is dropped (READ reads the socket raw). */
static void setup_direct(struct run *r, uint8_t first)
{
	static struct rx x;
	unsigned gi = (first >> IN_GROUP_SHIFT) & 3;
	uint32_t code;

	memset(&x, 0, sizeof(x));
	if (first & IN_SUB_FIRST) {
		/* Answered before the direct log is asked for: pubd hands a
		 * log to a client with no reply queued for it. */
		if (first & IN_SUB_A) {
			subscribe(r, REQ_SUB_A, "a");
			if (rx_reply(&r->cl, &x, REQ_SUB_A, &code, NULL, NULL, NULL) != 1)
				abort();
		}
		if (first & IN_SUB_C) {
			subscribe(r, REQ_SUB_C, "c");
			if (rx_reply(&r->cl, &x, REQ_SUB_C, &code, NULL, NULL, NULL) != 1)
				abort();
		}
	}
	r->direct = ask_direct(r, &x, gi, REQ_DIRECT, false);
	if (first & IN_DIRECT_TWICE)
		ask_direct(r, &x, gi, REQ_DIRECT + 1, r->direct);
	rx_drop_fds(&x);
	if (!(first & IN_SUB_FIRST)) {
		if (first & IN_SUB_A)
			subscribe(r, REQ_SUB_A, "a");
		if (first & IN_SUB_C)
			subscribe(r, REQ_SUB_C, "c");
	}
}

static void shm_close(struct client *cl)
{
	unsigned i;

	hc_close(&cl->c);
	if (cl->pmap && cl->pmap != MAP_FAILED)
		munmap(cl->pmap, cl->plen);
	if (cl->dmap && cl->dmap != MAP_FAILED)
		munmap(cl->dmap, cl->dlen);
	if (cl->wake && cl->wake != MAP_FAILED)
		munmap(cl->wake, PUB_WAKE_PAGE_LEN);
	if (cl->xmap && cl->xmap != MAP_FAILED)
		munmap(cl->xmap, cl->xlen);
	for (i = 0; i < 7; i++)
		if (cl->fds[i] >= 0)
			close(cl->fds[i]);
	for (i = 0; i < 3; i++)
		if (cl->xfds[i] >= 0)
			close(cl->xfds[i]);
}

static void ring(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		abort();
}

static void op_raw(struct run *r)
{
	uint32_t cap = r->lw->cap, off = (uint32_t)(arg(r, 0) | arg(r, 1) << 8) & (cap - 1), n = arg(r, 2), i;

	take(r, 3);
	honest = false;
	for (i = 0; i < n && r->pos < r->size; i++, r->pos++)
		r->lmap[PUB_SHMLOG_CTL_LEN + ((off + i) & (cap - 1))] = r->data[r->pos];
}

static void op_record(struct run *r)
{
	const char *g = group_names[arg(r, 0) % 4];
	uint32_t len = (uint32_t)(arg(r, 1) | arg(r, 2) << 8) % 20000, flags = arg(r, 3), glen, head;
	bool later = flags & 2;
	uint8_t *b;

	take(r, 4);
	glen = later ? 0 : (uint32_t)strlen(g);
	head = r->direct ? PUB_DELIVERLOG_HEAD : PUB_PUBLOG_HEAD;
	b = pub_shmlog_claim(r->lw, PUB_SHMLOG_MSG, flags & 1 ? PUB_SHMLOG_F_MORE : 0, len + (flags >> 3),
			     head + glen + len);
	if (!b)
		return; /* no room: pubd has not read enough yet */
	if (r->direct) {
		/* The deliver log's head: PUB_SYNC's req_id in the source
		 * field (pubd gives readers its own), the writer's seq. */
		memset(b + pub_deliverlog_put_head(b, flags & 4 ? ++r->req : 0, r->seq, g, (uint8_t)glen), 'x', len);
		if (!(flags & 1))
			r->seq++;
	} else {
		memset(b + pub_publog_put_head(b, flags & 4 ? ++r->req : 0, g, (uint8_t)glen), 'x', len);
	}
	pub_shmlog_commit(r->lw);
}

static void op_commit(struct run *r)
{
	uint64_t v = arg64(r, 0);

	take(r, 8);
	honest = false;
	memcpy(r->lmap + PUB_SHMLOG_CTL_LEN + (r->lw->tail & (r->lw->cap - 1)), &v, sizeof(v));
}

static void op_ctl(struct run *r)
{
	struct pub_shmlog_ctl *ctl = (struct pub_shmlog_ctl *)r->lmap;
	uint8_t which = arg(r, 0);
	uint64_t v = arg64(r, 1);

	take(r, 9);
	honest = false;
	switch (which % (r->direct ? 12 : 4)) {
	case 0:
		atomic_store(&ctl->claim, v);
		break;
	case 1:
		atomic_store(&ctl->head, v);
		break;
	case 2:
		atomic_store(&ctl->tail, v);
		break;
	case 3:
		atomic_store(&ctl->reader_sleeping, (uint32_t)v);
		break;
	/* The direct log's: what its writer may set of pubd's fields too. */
	case 4:
		atomic_store(&ctl->latest, v);
		break;
	case 5:
		atomic_store(&ctl->lazy, (uint32_t)v);
		break;
	case 6:
		atomic_store(&ctl->retired, (uint32_t)v);
		break;
	case 7:
		atomic_store(&ctl->wakers_gen, (uint32_t)v);
		break;
	case 8:
		/* Top bit: what an honest writer acknowledges (pubd may then
		 * read a host group's log lazily). */
		atomic_store(&ctl->wakers_seen, v >> 63 ? atomic_load(&ctl->wakers_gen) : (uint32_t)v);
		break;
	case 9:
		atomic_store(&ctl->writer_waiting, (uint32_t)v);
		break;
	case 10:
		atomic_store(&ctl->closed, (uint32_t)v);
		break;
	default:
		memcpy(&ctl->capacity, &v, sizeof(v)); /* capacity and max_record */
		break;
	}
}

static void op_slot(struct run *r)
{
	uint8_t s = arg(r, 0), slot = s % 4;
	uint64_t v = arg64(r, 1);

	take(r, 9);
	if (r->cl.wake && (s & 0xc0) == 0xc0)
		atomic_store_explicit(pub_wake_at(r->cl.wake, slot), v, memory_order_relaxed);
	else if (r->cl.wake && (s & 0x80))
		atomic_store_explicit(pub_wake_lost(r->cl.wake, slot), v, memory_order_release);
	else
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

static uint64_t drain_ns(void)
{
	return (uint64_t)H.d.ipc.cfg->group_log_drain_ms * 1000000u;
}

static void op_turn(struct run *r)
{
	uint8_t a = arg(r, 0);
	unsigned n;

	take(r, 1);
	for (n = a % 8 + 1; n; n--)
		hd_turn(&H, 0);
	/* The once-a-second tick, now or as if the drain time had passed:
	 * retired direct logs go, lazily read ones are read. */
	if (r->direct_mode && (a & 0x80))
		pubd_ipc_tick(&H.d.ipc, pubd_now_ns() + (a & 0x40 ? 0 : drain_ns()));
}

static void reload_to(unsigned v)
{
	if (v == variant)
		return;
	variant = v;
	if (hd_reload(&H, NULL, variants[v]) < 0)
		abort(); /* the variants are valid configs */
}

static void op_reload(struct run *r)
{
	uint8_t v = arg(r, 0);

	take(r, 1);
	reload_to(v % (sizeof(variants) / sizeof(variants[0])));
}

static void play(struct run *r, uint8_t op)
{
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
		ring(r->bell);
		break;
	case O_TURN:
		op_turn(r);
		break;
	case O_READ:
		op_read(r);
		break;
	case O_HANGUP:
		hc_close(&r->cl.c);
		break;
	case O_CLAIM:
		if (pub_shmlog_claim(r->lw, PUB_SHMLOG_MSG, 0, 10,
				     (r->direct ? PUB_DELIVERLOG_HEAD : PUB_PUBLOG_HEAD) + 1 + 10))
			r->lw->open = NULL; /* ...and the writer dies before its commit */
		break;
	case O_COMPLETE:
		complete(arg(r, 0) % 8 + 1);
		take(r, 1);
		break;
	case O_SLOT:
		op_slot(r);
		break;
	case O_DLOG:
		op_dlog(r);
		break;
	case O_RELOAD:
		op_reload(r);
		break;
	case O_UNSUB:
		op_unsub(r);
		break;
	}
}

/*
 * The client budget holds at least the mappings still charged to it: the
 * logs of the clients, and the retired direct logs (srv_budget_give stops
 * at 0, so a byte given back twice shows only as too little held).
 */
static void check_budget_floor(void)
{
	const struct pubd_ipc *srv = &H.d.ipc;
	const struct pubd_client *c;
	const struct srv_direct *d;
	size_t floor = 0;
	unsigned i;

	for (c = srv->clients; c; c = c->next) {
		if (c->log)
			floor += c->log->shm.charged;
		if (c->dlog)
			floor += c->dlog->shm.charged;
		for (i = 0; i < c->ndirects; i++)
			floor += c->directs[i]->l->shm.charged;
	}
	for (d = srv->retired; d; d = d->next_retired)
		floor += d->l->shm.charged;
	if (srv->charged < floor) {
		fprintf(stderr, "client budget: %zu bytes charged, the live logs alone hold %zu\n", srv->charged,
			floor);
		abort();
	}
}

struct snap {
	uint64_t published[NGROUPS], dropped, scoped, opened, retired;
};

static void snapshot(struct snap *s)
{
	unsigned i;

	s->dropped = H.d.counters[PUBD_CTR_MSG_DROPPED];
	s->scoped = pubd_drops_msg_total(&H.d.drops);
	s->opened = H.d.counters[PUBD_CTR_DIRECT_OPENED];
	s->retired = H.d.counters[PUBD_CTR_DIRECT_RETIRED];
	for (i = 0; i < NGROUPS; i++) {
		struct pubd_group *g = hd_group(&H, group_names[i]);

		s->published[i] = g->published;
		s->scoped += pubd_drops_msg_total(&g->drops) + pubd_drops_msg_total(&g->sub_drops);
	}
}

/* Every send completes in the end: the pins go, so do the logs. */
static void settle(void)
{
	unsigned turns;

	for (turns = 0; turns < 1000; turns++) {
		complete(pubd_fake_pinned(H.fk));
		if (!hd_turn(&H, 0) && !H.d.ipc.nclients && !H.d.tx.queued_msgs && !pubd_fake_pinned(H.fk))
			break;
	}
	complete(pubd_fake_pinned(H.fk));
	pubd_ipc_settle(&H.d.ipc);
}

static void settle_and_check(const struct snap *before)
{
	const struct srv_direct *d;
	struct snap after;
	unsigned i;

	settle();
	if (H.d.ipc.nclients || H.d.ipc.npaused || H.d.ipc.dirty || H.d.ipc.nlog_more || H.d.tx.queued_msgs)
		abort();
	/* No direct log live with its writer gone: each was retired, and
	 * names no writer now. */
	for (i = 0; i < NGROUPS; i++)
		if (hd_group(&H, group_names[i])->ndirects)
			abort();
	for (d = H.d.ipc.retired; d; d = d->next_retired)
		if (!d->retired_ns || !d->writer_gone || d->g)
			abort();
	/* ...and freed by the tick limits.group_log_drain_ms after. */
	pubd_ipc_tick(&H.d.ipc, pubd_now_ns() + drain_ns());
	if (H.d.ipc.retired) {
		fprintf(stderr, "a retired direct log outlived limits.group_log_drain_ms\n");
		abort();
	}
	settle();
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
	if (after.opened - before->opened != after.retired - before->retired) {
		fprintf(stderr, "direct logs: %llu opened, %llu retired\n",
			(unsigned long long)(after.opened - before->opened),
			(unsigned long long)(after.retired - before->retired));
		abort();
	}
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
	unsigned i;

	if (!started)
		start();
	reload_to(0); /* each input from the same config */
	memset(&r, 0, sizeof(r));
	for (i = 0; i < 7; i++)
		r.cl.fds[i] = -1;
	for (i = 0; i < 3; i++)
		r.cl.xfds[i] = -1;
	r.data = data;
	r.size = size;
	r.direct_mode = size && (data[0] & IN_DIRECT);
	honest = true;
	memset(sent_by_slot, 0, sizeof(sent_by_slot));
	snapshot(&before);
	if (!shm_connect(&r.cl, r.direct_mode))
		abort();
	if (r.direct_mode) {
		setup_direct(&r, data[0]);
	} else {
		/* The first byte's low bit: a subscriber to group a too
		 * (deliveries); the next: to c, the host group (its messages
		 * come straight from the publish log's records into the
		 * deliver or group log). */
		if (size && (data[0] & IN_SUB_A))
			subscribe(&r, REQ_SUB_A, "a");
		if (size && (data[0] & IN_SUB_C))
			subscribe(&r, REQ_SUB_C, "c");
	}
	r.lmap = r.direct ? r.cl.xmap : r.cl.pmap;
	r.lw = r.direct ? &r.cl.xw : &r.cl.w;
	r.bell = r.direct ? r.cl.xfds[1] : r.cl.fds[1];
	r.pos = size ? 1 : 0;
	while (r.pos < size) {
		uint8_t op = data[r.pos++];

		if (r.cl.c.fd < 0 && op % O__COUNT != O_TURN)
			continue; /* gone: only the daemon's turns are left to play */
		play(&r, op);
		hd_turn(&H, 0);
		check_budget_floor();
	}
	shm_close(&r.cl);
	settle_and_check(&before);
	return 0;
}
