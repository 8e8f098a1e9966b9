/* SPDX-License-Identifier: MIT */
/*
 * The IPC server fed whole sessions of client frames, from up to four
 * clients at once, through the real server code (ipc.c, tx.c, daemon.c,
 * query.c) on the fake fabric. One daemon per process; each input starts
 * from a daemon with no clients and ends with every client closed and the
 * fabric restored.
 *
 * Input: records of u8 op (bits 0-1: client, bits 2-7: action) and the
 * action's argument bytes (a short last record takes what is left):
 *   RAW      u16 len, bytes   write raw bytes (any frames, or none)
 *   HELLO    u8               a well-formed HELLO (u8: name length)
 *   SUB/UNSUB u8              SUBSCRIBE/UNSUBSCRIBE to group u8 % 5 (3: h, the
 *                             host group; 4: unknown)
 *   PUBLISH  u8 g, u16 len    a well-formed PUBLISH (up to 32 KiB, or just too
 *                             large), req_id 0 or not
 *   BIGHEAD  u8 g, u8 n       a PUBLISH header declaring n % 64 + 1 times 16 KiB, then only
 *                             part of the body
 *   QUERY    u8 kind          a QUERY of kind u8 % 9 (METRICS once an input)
 *   READ                      the client reads what is waiting
 *   CLOSE                     the client closes
 *   TURN     u8               run u8 % 8 + 1 loop turns
 *   CREDITS  u8               send credits: 255 unlimited, else u8 % 64
 *   DOWN/UP  u8               group u8 % 4 fails (multicast error) / comes back
 *                             (for h, never joined: an event no fabric sends)
 *   MTU      u8               the fabric MTU changes to one of 256..4096
 *   RELOAD   u8               reload with config variant u8 % 3 (ACLs, queue policy)
 *   INJECT   u8 g, u8 len     a remote message for group g arrives (fan-out)
 *   SNDBUF                    the daemon's end of the client gets a tiny send buffer
 *
 * Checked after each input: every client gone, no subscription or paused
 * publisher left, the transmit queues empty; per group, messages published
 * = messages the fabric sent + messages dropped on the transmit path
 * (fabric_error, mtu_exceeded), and for h, the host group, nothing sent or
 * dropped there at all; and the daemon's dropped counter covers
 * every drop counted in a group or daemon scope. Violations abort.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"
#include "../unit/test_daemon_harness.h"
#include "server_internal.h" /* white-box: a client's socket */
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NCLIENTS	 4
#define NGROUPS		 4
#define MAX_CONNECTS	 16
#define DEFAULT_MTU	 1024
#define FUZZ_MAX_MESSAGE (64 * 1024)

static const char *const group_names[] = {"a", "b", "c", "h", "nosuch"};

#define GROUPS(a_sub)                                                                           \
	"groups:\n"                                                                             \
	"  - name: a\n    address: 239.79.0.1\n" a_sub "  - name: b\n    address: 239.79.0.2\n" \
	"    publish: [uid:54321]\n"                                                            \
	"  - name: c\n    address: 239.79.0.3\n    subscribe: []\n"                             \
	"  - name: h\n    scope: host\n"

static const char *const variants[] = {
	"limits:\n  max_message_size: 64KiB\n  subscriber_queue: 16\n" GROUPS(""),
	"limits:\n  max_message_size: 64KiB\n  subscriber_queue: 16\n" GROUPS("    subscribe: [uid:54321]\n"),
	"limits:\n  max_message_size: 64KiB\n  subscriber_queue: 4\n  slow_subscriber: disconnect\n" GROUPS(""),
};

enum action {
	A_RAW,
	A_HELLO,
	A_SUB,
	A_UNSUB,
	A_PUBLISH,
	A_BIGHEAD,
	A_QUERY,
	A_READ,
	A_CLOSE,
	A_TURN,
	A_CREDITS,
	A_DOWN,
	A_UP,
	A_MTU,
	A_RELOAD,
	A_INJECT,
	A_SNDBUF,
	A__COUNT
};

static struct hd H;
static bool started;
static int variant;
static uint8_t payload[FUZZ_MAX_MESSAGE + 1024];

struct snap {
	uint64_t published[NGROUPS], tx_drops[NGROUPS];
	uint64_t dropped, scoped_drops;
};

static struct pubd_group *group(unsigned i)
{
	return hd_group(&H, group_names[i]);
}

static void snapshot(struct snap *s)
{
	unsigned i;

	memset(s, 0, sizeof(*s));
	s->dropped = H.d.counters[PUBD_CTR_MSG_DROPPED];
	s->scoped_drops = pubd_drops_msg_total(&H.d.drops);
	for (i = 0; i < NGROUPS; i++) {
		struct pubd_group *g = group(i);

		s->published[i] = g->published;
		s->tx_drops[i] = g->drops.by_reason[PUB_DROP_FABRIC_ERROR] + g->drops.by_reason[PUB_DROP_MTU_EXCEEDED];
		s->scoped_drops += pubd_drops_msg_total(&g->drops) + pubd_drops_msg_total(&g->sub_drops);
	}
}

/* Whole messages the fabric sent, per group, counted as they go out. */
static uint64_t sent_by_slot[16];

static void on_sent(void *ctx, int slot, const struct pubd_tx_dgram *d)
{
	uint8_t buf[8192];
	struct pubd_wire_hdr w;
	const uint8_t *p;
	size_t plen;

	(void)ctx;
	if (d->hdr_len + d->payload_len > sizeof(buf) || d->hdr_len > sizeof(buf))
		abort(); /* above any MTU the fake offers */
	/* A heartbeat has no payload (NULL), a raw datagram no header. */
	if (d->hdr_len)
		memcpy(buf, d->hdr, d->hdr_len);
	if (d->payload_len)
		memcpy(buf + d->hdr_len, d->payload, d->payload_len);
	if (pubd_wire_decode(buf, d->hdr_len + d->payload_len, &w, &p, &plen) != 0)
		abort(); /* the daemon sent something malformed */
	if (slot < 0 || slot >= 16)
		abort();
	sent_by_slot[slot] += pubd_wire_msgs_completed(&w);
}

/* The daemon lives as long as the process; its socket and config go with it. */
static void remove_files(void)
{
	unlink(H.sock_path);
	unlink(H.cfg_path);
	rmdir(H.dir);
}

static void start(void)
{
	if (hd_start(&H, NULL, variants[0]) < 0)
		abort();
	atexit(remove_files);
	started = true;
	memset(payload, 'p', sizeof(payload));
	pubd_fake_set_tap(H.fk, on_sent, NULL);
}

static bool connect_client(struct hc *c, unsigned *connects)
{
	if (c->fd >= 0)
		return true;
	if (*connects >= MAX_CONNECTS)
		return false;
	++*connects;
	/* Connect without waiting for the accept: the daemon takes it on
	 * its next turn, as it would a real client's. */
	return hc_connect_nowait(&H, c) == 0;
}

static void send_bytes(struct hc *c, const void *p, size_t n)
{
	/* Whatever the socket takes; a hostile client may stop mid-frame. */
	if (hc_try_write(c, p, n) < 0) {
		close(c->fd);
		c->fd = -1;
	}
}

static void drain(struct hc *c)
{
	uint8_t buf[65536];

	while (c->fd >= 0) {
		ssize_t r = read(c->fd, buf, sizeof(buf));

		if (r > 0)
			continue;
		if (r == 0) {
			close(c->fd);
			c->fd = -1;
		}
		break;
	}
}

static void reset(void)
{
	unsigned i;

	pubd_fake_set_credits(H.fk, -1);
	for (i = 0; i < NGROUPS; i++)
		if (!pubd_fake_group_is_up(H.fk, group(i)->slot))
			pubd_fake_group_up(H.fk, group(i)->slot);
	if (H.d.mtu != DEFAULT_MTU)
		pubd_fake_set_mtu(H.fk, DEFAULT_MTU);
	if (variant) {
		variant = 0;
		if (hd_reload(&H, NULL, variants[0]) < 0)
			abort();
	}
}

/* The input being played, and the clients of this session. */
struct run {
	const uint8_t *data;
	size_t size, pos;
	struct hc c[NCLIENTS];
	unsigned connects;
	bool metrics_asked;
	uint8_t frame[600];
};

/* Argument byte i of the current record (0 past the end), and taking n. */
static uint8_t arg(const struct run *r, size_t i)
{
	return r->pos + i < r->size ? r->data[r->pos + i] : 0;
}

static void take(struct run *r, size_t n)
{
	r->pos = n > r->size - r->pos ? r->size : r->pos + n;
}

/* A frame to client cl, connecting it first if need be. */
static void send_frame(struct run *r, struct hc *cl, const void *frame, long n)
{
	if (n > 0 && connect_client(cl, &r->connects))
		send_bytes(cl, frame, (size_t)n);
}

static void act_raw(struct run *r, struct hc *cl)
{
	size_t len = (size_t)arg(r, 0) | (size_t)arg(r, 1) << 8;

	take(r, 2);
	if (len > r->size - r->pos)
		len = r->size - r->pos;
	if (connect_client(cl, &r->connects))
		send_bytes(cl, r->data + r->pos, len);
	take(r, len);
}

static void act_hello(struct run *r, struct hc *cl)
{
	uint8_t b0 = arg(r, 0);

	take(r, 1);
	send_frame(r, cl, r->frame,
		   pub_proto_enc_hello(r->frame, sizeof(r->frame), 0, "fuzz-client-name-0123456789", b0 % 28));
}

static void group_req(struct run *r, struct hc *cl, uint8_t type)
{
	uint8_t b0 = arg(r, 0);
	const char *g = group_names[b0 % 5];

	take(r, 1);
	send_frame(r, cl, r->frame, pub_proto_enc_group_req(r->frame, sizeof(r->frame), type, b0, g, strlen(g)));
}

static void act_sub(struct run *r, struct hc *cl)
{
	group_req(r, cl, PUB_FRAME_SUBSCRIBE);
}

static void act_unsub(struct run *r, struct hc *cl)
{
	group_req(r, cl, PUB_FRAME_UNSUBSCRIBE);
}

/* Up to 16 KiB; bit 7 of g: by the large-message path (16 KiB more); both
 * top bits of the length: just past max_message_size. */
static void act_publish(struct run *r, struct hc *cl)
{
	uint8_t b0 = arg(r, 0), b1 = arg(r, 1), b2 = arg(r, 2);
	const char *g = group_names[b0 % 5];
	size_t plen = (size_t)b1 | (size_t)(b2 & 0x3f) << 8;
	long n;

	take(r, 3);
	if (b0 & 0x80)
		plen += 16384;
	if ((b2 & 0xc0) == 0xc0)
		plen = FUZZ_MAX_MESSAGE + 1;
	n = pub_proto_enc_publish_head(payload, 600, b0 & 0x40 ? b1 : 0, g, strlen(g), plen);
	if (n > 0 && connect_client(cl, &r->connects)) {
		/* The head, then the body from the pattern after it. */
		send_bytes(cl, payload, (size_t)n + plen);
		memset(payload, 'p', 600);
	}
}

static void act_bighead(struct run *r, struct hc *cl)
{
	uint8_t b0 = arg(r, 0), b1 = arg(r, 1);
	const char *g = group_names[b0 % 5];
	long n = pub_proto_enc_publish_head(r->frame, sizeof(r->frame), 9, g, strlen(g), (size_t)(b1 % 64 + 1) * 16384);

	take(r, 2);
	if (n > 0 && connect_client(cl, &r->connects)) {
		send_bytes(cl, r->frame, (size_t)n);
		send_bytes(cl, payload + 600, (size_t)b1 * 64);
	}
}

static void act_query(struct run *r, struct hc *cl)
{
	uint8_t b0 = arg(r, 0), kind = b0 % 9;
	const char *g = group_names[b0 % 5];

	/* The metrics text renders every table under the fuzzer's compare
	 * tracing (two thirds of the run time when an input asked for it again
	 * and again): once an input; a second ask is another query. */
	if (kind == PUB_QUERY_METRICS && r->metrics_asked)
		kind = b0 % 8;
	r->metrics_asked |= kind == PUB_QUERY_METRICS;
	take(r, 1);
	send_frame(r, cl, r->frame, pub_proto_enc_query(r->frame, sizeof(r->frame), 5, kind, g, b0 & 0x80 ? 1 : 0));
}

static void act_read(struct run *r, struct hc *cl)
{
	(void)r;
	drain(cl);
}

static void act_close(struct run *r, struct hc *cl)
{
	(void)r;
	if (cl->fd >= 0)
		close(cl->fd);
	cl->fd = -1;
}

static void act_turn(struct run *r, struct hc *cl)
{
	unsigned turns;

	(void)cl;
	for (turns = arg(r, 0) % 8 + 1; turns; turns--)
		hd_turn(&H, 0);
	take(r, 1);
}

static void act_credits(struct run *r, struct hc *cl)
{
	(void)cl;
	pubd_fake_set_credits(H.fk, arg(r, 0) == 255 ? -1 : arg(r, 0) % 64);
	take(r, 1);
}

static void act_down(struct run *r, struct hc *cl)
{
	int slot = group(arg(r, 0) % NGROUPS)->slot;

	(void)cl;
	take(r, 1);
	if (pubd_fake_group_is_up(H.fk, slot))
		pubd_fake_group_down(H.fk, slot, -100);
}

static void act_up(struct run *r, struct hc *cl)
{
	int slot = group(arg(r, 0) % NGROUPS)->slot;

	(void)cl;
	take(r, 1);
	if (!pubd_fake_group_is_up(H.fk, slot))
		pubd_fake_group_up(H.fk, slot);
}

static void act_mtu(struct run *r, struct hc *cl)
{
	static const uint32_t mtus[] = {256, 300, 512, 1024, 1500, 4096};

	(void)cl;
	pubd_fake_set_mtu(H.fk, mtus[arg(r, 0) % 6]);
	take(r, 1);
}

static void act_reload(struct run *r, struct hc *cl)
{
	(void)cl;
	variant = arg(r, 0) % 3;
	take(r, 1);
	if (hd_reload(&H, NULL, variants[variant]) < 0)
		abort();
}

static void act_inject(struct run *r, struct hc *cl)
{
	struct pubd_group *g = group(arg(r, 0) % NGROUPS);
	uint8_t len = arg(r, 2);
	struct pubd_wire_hdr w = {.version = PUBD_WIRE_VERSION,
				  .group_id = g->id,
				  .source_id = 0xf00d,
				  .msg_seq = arg(r, 1),
				  .msg_len = len,
				  .frag_count = 1};
	uint8_t dg[PUBD_WIRE_HDR_LEN + 256];

	(void)cl;
	take(r, 3);
	pubd_wire_encode(&w, dg);
	memset(dg + PUBD_WIRE_HDR_LEN, 'i', len);
	pubd_fake_inject(H.fk, g->slot, dg, PUBD_WIRE_HDR_LEN + len, false);
}

/* The newest client's daemon end: deliveries stay half written. */
static void act_sndbuf(struct run *r, struct hc *cl)
{
	int small = 4096;

	(void)r;
	(void)cl;
	hd_turn(&H, 0);
	if (H.d.ipc.clients)
		setsockopt(H.d.ipc.clients->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
}

static void (*const actions[A__COUNT])(struct run *r, struct hc *cl) = {
	[A_RAW] = act_raw,	   [A_HELLO] = act_hello,     [A_SUB] = act_sub,	 [A_UNSUB] = act_unsub,
	[A_PUBLISH] = act_publish, [A_BIGHEAD] = act_bighead, [A_QUERY] = act_query,	 [A_READ] = act_read,
	[A_CLOSE] = act_close,	   [A_TURN] = act_turn,	      [A_CREDITS] = act_credits, [A_DOWN] = act_down,
	[A_UP] = act_up,	   [A_MTU] = act_mtu,	      [A_RELOAD] = act_reload,	 [A_INJECT] = act_inject,
	[A_SNDBUF] = act_sndbuf,
};

/* Every client leaves; the fabric comes back whole; the daemon settles.
 * Then the checks the file's head lists. */
static void settle_and_check(struct run *r, const struct snap *before)
{
	struct snap after;
	unsigned i, turns;

	for (i = 0; i < NCLIENTS; i++)
		hc_close(&r->c[i]);
	reset();
	for (turns = 0; turns < 1000; turns++) {
		int work = hd_turn(&H, 0);

		if (!work && !H.d.ipc.nclients && !H.d.tx.queued_msgs)
			break;
	}
	if (H.d.ipc.nclients || H.d.ipc.npaused || H.d.ipc.dirty || H.d.tx.queued_msgs)
		abort();
	snapshot(&after);
	for (i = 0; i < NGROUPS; i++) {
		struct pubd_group *g = group(i);
		uint64_t sent = sent_by_slot[g->slot];

		if (g->nsubs || g->txq_head || g->txq_len)
			abort();
		if (g->host && (sent || after.tx_drops[i] != before->tx_drops[i] || !g->up)) {
			fprintf(stderr, "host group %s: %llu sent, up %d\n", g->name, (unsigned long long)sent, g->up);
			abort();
		}
		if (!g->host &&
		    after.published[i] - before->published[i] != sent + after.tx_drops[i] - before->tx_drops[i]) {
			fprintf(stderr, "group %s: published %llu, sent %llu, dropped on transmit %llu\n", g->name,
				(unsigned long long)(after.published[i] - before->published[i]),
				(unsigned long long)sent,
				(unsigned long long)(after.tx_drops[i] - before->tx_drops[i]));
			abort();
		}
	}
	if (after.dropped - before->dropped < after.scoped_drops - before->scoped_drops) {
		fprintf(stderr, "dropped counter %llu below the drops counted by scope %llu\n",
			(unsigned long long)(after.dropped - before->dropped),
			(unsigned long long)(after.scoped_drops - before->scoped_drops));
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run r;
	struct snap before;
	unsigned i;

	if (!started)
		start();
	memset(&r, 0, sizeof(r));
	r.data = data;
	r.size = size;
	for (i = 0; i < NCLIENTS; i++)
		r.c[i].fd = -1;
	memset(sent_by_slot, 0, sizeof(sent_by_slot));
	snapshot(&before);
	while (r.pos < size) {
		uint8_t op = data[r.pos++];

		actions[(op >> 2) % A__COUNT](&r, &r.c[op & 3]);
		hd_turn(&H, 0);
	}
	settle_and_check(&r, &before);
	return 0;
}
