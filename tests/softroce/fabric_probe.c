/* SPDX-License-Identifier: MIT */
/*
 * Drives daemon/fabric_verbs.c for real, inside the Soft-RoCE VM (rxa on
 * 192.168.77.1, rxb on 192.168.77.2; see guest-setup.sh), without the rest
 * of the daemon.
 *
 *   fabric_probe selftest             every check below, one PASS/FAIL line each
 *   fabric_probe send ADDR GROUP N SIZE   join send-only, send N raw datagrams
 *   fabric_probe recv ADDR GROUP N SECS   join, print "joined", receive N raw datagrams
 *
 * send/recv carry bare datagrams (no pubd header) so rdma-core's mckey can
 * sit on the other end.
 *
 * Waits are for events (group_state, rx, writable, counters) with a
 * deadline, never sleeps.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "config.h"
#include "fabric.h"
#include "log.h"
#include "loop.h"
#include "proto.h"

#define NSLOTS 16
#define MAXRX  4096
#define HDR    8

extern char **environ;

struct rxd {
	uint32_t len;
	int32_t slot;
	uint8_t data[1024];
};

struct tf {
	const char *name;
	struct pubd_fabric *f;
	unsigned up[NSLOTS], down[NSLOTS];
	bool is_up[NSLOTS];
	int last_err[NSLOTS];
	unsigned writable;
	unsigned nrx;
	struct rxd *rx; /* the first MAXRX received */
};

static const struct pubd_fabric_ops *ops = &pubd_fabric_verbs_ops;
static struct pubd_loop *loop;
static unsigned npass, nfail;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "PASS" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (ok)
		npass++;
	else
		nfail++;
}

/* ---- fabric callbacks ---- */

static void on_rx(void *ctx, const struct pubd_rx_dgram *d, unsigned n)
{
	struct tf *t = ctx;

	for (unsigned i = 0; i < n; i++) {
		if (t->nrx < MAXRX) {
			struct rxd *r = &t->rx[t->nrx];

			r->len = d[i].len;
			r->slot = d[i].slot;
			memcpy(r->data, d[i].data, d[i].len < sizeof(r->data) ? d[i].len : sizeof(r->data));
		}
		t->nrx++;
	}
}

static void on_writable(void *ctx)
{
	((struct tf *)ctx)->writable++;
}

static void on_group(void *ctx, int slot, bool up, int err)
{
	struct tf *t = ctx;

	printf("  [%s] group_state slot %d %s%s%s\n", t->name, slot, up ? "up" : "down", err ? ": " : "",
	       err ? strerror(-err) : "");
	if (slot < 0 || slot >= NSLOTS)
		return;
	t->is_up[slot] = up;
	t->last_err[slot] = err;
	if (up)
		t->up[slot]++;
	else
		t->down[slot]++;
}

static const struct pubd_fabric_events events = {.rx = on_rx, .writable = on_writable, .group_state = on_group};

/* ---- waiting for events ---- */

typedef bool (*pred_fn)(void *arg);

struct waiter {
	pred_fn pred;
	void *arg;
	uint64_t deadline;
	bool ok;
	struct pubd_loop_timer *t;
};

static void on_tick(void *ctx, uint64_t now)
{
	struct waiter *w = ctx;

	if (w->pred(w->arg)) {
		w->ok = true;
		pubd_loop_stop(loop);
		return;
	}
	if (now >= w->deadline) {
		pubd_loop_stop(loop);
		return;
	}
	pubd_loop_timer_arm(w->t, now + 2000000); /* look again in 2 ms */
}

/* Run the loop until pred holds or timeout_ms passes. */
static bool run_until(pred_fn pred, void *arg, unsigned timeout_ms)
{
	struct waiter w = {pred, arg, pubd_now_ns() + (uint64_t)timeout_ms * 1000000, false, NULL};

	if (pred(arg))
		return true;
	uint64_t t0 = pubd_now_ns(), ms;

	w.t = pubd_loop_timer(loop, on_tick, &w);
	pubd_loop_timer_arm(w.t, 0);
	pubd_loop_run(loop);
	pubd_loop_timer_free(w.t);
	ms = (pubd_now_ns() - t0) / 1000000;
	if (ms >= 1000 || !w.ok)
		printf("  (waited %" PRIu64 " ms%s)\n", ms, w.ok ? "" : ", gave up");
	return w.ok;
}

struct slot_cond {
	struct tf *t;
	int slot;
	unsigned n;
};

static bool p_up_count(void *a)
{
	struct slot_cond *c = a;

	return c->t->up[c->slot] >= c->n && c->t->is_up[c->slot];
}

static bool p_down_count(void *a)
{
	struct slot_cond *c = a;

	return c->t->down[c->slot] >= c->n;
}

static bool p_nrx(void *a)
{
	struct slot_cond *c = a;

	return c->t->nrx >= c->n;
}

static bool wait_up(struct tf *t, int slot, unsigned n, unsigned ms)
{
	struct slot_cond c = {t, slot, n};

	return run_until(p_up_count, &c, ms);
}

static bool wait_rx(struct tf *t, unsigned n, unsigned ms)
{
	struct slot_cond c = {t, 0, n};

	return run_until(p_nrx, &c, ms);
}

/* ---- status rows ---- */

/* Value of status key in fabric t (into out), or false. print dumps all rows. */
static bool status_get(struct tf *t, const char *key, char *out, size_t outlen, bool print)
{
	static const char *const cols[] = {"key:s", "value:s"};
	struct pub_table_builder b = {.grow = pub_table_grow_realloc};
	struct pub_table_reader r;
	struct pub_table_cell k, v;
	bool found = false;

	pub_table_begin(&b, 1, "fabric", cols, 2);
	ops->status(t->f, &b);
	if (pub_table_end(&b) || pub_proto_dec_table(b.buf + PUB_PROTO_HDR_LEN, b.len - PUB_PROTO_HDR_LEN, &r)) {
		free(b.buf);
		return false;
	}
	while (pub_table_next(&r, &k) == 1 && pub_table_next(&r, &v) == 1) {
		if (print)
			printf("  [%s] %.*s = %.*s\n", t->name, (int)k.s.len, k.s.ptr, (int)v.s.len, v.s.ptr);
		if (!found && key && strlen(key) == k.s.len && !memcmp(key, k.s.ptr, k.s.len)) {
			snprintf(out, outlen, "%.*s", (int)v.s.len, v.s.ptr);
			found = true;
		}
	}
	free(b.buf);
	return found;
}

static uint64_t status_u64(struct tf *t, const char *key)
{
	char v[64];

	return status_get(t, key, v, sizeof(v), false) ? strtoull(v, NULL, 10) : UINT64_MAX;
}

struct counter_cond {
	struct tf *t;
	const char *key;
	uint64_t min;
};

static bool p_counter(void *a)
{
	struct counter_cond *c = a;
	uint64_t v = status_u64(c->t, c->key);

	return v != UINT64_MAX && v >= c->min;
}

/* ---- helpers ---- */

static int open_fabric(struct tf *t, const char *name, const char *addr, uint32_t srq, uint32_t wm, uint32_t sq,
		       uint32_t mtu)
{
	struct pubd_config cfg;
	int r;

	/* Every key at its default (the config's key table), then this case's
	 * sizes. The probe's loop never calls ops->linger: sleep on the CQ's
	 * event at once (rx_linger_us 0), as the daemon does without linger. */
	r = pubd_config_defaults(&cfg);
	if (r)
		return r;
	cfg.fabric_type = PUBD_FABRIC_VERBS;
	cfg.fabric_address = (char *)addr;
	cfg.srq_depth = srq;
	cfg.srq_low_watermark = wm;
	cfg.send_queue_depth = sq;
	cfg.mtu = mtu;
	cfg.rx_linger_us = 0;
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->rx = calloc(MAXRX, sizeof(*t->rx));
	if (!t->rx)
		r = -ENOMEM;
	else
		r = ops->open(&t->f, &cfg, loop, &events, t);
	cfg.fabric_address = NULL; /* not ours to free */
	pubd_config_free(&cfg);
	return r;
}

static void close_fabric(struct tf *t)
{
	if (t->f)
		ops->close(t->f);
	t->f = NULL;
	free(t->rx);
	t->rx = NULL;
}

static struct sockaddr_in group(const char *a)
{
	struct sockaddr_in s = {.sin_family = AF_INET};

	inet_pton(AF_INET, a, &s.sin_addr);
	return s;
}

static int join(struct tf *t, int slot, const char *a, enum pubd_join_mode mode)
{
	struct sockaddr_in s = group(a);

	return ops->join(t->f, slot, (struct sockaddr *)&s, sizeof(s), mode);
}

/* Datagram i of a stream: size 1..1024, an 8-byte header (tag, index) and
 * a payload that depends on both, so any mix-up shows. */
static uint32_t dgram_size(uint32_t i)
{
	return HDR + (i * 37u) % (1024 - HDR + 1);
}

static void fill(uint8_t *hdr, uint8_t *pay, uint32_t tag, uint32_t i, uint32_t paylen)
{
	uint32_t be = htonl(tag), bi = htonl(i);

	memcpy(hdr, &be, 4);
	memcpy(hdr + 4, &bi, 4);
	for (uint32_t j = 0; j < paylen; j++)
		pay[j] = (uint8_t)(i * 7 + j * 13 + tag);
}

static bool verify(const struct rxd *r, uint32_t tag, uint32_t *index)
{
	uint8_t hdr[HDR], pay[1024];
	uint32_t be, i;

	if (r->len < HDR)
		return false;
	memcpy(&be, r->data, 4);
	memcpy(&i, r->data + 4, 4);
	if (ntohl(be) != tag)
		return false;
	i = ntohl(i);
	if (r->len != dgram_size(i))
		return false;
	fill(hdr, pay, tag, i, r->len - HDR);
	*index = i;
	return !memcmp(r->data + HDR, pay, r->len - HDR);
}

static bool p_writable(void *a)
{
	struct tf *t = a;

	return t->writable > 0;
}

/* Send datagrams [first, first+n) with tag; waits for ev->writable when
 * the fabric takes fewer than offered. Returns how many were accepted. */
static unsigned send_stream(struct tf *t, int slot, uint32_t tag, uint32_t first, unsigned n, unsigned batch,
			    unsigned *shorts)
{
	static uint8_t hdrs[64][HDR], pays[64][1024];
	struct pubd_tx_dgram d[64];
	unsigned sent = 0;

	while (sent < n) {
		unsigned k = n - sent < batch ? n - sent : batch;
		int ret;

		for (unsigned i = 0; i < k; i++) {
			uint32_t idx = first + sent + i, sz = dgram_size(idx);

			fill(hdrs[i], pays[i], tag, idx, sz - HDR);
			d[i] = (struct pubd_tx_dgram){hdrs[i], HDR, pays[i], sz - HDR, NULL};
		}
		t->writable = 0;
		ret = ops->send(t->f, slot, d, k);
		if (ret < 0) {
			printf("  [%s] send: %s\n", t->name, strerror(-ret));
			break;
		}
		sent += (unsigned)ret;
		if ((unsigned)ret < k) {
			if (shorts)
				(*shorts)++;
			if (!run_until(p_writable, t, 10000)) {
				printf("  [%s] no writable callback within 10 s\n", t->name);
				break;
			}
		}
	}
	return sent;
}

static bool check_stream(struct tf *t, unsigned from, uint32_t tag, uint32_t first, unsigned n, int slot)
{
	unsigned got = 0, bad = 0, misordered = 0, wrong_slot = 0;
	uint32_t expect = first, idx;

	for (unsigned i = from; i < t->nrx && i < MAXRX; i++) {
		if (!verify(&t->rx[i], tag, &idx)) {
			bad++;
			continue;
		}
		if (t->rx[i].slot != slot)
			wrong_slot++;
		if (idx != expect)
			misordered++;
		expect = idx + 1;
		got++;
	}
	printf("  [%s] stream %#x: %u of %u intact, %u corrupt/foreign, %u out of order, %u wrong slot\n", t->name, tag,
	       got, n, bad, misordered, wrong_slot);
	return got == n && bad == 0 && wrong_slot == 0;
}

struct child {
	pid_t pid;
	int status;
	bool done;
};

/* Commands that may block on us (rdma link del waits for our device
 * resources to go) run in the background while the loop keeps going. */
static int spawn(struct child *c, const char *cmd)
{
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};

	printf("  $ %s\n", cmd);
	fflush(stdout);
	c->done = false;
	return posix_spawn(&c->pid, "/bin/sh", NULL, NULL, argv, environ);
}

static bool p_child(void *a)
{
	struct child *c = a;

	if (!c->done && waitpid(c->pid, &c->status, WNOHANG) == c->pid)
		c->done = true;
	return c->done;
}

static bool run_cmd(const char *cmd, unsigned ms)
{
	struct child c;

	if (spawn(&c, cmd))
		return false;
	if (!run_until(p_child, &c, ms)) {
		kill(c.pid, SIGKILL);
		waitpid(c.pid, &c.status, 0);
		return false;
	}
	return WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
}

/* ---- the self test ---- */

static void test_probe(void)
{
	char dev[64];
	int r;

	r = pubd_fabric_verbs_probe("192.168.77.1", dev, sizeof(dev));
	check(r == 1 && !strcmp(dev, "rxa"), "probe 192.168.77.1 is on rxa (got %d '%s')", r, dev);
	r = pubd_fabric_verbs_probe("vb", dev, sizeof(dev));
	check(r == 1 && !strcmp(dev, "rxb"), "probe interface vb is on rxb (got %d '%s')", r, dev);
	r = pubd_fabric_verbs_probe("127.0.0.1", dev, sizeof(dev));
	check(r == 0, "probe 127.0.0.1 is on no RDMA device (got %d '%s')", r, dev);
	r = pubd_fabric_verbs_probe("no-such-if0", dev, sizeof(dev));
	check(r < 0, "probe of an unknown name fails (got %d)", r);
}

static int selftest(void)
{
	struct tf a, b, c, x;
	unsigned shorts = 0, base;
	char v[128];
	bool ok;
	int r;

	test_probe();

	r = open_fabric(&x, "x", "192.168.77.1", 64, 16, 32, 2048);
	check(r == -EINVAL, "fabric.mtu 2048 above the active MTU 1024 is refused (got %d)", r);
	close_fabric(&x);
	r = open_fabric(&x, "x", "127.0.0.1", 64, 16, 32, 0);
	check(r < 0, "open on an address without an RDMA device fails (got %d)", r);
	close_fabric(&x);

	r = open_fabric(&a, "A", "192.168.77.1", 256, 64, 64, 0);
	check(r == 0, "open A on rxa (%d)", r);
	r |= open_fabric(&b, "B", "192.168.77.2", 256, 64, 64, 0);
	check(r == 0, "open B on rxb (%d)", r);
	if (r)
		return 1;
	check(ops->mtu(a.f) == 1024 && ops->mtu(b.f) == 1024, "MTU is the active MTU 1024 (A %u, B %u)", ops->mtu(a.f),
	      ops->mtu(b.f));

	/* join: A publishes (send-only), B subscribes */
	check(join(&a, 0, "239.1.2.3", PUBD_JOIN_SEND) == 0 && join(&b, 5, "239.1.2.3", PUBD_JOIN_RECV) == 0,
	      "join calls accepted");
	check(wait_up(&a, 0, 1, 20000) && wait_up(&b, 5, 1, 20000), "both joins reported up by their join events");
	check(join(&b, 5, "239.1.2.9", PUBD_JOIN_RECV) == -EEXIST, "a slot in use is refused");
	check(join(&b, 9, "192.168.77.9", PUBD_JOIN_RECV) == -EINVAL, "a unicast group address is refused");

	/* data: 300 datagrams of 8..1024 bytes, through 64 send credits */
	r = (int)send_stream(&a, 0, 0xa1, 0, 300, 50, &shorts);
	check(r == 300 && shorts > 0, "A sent 300 datagrams, %u short sends resumed on writable", shorts);
	check(wait_rx(&b, 300, 20000) && check_stream(&b, 0, 0xa1, 0, 300, 5),
	      "B received all 300 byte-identical, in order, on slot 5");
	check(a.nrx == 0, "A's send-only join is not looped back to A (A got %u)", a.nrx);

	/* too big, unknown slot */
	{
		static uint8_t big[1025];
		struct pubd_tx_dgram d = {NULL, 0, big, sizeof(big), NULL};

		r = ops->send(a.f, 0, &d, 1);
		check(r == -EMSGSIZE && status_u64(&a, "tx_too_big") == 1,
		      "a 1025-byte datagram is refused with EMSGSIZE and counted (%d)", r);
		d.payload_len = 1024;
		r = ops->send(a.f, 0, &d, 1);
		check(r == 1, "a 1024-byte datagram is accepted (%d)", r);
		r = ops->send(a.f, 7, &d, 1);
		check(r < 0, "send on a slot never joined fails (%d)", r);
		wait_rx(&b, 301, 5000);
	}

	/* slot reuse after leave: slot 5 now names another group */
	ops->leave(b.f, 5);
	base = b.nrx;
	check(join(&b, 5, "239.1.2.5", PUBD_JOIN_RECV) == 0 && join(&a, 1, "239.1.2.5", PUBD_JOIN_SEND) == 0,
	      "rejoin slot 5 to another group");
	check(wait_up(&b, 5, 2, 20000) && wait_up(&a, 1, 1, 20000), "slot 5 up again on the new group");
	/* The old group first, then a marker on the new one: once the marker
	 * is in, anything for the old group would have been too. */
	send_stream(&a, 0, 0xa2, 0, 20, 20, NULL);
	send_stream(&a, 1, 0xa3, 0, 20, 20, NULL);
	check(wait_rx(&b, base + 20, 20000) && check_stream(&b, base, 0xa3, 0, 20, 5),
	      "B gets the new group on slot 5 and nothing of the group it left");

	/* two slots on one address share one join */
	check(join(&b, 6, "239.1.2.5", PUBD_JOIN_BOTH) == 0 && wait_up(&b, 6, 1, 5000),
	      "a second slot on a joined address is reported up");
	ops->leave(b.f, 6);
	base = b.nrx;
	send_stream(&a, 1, 0xa4, 0, 10, 10, NULL);
	check(wait_rx(&b, base + 10, 20000) && check_stream(&b, base, 0xa4, 0, 10, 5),
	      "leaving the second slot keeps the shared join for the first");

	/* status */
	status_get(&b, NULL, NULL, 0, true);
	check(status_get(&b, "device", v, sizeof(v), false) && !strcmp(v, "rxb"), "status: device rxb");
	check(status_u64(&b, "mtu") == 1024 && status_u64(&b, "srq_depth") == 256 &&
		      status_u64(&b, "srq_low_watermark") == 64 && status_u64(&b, "send_credits") <= 64,
	      "status: mtu, srq depth, watermark, credits");
	check(status_get(&b, "link_layer", v, sizeof(v), false) && strstr(v, "Ethernet"), "status: link layer %s", v);
	check(status_get(&b, "hw_counters.rcvd_pkts", v, sizeof(v), false) ||
		      status_get(&b, "counters.port_rcv_packets", v, sizeof(v), false),
	      "status: the kernel's port counters are included");

	/* SRQ flood: C has 64 buffers and a watermark of 16; A floods it while
	 * C's loop does not run. */
	r = open_fabric(&c, "C", "192.168.77.2", 64, 16, 64, 0);
	check(r == 0, "open C on rxb with a 64-deep SRQ (%d)", r);
	if (r)
		return 1;
	check(join(&c, 0, "239.1.2.8", PUBD_JOIN_RECV) == 0 && join(&a, 2, "239.1.2.8", PUBD_JOIN_SEND) == 0 &&
		      wait_up(&c, 0, 1, 20000) && wait_up(&a, 2, 1, 20000),
	      "C and A joined 239.1.2.8");
	for (int round = 1; round <= 2; round++) {
		static uint8_t buf[1024];
		struct pubd_tx_dgram d[16];
		unsigned sent = 0;
		uint64_t t0 = pubd_now_ns();
		struct counter_cond cc = {&c, "srq_limit_events", (uint64_t)round};

		for (int i = 0; i < 16; i++)
			d[i] = (struct pubd_tx_dgram){NULL, 0, buf, sizeof(buf), NULL};
		base = c.nrx;
		/* Only A's CQ is polled (for credits): C's loop stays still. */
		while (sent < 400 && pubd_now_ns() - t0 < 20000000000ull) {
			r = ops->send(a.f, 2, d, 16);
			if (r > 0)
				sent += (unsigned)r;
			ops->poll(a.f);
		}
		while (status_u64(&a, "send_credits") < 64 && pubd_now_ns() - t0 < 30000000000ull)
			ops->poll(a.f);
		check(sent == 400, "round %d: A flooded 400 datagrams at C", round);
		ok = run_until(p_counter, &cc, 30000);
		check(ok, "round %d: C saw IBV_EVENT_SRQ_LIMIT_REACHED (%" PRIu64 " so far)", round,
		      status_u64(&c, "srq_limit_events"));
		wait_rx(&c, base + 64, 5000);
		check(c.nrx - base > 0 && c.nrx - base <= 64, "round %d: C received %u (at most its 64 buffers)", round,
		      c.nrx - base);
		check(status_u64(&c, "srq_fill") == 64 && status_u64(&c, "srq_refills") >= (uint64_t)round,
		      "round %d: C refilled to 64 and re-armed (refills %" PRIu64 ", min fill %" PRIu64 ")", round,
		      status_u64(&c, "srq_refills"), status_u64(&c, "srq_min_fill"));
	}
	status_get(&c, NULL, NULL, 0, true);
	base = c.nrx;
	{
		static uint8_t buf[100];
		struct pubd_tx_dgram d = {NULL, 0, buf, sizeof(buf), NULL};

		for (int i = 0; i < 10; i++)
			ops->send(a.f, 2, &d, 1);
		check(wait_rx(&c, base + 10, 10000), "after the flood C receives again (%u of 10)", c.nrx - base);
	}

	/* link flap: va down takes rxa's port and, through the veth carrier,
	 * rxb's down; both must rejoin by themselves. */
	{
		struct slot_cond ad = {&a, 1, 1}, bd = {&b, 5, 1};

		check(run_cmd("ip link set va down", 10000), "ip link set va down");
		check(run_until(p_down_count, &ad, 20000) && run_until(p_down_count, &bd, 20000),
		      "port down: groups reported down on A and B (A err %d)", a.last_err[1]);
		check(run_cmd("ip link set va up", 10000), "ip link set va up");
		check(wait_up(&a, 1, 2, 30000) && wait_up(&b, 5, 3, 30000),
		      "port active: A and B rejoined by themselves");
		base = b.nrx;
		send_stream(&a, 1, 0xa5, 0, 20, 20, NULL);
		check(wait_rx(&b, base + 20, 20000) && check_stream(&b, base, 0xa5, 0, 20, 5),
		      "traffic flows again after the flap");
		check(status_u64(&a, "port_err_events") >= 1 && status_u64(&a, "port_active_events") >= 1,
		      "port events counted on A");
	}

	/* device removal: rxb goes away (rdma link del waits until B and C
	 * let go of it) and comes back; B and C rebuild and rejoin. */
	{
		struct child ch;
		struct slot_cond bd = {&b, 5, 2};
		unsigned ups = b.up[5];

		check(spawn(&ch, "rdma link del rxb") == 0, "spawn rdma link del rxb");
		check(run_until(p_down_count, &bd, 20000), "device removal: B reports its group down");
		check(run_until(p_child, &ch, 30000) && WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0,
		      "rdma link del rxb completed (B and C released the device)");
		check(run_cmd("rdma link add rxb type rxe netdev vb", 10000), "rdma link add rxb again");
		check(wait_up(&b, 5, ups + 1, 30000), "B rebuilt on the new rxb and rejoined");
		base = b.nrx;
		send_stream(&a, 1, 0xa6, 0, 20, 20, NULL);
		check(wait_rx(&b, base + 20, 20000) && check_stream(&b, base, 0xa6, 0, 20, 5),
		      "traffic flows to the rebuilt B");
		check(status_u64(&b, "device_removal_events") >= 1 && status_u64(&b, "device_rebuilds") >= 1,
		      "device removal and rebuild counted on B");
	}

	close_fabric(&c);
	close_fabric(&b);
	close_fabric(&a);
	check(true, "closed A, B and C");
	printf("fabric_probe: %u passed, %u failed\n", npass, nfail);
	return nfail ? 1 : 0;
}

/* ---- send / recv (for mckey interop) ---- */

static int cmd_send(const char *addr, const char *grp, unsigned n, unsigned size)
{
	static uint8_t buf[4096];
	struct pubd_tx_dgram d = {NULL, 0, buf, size, NULL};
	struct tf t;
	unsigned sent = 0;
	int r;

	if (size > sizeof(buf))
		return 2;
	memset(buf, 0x5a, size);
	if (open_fabric(&t, "send", addr, 64, 16, 64, 0))
		return 1;
	if (join(&t, 0, grp, PUBD_JOIN_SEND) || !wait_up(&t, 0, 1, 20000)) {
		fprintf(stderr, "fabric_probe: join %s failed\n", grp);
		close_fabric(&t);
		return 1;
	}
	while (sent < n) {
		r = ops->send(t.f, 0, &d, 1);
		if (r < 0) {
			fprintf(stderr, "fabric_probe: send: %s\n", strerror(-r));
			break;
		}
		sent += (unsigned)r;
		if (r == 0)
			run_until(p_writable, &t, 5000);
	}
	while (status_u64(&t, "send_credits") < 64)
		ops->poll(t.f);
	printf("sent %u datagrams of %u bytes to %s\n", sent, size, grp);
	close_fabric(&t);
	return sent == n ? 0 : 1;
}

static int cmd_recv(const char *addr, const char *grp, unsigned n, unsigned secs)
{
	struct tf t;
	bool ok;

	if (open_fabric(&t, "recv", addr, 256, 64, 64, 0))
		return 1;
	if (join(&t, 0, grp, PUBD_JOIN_RECV) || !wait_up(&t, 0, 1, 20000)) {
		fprintf(stderr, "fabric_probe: join %s failed\n", grp);
		close_fabric(&t);
		return 1;
	}
	printf("joined %s\n", grp);
	fflush(stdout);
	ok = wait_rx(&t, n, secs * 1000);
	for (unsigned i = 0; i < t.nrx && i < MAXRX; i++)
		printf("datagram %u: %u bytes, slot %d\n", i, t.rx[i].len, t.rx[i].slot);
	printf("received %u datagrams\n", t.nrx);
	close_fabric(&t);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	int ret = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pubd_log_set_level(getenv("FABRIC_PROBE_DEBUG") ? LOG_DEBUG : LOG_INFO);
	loop = pubd_loop_create();
	if (!loop)
		return 1;
	if (argc == 2 && !strcmp(argv[1], "selftest"))
		ret = selftest();
	else if (argc == 6 && !strcmp(argv[1], "send"))
		ret = cmd_send(argv[2], argv[3], (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]));
	else if (argc == 6 && !strcmp(argv[1], "recv"))
		ret = cmd_recv(argv[2], argv[3], (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]));
	else
		fprintf(stderr, "usage: %s selftest | send ADDR GROUP N SIZE | recv ADDR GROUP N SECS\n", argv[0]);
	pubd_loop_destroy(loop);
	return ret;
}
