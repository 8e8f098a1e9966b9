/* SPDX-License-Identifier: MIT */
/*
 * The udp fabric on its own, before (and without) the daemon: two fabrics on
 * the loopback interface sharing one port (SO_REUSEADDR), driven by the real
 * event loop.
 *
 * Checks, for IPv4 and IPv6 groups:
 *  - datagrams of 1 byte .. the MTU arrive byte-identical, header and payload
 *    gathered from two places, at the other fabric, tagged with the slot of
 *    their destination group; the sender's own come back (multicast loop is
 *    on) known as its own and, with its socket filter on, cut to nothing;
 *  - a datagram of MTU + 1 is refused with -EMSGSIZE and nothing is sent;
 *  - a group joined only by B is not delivered to A although both sockets
 *    share the port (IP_MULTICAST_ALL off), and a send-only slot receives
 *    nothing;
 *  - two slots on one address share a membership: leaving one keeps the
 *    other receiving (reported on the first remaining slot), leaving both
 *    stops it;
 *  - a burst of 256 MTU-sized datagrams (16 MiB) arrives complete and in
 *    order (the large socket buffers);
 *  - runs of equal datagrams (a message's fragments) go as one segmented
 *    send (UDP_SEGMENT) and arrive as the datagrams they were, boundaries
 *    and bytes; a kernel that refuses it (here: checksums off on the send
 *    socket, which segmentation needs) gets them one by one, all of them;
 *  - fabric.mtu above what the interface allows is refused at open.
 *
 * It runs in a network namespace of its own when it can (root), so it shares
 * no port or group with anything else on the host.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "fabric.h"
#include "log.h"
#include "loop.h"
#include "proto.h"
#include "udp_internal.h" /* white-box: the send socket, to make the kernel refuse segmentation */

#define MAX_RX	   4096
#define TIMEOUT_NS (5ull * 1000000000ull)

struct rx_rec {
	int slot;
	bool self; /* the fabric knew it for one it sent */
	uint32_t len;
	uint8_t *data;
};

struct node {
	const char *name;
	struct pubd_fabric *f;
	struct rx_rec rx[MAX_RX];
	unsigned nrx;
	unsigned up[16];
	unsigned writable;
};

static struct pubd_loop *loop;
static int failures;
static bool (*cond_fn)(void *);
static void *cond_ctx;
static bool timed_out;

#define CHECK(c, ...)                                                                \
	do {                                                                         \
		if (!(c)) {                                                          \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
			fprintf(stderr, __VA_ARGS__);                                \
			fputc('\n', stderr);                                         \
			failures++;                                                  \
		}                                                                    \
	} while (0)

static void on_rx(void *ctx, const struct pubd_rx_dgram *d, unsigned n)
{
	struct node *nd = ctx;
	unsigned i;

	for (i = 0; i < n; i++) {
		struct rx_rec *r;

		if (nd->nrx >= MAX_RX) {
			fprintf(stderr, "FAIL: %s received more than %d datagrams\n", nd->name, MAX_RX);
			failures++;
			return;
		}
		r = &nd->rx[nd->nrx++];
		r->slot = d[i].slot;
		r->self = d[i].self;
		r->len = d[i].len;
		r->data = malloc(d[i].len ? d[i].len : 1);
		if (!r->data)
			abort();
		memcpy(r->data, d[i].data, d[i].len);
	}
}

static void on_writable(void *ctx)
{
	((struct node *)ctx)->writable++;
}

static void on_group_state(void *ctx, int slot, bool up, int err)
{
	struct node *nd = ctx;

	if (up && slot >= 0 && slot < 16)
		nd->up[slot]++;
	else
		fprintf(stderr, "%s: slot %d down: %d\n", nd->name, slot, err);
}

static const struct pubd_fabric_events events = {
	.rx = on_rx,
	.writable = on_writable,
	.group_state = on_group_state,
};

static void clear_rx(struct node *nd)
{
	unsigned i;

	for (i = 0; i < nd->nrx; i++)
		free(nd->rx[i].data);
	nd->nrx = 0;
}

static int idle_check(void *ctx)
{
	(void)ctx;
	if (cond_fn && cond_fn(cond_ctx))
		pubd_loop_stop(loop);
	return 0;
}

static void on_deadline(void *ctx, uint64_t now)
{
	(void)ctx;
	(void)now;
	timed_out = true;
	pubd_loop_stop(loop);
}

/* Run the loop until fn(ctx) holds or the deadline passes; true when it held. */
static bool run_until(bool (*fn)(void *), void *ctx, uint64_t timeout_ns)
{
	struct pubd_loop_timer *t = pubd_loop_timer(loop, on_deadline, NULL);

	if (!t)
		abort();
	cond_fn = fn;
	cond_ctx = ctx;
	timed_out = false;
	if (!fn(ctx)) {
		pubd_loop_timer_arm(t, pubd_now_ns() + timeout_ns);
		pubd_loop_run(loop);
	}
	pubd_loop_timer_free(t);
	cond_fn = NULL;
	return fn(ctx);
}

struct want_rx {
	struct node *nd;
	unsigned n;
};

static bool have_rx(void *ctx)
{
	struct want_rx *w = ctx;

	return w->nd->nrx >= w->n;
}

struct want_writable {
	struct node *nd;
	unsigned n;
};

static bool have_writable(void *ctx)
{
	struct want_writable *w = ctx;

	return w->nd->writable >= w->n;
}

struct want_up {
	struct node *nd;
	int slot;
};

static bool have_up(void *ctx)
{
	struct want_up *w = ctx;

	return w->nd->up[w->slot] > 0;
}

static void wait_up(struct node *nd, int slot)
{
	struct want_up w = {nd, slot};

	CHECK(run_until(have_up, &w, TIMEOUT_NS), "%s slot %d never came up", nd->name, slot);
}

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;
	uint32_t x = seed * 2654435761u + 1;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

/*
 * A fresh namespace with lo up and a veth pair (pfa, pfb) carrying an IPv4
 * and an IPv6 address on pfa: lo does not loop IPv6 multicast back, a veth
 * does (the sender's own copy). Returns false when we cannot have one (not
 * root): then only the loopback scenarios run, on the host's lo.
 */
static bool own_namespace(void)
{
	static const char *const setup[] = {
		"ip link set lo up",
		"ip link add pfa type veth peer name pfb",
		"ip link set pfa up",
		"ip link set pfb up",
		"ip addr add 10.254.0.1/24 dev pfa",
		"ip addr add fd00:5075::1/64 dev pfa nodad",
	};
	unsigned i;

	if (unshare(CLONE_NEWNET) < 0) {
		fprintf(stderr, "note: no network namespace of our own (%s): host loopback only\n", strerror(errno));
		return false;
	}
	for (i = 0; i < sizeof(setup) / sizeof(setup[0]); i++) {
		if (system(setup[i]) != 0) {
			fprintf(stderr, "FAIL: in our namespace: %s\n", setup[i]);
			exit(1);
		}
	}
	return true;
}

static socklen_t make_group(struct sockaddr_storage *ss, const char *text)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, text, &s6->sin6_addr) != 1)
			abort();
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	if (inet_pton(AF_INET, text, &s4->sin_addr) != 1)
		abort();
	return sizeof(*s4);
}

static void open_node(struct node *nd, const char *name, const struct pubd_config *cfg)
{
	int err;

	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	err = pubd_fabric_udp_ops.open(&nd->f, cfg, loop, &events, nd);
	if (err) {
		fprintf(stderr, "FAIL: open %s: %s\n", name, strerror(-err));
		exit(1);
	}
}

static void close_node(struct node *nd)
{
	clear_rx(nd);
	pubd_fabric_udp_ops.close(nd->f);
	nd->f = NULL;
}

/* The value of one row of the fabric's status table, as pubctl would show it. */
static bool status_value(struct node *nd, const char *key, char *out, size_t cap)
{
	static const char *const cols[] = {"key:s", "value:s"};
	struct pub_table_builder b = {.grow = pub_table_grow_realloc};
	struct pub_table_reader r;
	struct pub_table_cell k, v;
	const uint8_t *body;
	uint32_t body_len;
	uint8_t type;
	size_t need;
	bool found = false;

	pub_table_begin(&b, 1, "fabric", cols, 2);
	pubd_fabric_udp_ops.status(nd->f, &b);
	if (pub_table_end(&b) != 0 || pub_proto_frame_peek(b.buf, b.len, b.len, &type, &body_len, &body, &need) != 1 ||
	    pub_proto_dec_table(body, body_len, &r) != 0) {
		fprintf(stderr, "FAIL: the status table does not build or decode\n");
		failures++;
		free(b.buf);
		return false;
	}
	while (pub_table_next(&r, &k) == 1 && pub_table_next(&r, &v) == 1) {
		if (k.s.len == strlen(key) && memcmp(k.s.ptr, key, k.s.len) == 0) {
			snprintf(out, cap, "%.*s", (int)v.s.len, v.s.ptr);
			found = true;
		}
	}
	free(b.buf);
	return found;
}

static unsigned long long status_num(struct node *nd, const char *key)
{
	char buf[256];

	if (!status_value(nd, key, buf, sizeof(buf))) {
		fprintf(stderr, "FAIL: no status row '%s'\n", key);
		failures++;
		return 0;
	}
	return strtoull(buf, NULL, 10);
}

/* Does nd's status say its socket filter for its own datagrams is on? */
static bool self_filter_on(struct node *nd)
{
	char buf[256];

	return status_value(nd, "self_filter", buf, sizeof(buf)) && strncmp(buf, "on", 2) == 0;
}

/* Send one datagram of total length len (header part + payload part). */
static int send_one(struct node *nd, int slot, size_t len, unsigned seed, uint8_t *scratch)
{
	struct pubd_tx_dgram d;
	size_t hdr = len < 48 ? len : 48;

	pattern(scratch, len, seed);
	d.hdr = scratch;
	d.hdr_len = (uint32_t)hdr;
	d.payload = scratch + hdr;
	d.payload_len = (uint32_t)(len - hdr);
	return pubd_fabric_udp_ops.send(nd->f, slot, &d, 1);
}

static bool rec_matches(const struct rx_rec *r, size_t len, unsigned seed, uint8_t *scratch)
{
	if (r->len != len)
		return false;
	pattern(scratch, len, seed);
	return memcmp(r->data, scratch, len) == 0;
}

/* One of n's own datagrams, back through the multicast loop: known as its
 * own, and cut to nothing when n's socket filter is on (else whole). */
static bool own_back(struct node *n, const struct rx_rec *r, size_t len, unsigned seed, uint8_t *scratch)
{
	return r->self && (self_filter_on(n) ? r->len == 0 : rec_matches(r, len, seed, scratch));
}

/* The kernel's view of the UDP sockets on our port (/proc/net/udp, udp6):
 * bytes waiting in their receive queues and their drop counts. */
struct udp_sock_info {
	uint16_t port;
	unsigned long long rx_queue, drops;
	unsigned n;
};

static void read_udp_file(const char *path, struct udp_sock_info *info)
{
	char line[512], local[64];
	unsigned long long txq, rxq, drops;
	unsigned port;
	FILE *f = fopen(path, "r");
	char *colon;

	if (!f)
		return;
	if (!fgets(line, sizeof(line), f)) { /* header */
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		/* sl local rem st tx:rx tr:tm retr uid timeout inode ref pointer drops */
		if (sscanf(line, "%*s %63s %*s %*s %llx:%llx %*s %*s %*s %*s %*s %*s %*s %llu", local, &txq, &rxq,
			   &drops) != 4)
			continue;
		colon = strrchr(local, ':');
		if (!colon || sscanf(colon + 1, "%x", &port) != 1 || port != info->port)
			continue;
		info->rx_queue += rxq;
		info->drops += drops;
		info->n++;
	}
	fclose(f);
}

static void read_udp_socks(struct udp_sock_info *info)
{
	info->rx_queue = info->drops = 0;
	info->n = 0;
	read_udp_file("/proc/net/udp", info);
	read_udp_file("/proc/net/udp6", info);
}

static bool queues_empty(void *ctx)
{
	struct udp_sock_info *info = ctx;

	read_udp_socks(info);
	return info->n > 0 && info->rx_queue == 0;
}

/* A udp fabric's config: every key at its default (the config's key
 * table), then this case's address and port. address is not copied:
 * config_done() clears it before freeing the rest. */
static void config_for(struct pubd_config *cfg, const char *address, uint16_t port)
{
	if (pubd_config_defaults(cfg))
		abort();
	cfg->fabric_type = PUBD_FABRIC_UDP;
	cfg->fabric_address = (char *)address;
	cfg->udp_port = port;
}

static void config_done(struct pubd_config *cfg)
{
	cfg->fabric_address = NULL;
	pubd_config_free(cfg);
}

/* One scenario's two fabrics, its groups and buffers. */
struct scen {
	struct node *a, *b;
	uint32_t mtu;
	uint8_t *scratch, *check;
	struct sockaddr_storage g1, g2;
	socklen_t g1len, g2len;
	unsigned nsizes; /* datagrams A sent in step_sizes */
};

/* Datagrams of every interesting size, sent and received whole, on the
 * address's first slot; too big refused. */
static void step_sizes(struct scen *sc)
{
	size_t sizes[8];
	struct want_rx w;
	unsigned i;
	int r;

	sc->nsizes = 0;
	/* Sizes: 1, header only, header + 1, a middle size, MTU - 1, MTU. */
	sizes[sc->nsizes++] = 1;
	sizes[sc->nsizes++] = 48;
	sizes[sc->nsizes++] = 49;
	sizes[sc->nsizes++] = 1000;
	sizes[sc->nsizes++] = sc->mtu - 1;
	sizes[sc->nsizes++] = sc->mtu;
	for (i = 0; i < sc->nsizes; i++) {
		r = send_one(sc->a, 0, sizes[i], i, sc->scratch);
		CHECK(r == 1, "send %zu bytes: %d", sizes[i], r);
	}
	r = send_one(sc->a, 0, (size_t)sc->mtu + 1, 99, sc->scratch);
	CHECK(r == -EMSGSIZE, "MTU + 1 refused: %d", r);
	{
		/* A batch whose last datagram is too big is refused whole. */
		struct pubd_tx_dgram d[2] = {{sc->scratch, 10, NULL, 0, NULL},
					     {sc->scratch, 48, sc->scratch, sc->mtu, NULL}};

		r = pubd_fabric_udp_ops.send(sc->a->f, 0, d, 2);
		CHECK(r == -EMSGSIZE, "batch with an oversize datagram refused: %d", r);
	}
	w = (struct want_rx){sc->b, sc->nsizes};
	CHECK(run_until(have_rx, &w, TIMEOUT_NS), "B received %u of %u", sc->b->nrx, sc->nsizes);
	w = (struct want_rx){sc->a, sc->nsizes};
	CHECK(run_until(have_rx, &w, TIMEOUT_NS), "A (loop) received %u of %u", sc->a->nrx, sc->nsizes);
	for (i = 0; i < sc->nsizes && i < sc->b->nrx; i++) {
		CHECK(rec_matches(&sc->b->rx[i], sizes[i], i, sc->check),
		      "B datagram %u (%zu bytes) identical (got %u)", i, sizes[i], sc->b->rx[i].len);
		CHECK(sc->b->rx[i].slot == 3, "B datagram %u on slot 3 (first slot of the address), got %d", i,
		      sc->b->rx[i].slot);
	}
	CHECK(self_filter_on(sc->a) && self_filter_on(sc->b), "both sockets filter their own datagrams");
	for (i = 0; i < sc->nsizes && i < sc->a->nrx; i++) {
		CHECK(own_back(sc->a, &sc->a->rx[i], sizes[i], i, sc->check), "A's own datagram %u back as its own", i);
		CHECK(sc->a->rx[i].slot == 0, "A datagram %u on slot 0, got %d", i, sc->a->rx[i].slot);
	}
	clear_rx(sc->a);
	clear_rx(sc->b);
}

/* IP_MULTICAST_ALL off: a socket hears only the groups it joined. */
static void step_isolation(struct scen *sc)
{
	struct want_rx w;

	/* g2: only B joined. A sends to it (send-only), then to g1 as a marker:
	 * by the time A sees its marker, it must not have seen g2. */
	CHECK(send_one(sc->a, 1, 500, 7, sc->scratch) == 1, "send to g2");
	CHECK(send_one(sc->a, 0, 100, 8, sc->scratch) == 1, "send marker");
	w = (struct want_rx){sc->b, 2};
	CHECK(run_until(have_rx, &w, TIMEOUT_NS), "B received g2 + marker (%u)", sc->b->nrx);
	w = (struct want_rx){sc->a, 1};
	CHECK(run_until(have_rx, &w, TIMEOUT_NS), "A received its marker");
	CHECK(sc->a->nrx == 1 && sc->a->rx[0].slot == 0 && own_back(sc->a, &sc->a->rx[0], 100, 8, sc->check),
	      "A got only its g1 marker, not the g2 datagram (IP_MULTICAST_ALL off): %u datagrams, first slot %d",
	      sc->a->nrx, sc->a->nrx ? sc->a->rx[0].slot : -2);
	if (sc->b->nrx >= 2) {
		CHECK(sc->b->rx[0].slot == 5 && rec_matches(&sc->b->rx[0], 500, 7, sc->check),
		      "B got g2 on slot 5 (%d)", sc->b->rx[0].slot);
		CHECK(sc->b->rx[1].slot == 3, "B got the marker on slot 3 (%d)", sc->b->rx[1].slot);
	}
	clear_rx(sc->a);
	clear_rx(sc->b);
}

/* Leaving one of two slots on an address keeps the membership. */
static void step_leave(struct scen *sc)
{
	struct want_rx w;

	/* Leave slot 3: slot 4 keeps the membership and now takes g1's datagrams. */
	pubd_fabric_udp_ops.leave(sc->b->f, 3);
	CHECK(send_one(sc->a, 0, 200, 9, sc->scratch) == 1, "send after a partial leave");
	w = (struct want_rx){sc->b, 1};
	CHECK(run_until(have_rx, &w, TIMEOUT_NS), "B still receives g1 after leaving one of two slots");
	CHECK(sc->b->nrx == 1 && sc->b->rx[0].slot == 4, "on slot 4 (%d)", sc->b->nrx ? sc->b->rx[0].slot : -2);
	clear_rx(sc->b);
	/* Leave slot 4 too: g1 no longer reaches B. Marker on g2 (B's slot 5). */
	pubd_fabric_udp_ops.leave(sc->b->f, 4);
	CHECK(send_one(sc->a, 0, 300, 10, sc->scratch) == 1, "send to g1");
	CHECK(send_one(sc->a, 1, 301, 11, sc->scratch) == 1, "send marker to g2");
	w = (struct want_rx){sc->b, 1};
	CHECK(run_until(have_rx, &w, TIMEOUT_NS), "B received its marker");
	CHECK(sc->b->nrx == 1 && sc->b->rx[0].slot == 5 && sc->b->rx[0].len == 301,
	      "B no longer receives g1 after leaving both slots (%u datagrams, first %u bytes)", sc->b->nrx,
	      sc->b->nrx ? sc->b->rx[0].len : 0);
	CHECK(pubd_fabric_udp_ops.send(sc->b->f, 3, NULL, 0) == -ENOTCONN, "send on a left slot is refused");
	clear_rx(sc->a);
	clear_rx(sc->b);
}

/* A batched burst with back-pressure (writable events). */
static void step_burst(struct scen *sc)
{
	struct want_rx w;
	unsigned i;
	int r;

	/* Burst: 256 datagrams of MTU bytes in one batched send (16 MiB on lo). */
	enum { N = 256 };
	struct pubd_tx_dgram *d = calloc(N, sizeof(*d));
	uint8_t *hdrs = calloc(N, 48);
	unsigned sent = 0, ok = 1;
	/* From A (its send-only slot on g2) to B: B's own would come back cut. */
	struct want_writable ww = {sc->a, sc->a->writable + 1};

	if (!d || !hdrs)
		abort();
	pattern(sc->scratch, sc->mtu, 1234);
	for (i = 0; i < N; i++) {
		memset(hdrs + i * 48, 0, 48);
		memcpy(hdrs + i * 48, &i, sizeof(i));
		d[i] = (struct pubd_tx_dgram){hdrs + i * 48, 48, sc->scratch + 48, sc->mtu - 48, NULL};
	}
	while (sent < N) {

		r = pubd_fabric_udp_ops.send(sc->a->f, 1, d + sent, N - sent);
		if (r < 0) {
			CHECK(r >= 0, "burst send: %s", strerror(-r));
			break;
		}
		sent += (unsigned)r;
		if (sent < N) /* back-pressure: wait for ev->writable */
			CHECK(run_until(have_writable, &ww, TIMEOUT_NS), "writable after a short send");
		ww.n = sc->a->writable + 1;
	}
	w = (struct want_rx){sc->b, N};
	CHECK(run_until(have_rx, &w, TIMEOUT_NS), "burst: B received %u of %d", sc->b->nrx, N);
	for (i = 0; i < sc->b->nrx && i < N; i++) {
		unsigned idx;

		memcpy(&idx, sc->b->rx[i].data, sizeof(idx));
		if (idx != i || sc->b->rx[i].len != sc->mtu || sc->b->rx[i].slot != 5 ||
		    memcmp(sc->b->rx[i].data + 48, sc->scratch + 48, sc->mtu - 48) != 0)
			ok = 0;
	}
	CHECK(ok, "burst arrived complete, in order, byte-identical");
	free(d);
	free(hdrs);
	CHECK(sc->a->nrx == 0, "A, not a member of g2, received none of the burst (%u)", sc->a->nrx);
	CHECK(status_num(sc->b, "rx_datagrams") >= 256 + 3, "B's status counts what it received");
	CHECK(status_num(sc->a, "tx_datagrams") == sc->nsizes + 5 + N, "A's status counts what it sent (%llu)",
	      status_num(sc->a, "tx_datagrams"));
	CHECK(status_num(sc->b, "mtu") == sc->mtu, "status shows the MTU");
	clear_rx(sc->b);
}

/* Runs of GSO_N datagrams of 1400 bytes but the last (700), as a message's
 * fragments are, from A to g2 (heard by B on slot 5): each arrives as it
 * was sent. */
enum { GSO_N = 40 };

static void send_runs(struct scen *sc, unsigned runs, unsigned seed)
{
	struct pubd_tx_dgram d[GSO_N];
	uint8_t *buf = malloc((size_t)GSO_N * 1400);
	unsigned r, i;
	int sent;

	if (!buf)
		abort();
	for (r = 0; r < runs; r++) {
		for (i = 0; i < GSO_N; i++) {
			uint32_t len = i == GSO_N - 1 ? 700 : 1400;

			pattern(buf + (size_t)i * 1400, len, seed + r * GSO_N + i);
			d[i] = (struct pubd_tx_dgram){buf + (size_t)i * 1400, 48, buf + (size_t)i * 1400 + 48, len - 48,
						      NULL};
		}
		sent = pubd_fabric_udp_ops.send(sc->a->f, 1, d, GSO_N);
		CHECK(sent == GSO_N, "run %u: %d of %d datagrams taken", r, sent, GSO_N);
	}
	free(buf);
}

static void check_runs(struct scen *sc, unsigned runs, unsigned seed)
{
	struct want_rx w = {sc->b, runs * GSO_N};
	unsigned i, bad = 0;

	CHECK(run_until(have_rx, &w, TIMEOUT_NS), "B received %u of %u datagrams", sc->b->nrx, runs * GSO_N);
	for (i = 0; i < sc->b->nrx && i < runs * GSO_N; i++)
		if (!rec_matches(&sc->b->rx[i], i % GSO_N == GSO_N - 1 ? 700 : 1400, seed + i, sc->check))
			bad++;
	CHECK(bad == 0, "%u of %u datagrams not as sent (boundaries or bytes)", bad, runs * GSO_N);
	clear_rx(sc->a);
	clear_rx(sc->b);
}

static void step_gso(struct scen *sc)
{
	char gso[128];
	int one = 1;

	if (sc->mtu < 1400)
		return;
	send_runs(sc, 3, 500);
	check_runs(sc, 3, 500);
	CHECK(status_value(sc->a, "gso", gso, sizeof(gso)) && !strncmp(gso, "on, ", 4) &&
		      strtoul(gso + 4, NULL, 10) > 0,
	      "A sent segmented runs: gso '%s'", gso);
	fprintf(stderr, "segmentation: %s\n", gso);
	/* Checksums off on the send socket: the kernel refuses segmented sends
	 * (EINVAL); the fabric says so once and sends datagram by datagram.
	 * IPv4 only: an IPv6 receiver drops datagrams without a checksum. */
	if (sc->g2.ss_family != AF_INET)
		return;
	(void)setsockopt(sc->a->f->sfd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one));
	send_runs(sc, 2, 900);
	check_runs(sc, 2, 900);
	CHECK(status_value(sc->a, "gso", gso, sizeof(gso)) && !strncmp(gso, "off, ", 5),
	      "segmentation off after the kernel refused it: gso '%s'", gso);
	one = 0;
	(void)setsockopt(sc->a->f->sfd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one));
}

/* Flood: more than B's receive buffer holds while B does not read; the
 * kernel's drops are reported as the kernel counts them. */
static void step_flood(struct scen *sc, uint16_t port)
{
	int r;

	/* Flood: more than B's receive buffer holds while B does not read
	 * (the loop does not run). The kernel drops the excess and the fabric
	 * must report the socket's drop count (SO_RXQ_OVFL) as the kernel
	 * itself does (/proc/net/udp). Once the kernel says the queues are
	 * empty, a marker carries the final count. */
	unsigned want = (unsigned)(3ull * 64 * 1024 * 1024 / sc->mtu) + 64, sent = 0, got = 0;
	struct udp_sock_info info = {port, 0, 0, 0};
	unsigned long long drops;
	struct want_rx wm = {sc->b, 1};

	pattern(sc->scratch, sc->mtu, 4321);
	while (sent < want) {
		struct pubd_tx_dgram d = {sc->scratch, 48, sc->scratch + 48, sc->mtu - 48, NULL};

		r = pubd_fabric_udp_ops.send(sc->a->f, 1, &d, 1);
		if (r != 1) {
			CHECK(r == 1, "flood send: %d", r);
			break;
		}
		sent++;
	}
	CHECK(run_until(queues_empty, &info, TIMEOUT_NS), "the receive queues drain (%llu bytes left)", info.rx_queue);
	got = sc->b->nrx;
	clear_rx(sc->b);
	CHECK(send_one(sc->a, 1, 77, 5, sc->scratch) == 1, "marker");
	CHECK(run_until(have_rx, &wm, TIMEOUT_NS) && sc->b->rx[sc->b->nrx - 1].len == 77, "marker received");
	got += sc->b->nrx;
	clear_rx(sc->b);
	drops = status_num(sc->b, "rx_kernel_drops");
	read_udp_socks(&info);
	CHECK(drops > 0 && drops == info.drops,
	      "rx_kernel_drops in the status (%llu) are the kernel's own count (%llu)", drops, info.drops);
	CHECK(got + drops <= want + 1 && got + drops + want / 10 >= want, "flood of %u: received %u, kernel drops %llu",
	      want, got, drops);
	fprintf(stderr, "flood of %u datagrams: received %u, kernel receive drops %llu\n", want, got, drops);
}

/* fabric.mtu above the interface's limit is refused; at the limit it is taken. */
static void step_mtu_config(struct scen *sc, struct pubd_config *cfg)
{
	int r;

	cfg->mtu = sc->mtu + 1;
	r = pubd_fabric_udp_ops.open(&sc->a->f, cfg, loop, &events, sc->a);
	CHECK(r == -EINVAL, "fabric.mtu %u above the interface's %u refused: %d", sc->mtu + 1, sc->mtu, r);
	if (!r)
		pubd_fabric_udp_ops.close(sc->a->f);
	cfg->mtu = 1400;
	r = pubd_fabric_udp_ops.open(&sc->a->f, cfg, loop, &events, sc->a);
	CHECK(r == 0 && pubd_fabric_udp_ops.mtu(sc->a->f) == 1400, "fabric.mtu 1400 taken");
	if (!r) {
		CHECK(send_one(sc->a, 0, 1401, 1, sc->scratch) == -ENOTCONN, "send before join refused");
		CHECK(pubd_fabric_udp_ops.join(sc->a->f, 0, (struct sockaddr *)&sc->g1, sc->g1len, PUBD_JOIN_SEND) == 0,
		      "join");
		CHECK(send_one(sc->a, 0, 1401, 1, sc->scratch) == -EMSGSIZE, "1401 > fabric.mtu refused");
		pubd_fabric_udp_ops.close(sc->a->f);
	}
}

static void scenario(const char *label, const char *address, const char *g1_text, const char *g2_text, uint16_t port,
		     bool flood)
{
	struct pubd_config cfg;
	struct node a, b;
	struct scen sc = {.a = &a, .b = &b};
	int before = failures;

	fprintf(stderr, "--- %s: fabric.address %s, groups %s %s\n", label, address ? address : "(unset)", g1_text,
		g2_text);
	config_for(&cfg, address, port);
	open_node(&a, "A", &cfg);
	open_node(&b, "B", &cfg);
	sc.mtu = pubd_fabric_udp_ops.mtu(a.f);
	CHECK(sc.mtu == pubd_fabric_udp_ops.mtu(b.f), "both fabrics on one interface have one MTU");
	CHECK(sc.mtu >= 256 && sc.mtu <= 65507, "MTU %u in range", sc.mtu);
	sc.scratch = malloc(65536 + 16);
	sc.check = malloc(65536 + 16);
	if (!sc.scratch || !sc.check)
		abort();

	sc.g1len = make_group(&sc.g1, g1_text);
	sc.g2len = make_group(&sc.g2, g2_text);
	/* A: slot 0 on g1 (send and receive), slot 1 send-only on g2.
	 * B: slots 3 and 4 on g1 (one membership), slot 5 on g2. */
	CHECK(pubd_fabric_udp_ops.join(a.f, 0, (struct sockaddr *)&sc.g1, sc.g1len, PUBD_JOIN_BOTH) == 0, "join");
	CHECK(pubd_fabric_udp_ops.join(a.f, 1, (struct sockaddr *)&sc.g2, sc.g2len, PUBD_JOIN_SEND) == 0, "join");
	CHECK(pubd_fabric_udp_ops.join(b.f, 3, (struct sockaddr *)&sc.g1, sc.g1len, PUBD_JOIN_BOTH) == 0, "join");
	CHECK(pubd_fabric_udp_ops.join(b.f, 4, (struct sockaddr *)&sc.g1, sc.g1len, PUBD_JOIN_RECV) == 0, "join");
	CHECK(pubd_fabric_udp_ops.join(b.f, 5, (struct sockaddr *)&sc.g2, sc.g2len, PUBD_JOIN_BOTH) == 0, "join");
	CHECK(pubd_fabric_udp_ops.join(b.f, 5, (struct sockaddr *)&sc.g2, sc.g2len, PUBD_JOIN_BOTH) == -EEXIST,
	      "a slot in use is refused");
	wait_up(&a, 0);
	wait_up(&a, 1);
	wait_up(&b, 3);
	wait_up(&b, 4);
	wait_up(&b, 5);
	CHECK(a.up[0] == 1 && b.up[3] == 1, "group_state(up) once per join");

	step_sizes(&sc);
	step_isolation(&sc);
	step_leave(&sc);
	step_burst(&sc);
	step_gso(&sc);
	if (flood)
		step_flood(&sc, port);
	close_node(&a);
	close_node(&b);
	step_mtu_config(&sc, &cfg);
	free(sc.scratch);
	free(sc.check);
	config_done(&cfg);
	fprintf(stderr, "--- %s: %s (MTU %u)\n", label, failures == before ? "ok" : "FAILED", sc.mtu);
}

/* What open and join refuse, each with its error. */
static void refusals(uint16_t port)
{
	struct pubd_config cfg;
	struct pubd_fabric *f = NULL;
	struct sockaddr_storage g;
	socklen_t glen;
	int r;

	fprintf(stderr, "--- refusals\n");
	config_for(&cfg, "192.0.2.77", port); /* TEST-NET-1: on no interface here */
	r = pubd_fabric_udp_ops.open(&f, &cfg, loop, &events, NULL);
	CHECK(r == -EADDRNOTAVAIL, "an address on no interface: %d", r);
	cfg.fabric_address = "nosuchif0";
	r = pubd_fabric_udp_ops.open(&f, &cfg, loop, &events, NULL);
	CHECK(r == -ENODEV, "an unknown interface: %d", r);
	cfg.fabric_address = "::1";
	r = pubd_fabric_udp_ops.open(&f, &cfg, loop, &events, NULL);
	CHECK(r == -EADDRNOTAVAIL, "IPv6 on lo (no multicast loopback there): %d", r);

	cfg.fabric_address = NULL;
	r = pubd_fabric_udp_ops.open(&f, &cfg, loop, &events, NULL);
	CHECK(r == 0, "open on lo: %d", r);
	config_done(&cfg);
	if (r)
		return;
	glen = make_group(&g, "ff15::1");
	CHECK(pubd_fabric_udp_ops.join(f, 0, (struct sockaddr *)&g, glen, PUBD_JOIN_BOTH) == -EAFNOSUPPORT,
	      "an IPv6 group on lo is refused");
	glen = make_group(&g, "10.1.2.3");
	CHECK(pubd_fabric_udp_ops.join(f, 0, (struct sockaddr *)&g, glen, PUBD_JOIN_BOTH) == -EINVAL,
	      "a unicast address is refused");
	glen = make_group(&g, "239.1.1.1");
	CHECK(pubd_fabric_udp_ops.join(f, -1, (struct sockaddr *)&g, glen, PUBD_JOIN_BOTH) == -EINVAL,
	      "a negative slot is refused");
	pubd_fabric_udp_ops.leave(f, 7); /* never joined: harmless */
	pubd_fabric_udp_ops.close(f);
}

int main(void)
{
	uint16_t port = (uint16_t)(20000 + getpid() % 20000);

	bool ns = own_namespace();

	pubd_log_set_level(LOG_DEBUG);
	loop = pubd_loop_create();
	if (!loop)
		return 1;
	pubd_loop_set_idle(loop, idle_check, NULL);

	/* The flood runs on lo only: on a veth the looped-back copies of a
	 * flood of small datagrams overflow the per-CPU backlog before they
	 * reach the socket, which is not what the check is about. */
	scenario("lo by address", "127.0.0.1", "239.255.1.1", "239.255.1.2", port, true);
	scenario("lo by default", NULL, "239.255.1.3", "239.255.1.4", port, ns);
	if (ns) {
		scenario("veth by name, ipv4 groups", "pfa", "239.255.1.5", "239.255.1.6", port, false);
		scenario("veth by name, ipv6 groups", "pfa", "ff15::5075:6264:1", "ff15::5075:6264:2", port, false);
		scenario("veth by ipv4 address", "10.254.0.1", "239.255.1.7", "239.255.1.8", port, false);
		scenario("veth by ipv6 address", "fd00:5075::1", "ff15::5075:6264:3", "ff15::5075:6264:4", port, false);
	}
	refusals(port);

	pubd_loop_destroy(loop);
	if (failures) {
		fprintf(stderr, "fabric_udp_check: %d failure(s)\n", failures);
		return 1;
	}
	fprintf(stderr, "fabric_udp_check: all passed\n");
	return 0;
}
