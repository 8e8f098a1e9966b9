// SPDX-License-Identifier: MIT
/*
 * A libpub smoke check to run by hand against a running pubd:
 *
 *   pub_smoke [-s SOCKET] [-g GROUP] [-n COUNT] [--restart SECONDS]
 *
 * Subscribes one handle to GROUP, publishes COUNT messages of growing size
 * (up to max_message) from a second handle, the last with PUB_SYNC, and
 * checks that every one comes back intact and in order. Then checks that an
 * unknown group is refused with -PUB_ENOGROUP, that a too-large message is
 * refused locally, and that a query answers. Then publishes messages written
 * in place (pub_claim/pub_commit: one that fits the shared-memory log's
 * record, one that does not, one with PUB_SYNC) and checks them on the
 * subscriber too. With --restart it then keeps
 * publishing and receiving for SECONDS while you restart pubd, and reports
 * the reconnects it saw. Exit 0 when everything held.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pub.h>

static int failures;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			failures++;                                          \
		}                                                            \
	} while (0)

static void fill(uint8_t *p, size_t n, unsigned i)
{
	for (size_t k = 0; k < n; k++)
		p[k] = (uint8_t)(i * 31 + k);
}

static int count_tables(const struct pub_table *t, void *arg)
{
	(*(int *)arg)++;
	printf("  table %s: %u columns, %zu rows\n", t->name, t->ncols, t->nrows);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* count messages from 0 bytes up to max_message, published and received
 * whole, in order, from one source: pubd's, or on the direct path the
 * publisher's own for the group. -1 when out of memory. */
static int round_trip(pub_client_t *sub, pub_client_t *pub, const char *group, unsigned count,
		      const struct pub_info *info)
{
	struct pub_message m;
	uint64_t last_seq = 0, source = 0;
	uint8_t *buf = malloc(info->max_message ? info->max_message : 1);
	int r;

	if (!buf)
		return -1;
	/* Sizes from 0 up to max_message, the last message exactly max_message. */
	for (unsigned i = 0; i < count; i++) {
		size_t len = i + 1 == count ? info->max_message : (size_t)info->max_message * i / count;

		fill(buf, len, i);
		r = pub_publish(pub, group, buf, len, i + 1 == count ? PUB_SYNC : 0);
		CHECK(r == 0, "publish %u (%zu bytes): %s", i, len, pub_errmsg(pub));
	}
	for (unsigned i = 0; i < count; i++) {
		size_t len = i + 1 == count ? info->max_message : (size_t)info->max_message * i / count;

		r = pub_recv(sub, &m, 5000);
		CHECK(r == 1, "recv %u: %d %s", i, r, r < 0 ? pub_errmsg(sub) : "timeout");
		if (r != 1)
			break;
		fill(buf, len, i);
		CHECK(m.len == len && memcmp(m.data, buf, len) == 0, "message %u: %zu bytes, want %zu", i, m.len, len);
		CHECK(strcmp(m.group, group) == 0, "message %u: group %s", i, m.group);
		CHECK(i == 0 || m.source == source, "message %u: source %016" PRIx64 " after %016" PRIx64, i, m.source,
		      source);
		source = m.source;
		CHECK(i == 0 || m.seq == last_seq + 1, "message %u: seq %" PRIu64 " after %" PRIu64, i, m.seq,
		      last_seq);
		last_seq = m.seq;
	}
	printf("%u messages up to %u bytes: round trip ok\n", count, info->max_message);
	free(buf);
	return 0;
}

/* What pubd refuses, refused with the right error; a status query answered. */
static void refusals(pub_client_t *sub, pub_client_t *pub, const char *group, const struct pub_info *info)
{
	uint8_t *big;
	int r, tables = 0;

	r = pub_publish(pub, "no-such-group-smoke", "x", 1, PUB_SYNC);
	CHECK(r == -PUB_ENOGROUP, "unknown group: %d %s", r, pub_errmsg(pub));
	printf("unknown group: %s\n", pub_errmsg(pub));
	big = malloc((size_t)info->max_message + 1);
	if (big) {
		r = pub_publish(pub, group, big, (size_t)info->max_message + 1, 0);
		CHECK(r == -PUB_ETOOLARGE, "too large: %d", r);
		printf("too large: %s\n", pub_errmsg(pub));
		free(big);
	}
	r = pub_subscribe(sub, "no-such-group-smoke");
	CHECK(r == -PUB_ENOGROUP, "subscribe unknown: %d %s", r, pub_errmsg(sub));
	r = pub_query(pub, PUB_Q_STATUS, NULL, count_tables, &tables);
	CHECK(r == 0 && tables > 0, "query status: %d %s", r, pub_errmsg(pub));
}

/* Messages written in place: small (in the publish log itself when the
 * transport is shared memory), large (in the handle), and with PUB_SYNC. */
static void claimed(pub_client_t *sub, pub_client_t *pub, const char *group, const struct pub_info *info)
{
	const size_t sizes[3] = {100, info->max_message < 200000 ? info->max_message : 200000, 1000};
	const int flags[3] = {0, 0, PUB_SYNC};
	uint8_t *want = malloc(sizes[1]);
	struct pub_message m;
	void *p, *q;
	unsigned i;
	int r;

	for (i = 0; i < 3 && want; i++) {
		r = pub_claim(pub, group, sizes[i], &p);
		CHECK(r == 0, "claim %zu bytes: %s", sizes[i], pub_errmsg(pub));
		if (r < 0)
			break;
		CHECK(pub_claim(pub, group, 1, &q) == -EBUSY, "a second open claim is refused");
		CHECK(pub_publish(pub, group, "x", 1, 0) == -EBUSY, "a publish while a claim is open is refused: %s",
		      pub_errmsg(pub));
		fill(p, sizes[i], 100 + i);
		r = pub_commit(pub, flags[i]);
		CHECK(r == 0, "commit %zu bytes: %s", sizes[i], pub_errmsg(pub));
	}
	CHECK(pub_commit(pub, 0) == -EINVAL, "commit without a claim is refused");
	for (i = 0; i < 3 && want; i++) {
		r = pub_recv(sub, &m, 5000);
		CHECK(r == 1, "recv claimed %u: %d %s", i, r, r < 0 ? pub_errmsg(sub) : "timeout");
		if (r != 1)
			break;
		fill(want, sizes[i], 100 + i);
		CHECK(m.len == sizes[i] && memcmp(m.data, want, m.len) == 0, "claimed message %u: %zu bytes, want %zu",
		      i, m.len, sizes[i]);
	}
	printf("3 messages written in place (pub_claim/pub_commit): %s\n", i == 3 ? "ok" : "FAILED");
	free(want);
}

/* --restart: publish and receive for seconds while someone restarts pubd;
 * both clients must come through (libpub reconnects). */
static void restart_window(pub_client_t *sub, pub_client_t *pub, const char *group, int seconds)
{
	double end = now_s() + seconds;
	unsigned sent = 0, got = 0, refused = 0;
	struct pub_info si, pi;
	struct pub_message m;
	int r;

	printf("restart pubd now; publishing and receiving for %d s\n", seconds);
	while (now_s() < end) {
		r = pub_publish(pub, group, "tick", 4, 0);
		if (r == 0)
			sent++;
		else
			refused++;
		while ((r = pub_recv(sub, &m, 10)) == 1)
			got++;
		if (r < 0)
			printf("recv: %s\n", pub_errmsg(sub));
	}
	pub_info(sub, &si);
	pub_info(pub, &pi);
	printf("sent %u, refused %u (pubd down), received %u; reconnects: subscriber %" PRIu64 ", publisher %" PRIu64
	       "\n",
	       sent, refused, got, si.reconnects, pi.reconnects);
	CHECK(got > 0, "nothing received across the restart window");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"group", required_argument, NULL, 'g'},
		{"count", required_argument, NULL, 'n'},
		{"restart", required_argument, NULL, 'r'},
		{0},
	};
	const char *path = NULL, *group = "smoke";
	unsigned count = 50;
	int restart_s = 0, opt, r;
	pub_client_t *sub = NULL, *pub = NULL;
	struct pub_info info;

	while ((opt = getopt_long(argc, argv, "s:g:n:r:", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'g':
			group = optarg;
			break;
		case 'n':
			count = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			restart_s = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-s SOCKET] [-g GROUP] [-n COUNT] [--restart SECONDS]\n", argv[0]);
			return 2;
		}
	}
	printf("libpub %s (built with %s)\n", pub_version(), PUB_VERSION_STRING);
	r = pub_connect(&sub, path, NULL);
	if (r < 0) {
		fprintf(stderr, "connect: %s\n", pub_errmsg(NULL));
		return 2;
	}
	r = pub_connect(&pub, path, NULL);
	CHECK(r == 0, "second connect: %s", pub_errmsg(NULL));
	if (r < 0)
		goto out;
	pub_info(pub, &info);
	printf("pubd %s, fabric %s, max_message %u, mtu %u, client %u, source %016" PRIx64 "\n", info.daemon_version,
	       info.fabric, info.max_message, info.mtu, info.client_id, info.source_id);

	r = pub_subscribe(sub, group);
	CHECK(r == 0, "subscribe %s: %s", group, pub_errmsg(sub));
	if (r < 0)
		goto out;

	if (round_trip(sub, pub, group, count, &info) < 0)
		goto out;
	refusals(sub, pub, group, &info);
	claimed(sub, pub, group, &info);

	if (restart_s > 0)
		restart_window(sub, pub, group, restart_s);
out:
	pub_close(pub);
	pub_close(sub);
	printf("%s\n", failures ? "FAILED" : "OK");
	return failures ? 1 : 0;
}
