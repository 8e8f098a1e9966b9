/* SPDX-License-Identifier: MIT */
/*
 * soak_forge: forged pubd datagrams at a modest rate, for the soak
 * (tests/soak/run.sh). Headers are built with the daemon's own encoder
 * (daemon/wire.h), then some fields are spoiled on purpose.
 *
 *   soak_forge --addr GROUP_IP [--addr ...] --port P --group NAME [--group ...]
 *              [--rate R] [--seconds S] [--seed N] [--kinds K,K...] [--stats FILE]
 *
 * Each datagram goes to one of the addresses, for one of the named groups
 * (or, sometimes, a group id nobody configured), and is one of these kinds:
 *   whole    a valid single-fragment message from a fresh random source,
 *            random small sequence number (pubd delivers it: it is valid)
 *   partial  a valid first fragment of a message of up to 16 MiB that never
 *            completes (reassembly state, then reasm_timeout / budget)
 *   badfrag  fragment fields that contradict each other (index >= count,
 *            offset off the layout, count 0, payload past msg_len)
 *   badhdr   wrong magic, version or flag bits
 *   seqjump  a data fragment or heartbeat from one of a few recurring
 *            sources with a random 64-bit sequence number
 *   foreign  a valid message for a group id no daemon has
 * --kinds keeps only the kinds named (to tell which one upsets a daemon).
 * SIGTERM ends it; the counts per kind go to FILE (and stdout).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"

#define MAX_TARGETS  16
#define POOL_SOURCES 16
#define MAX_PAYLOAD  1200 /* fits a 1500-byte link with IP and UDP headers */

enum kind { K_WHOLE, K_PARTIAL, K_BADFRAG, K_BADHDR, K_SEQJUMP, K_FOREIGN, K__COUNT };
static const char *const kind_names[K__COUNT] = {"whole", "partial", "badfrag", "badhdr", "seqjump", "foreign"};
/* Relative weights; --kinds zeroes the others. */
static unsigned kind_weight[K__COUNT] = {25, 25, 20, 10, 15, 5};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static enum kind pick_kind(void)
{
	unsigned total = 0, r, k;

	for (k = 0; k < K__COUNT; k++)
		total += kind_weight[k];
	r = (unsigned)(rnd() % total);
	for (k = 0; k < K__COUNT; k++) {
		if (r < kind_weight[k])
			return (enum kind)k;
		r -= kind_weight[k];
	}
	return K_WHOLE;
}

/* Builds one datagram of the given kind into buf; returns its length. */
static size_t forge(enum kind k, uint64_t group_id, const uint64_t *pool, uint8_t *buf)
{
	struct pubd_wire_hdr h = {.version = PUBD_WIRE_VERSION, .group_id = group_id};
	size_t payload = 16 + rnd() % (MAX_PAYLOAD - 16), i;

	switch (k) {
	case K_FOREIGN:
		h.group_id = rnd() | 1;
		/* fall through */
	case K_WHOLE:
		h.source_id = rnd();
		h.msg_seq = rnd() % 1000;
		h.msg_len = (uint32_t)payload;
		h.frag_count = 1;
		break;
	case K_PARTIAL:
		/* Fragment 0 of a message of frag_count units of `payload` bytes. */
		h.source_id = rnd();
		h.msg_seq = rnd() % 1000;
		h.frag_count = 2 + (uint32_t)(rnd() % ((16u << 20) / payload - 1));
		h.msg_len = (uint32_t)(payload * (h.frag_count - 1) + 1 + rnd() % payload);
		break;
	case K_BADFRAG:
		h.source_id = rnd();
		h.msg_seq = rnd() % 1000;
		h.frag_count = 2 + (uint32_t)(rnd() % 64);
		h.msg_len = (uint32_t)(payload * h.frag_count);
		switch (rnd() % 4) {
		case 0:
			h.frag_index = h.frag_count + (uint32_t)(rnd() % 8); /* index past count */
			break;
		case 1:
			h.frag_index = 1;
			h.frag_offset = (uint32_t)(payload + 1 + rnd() % 100); /* off the layout */
			break;
		case 2:
			h.frag_count = 0; /* data without fragments */
			break;
		default:
			h.frag_index = h.frag_count - 1;
			h.frag_offset = h.msg_len - 8; /* payload runs past msg_len */
			break;
		}
		break;
	case K_SEQJUMP:
		h.source_id = pool[rnd() % POOL_SOURCES];
		h.msg_seq = rnd();
		if (rnd() & 1) {
			h.flags = PUBD_WIRE_F_HEARTBEAT;
			payload = 0;
		} else {
			h.msg_len = (uint32_t)payload;
			h.frag_count = 1;
		}
		break;
	default: /* K_BADHDR: a valid header, then one of its fixed fields spoiled */
		h.source_id = rnd();
		h.msg_len = (uint32_t)payload;
		h.frag_count = 1;
		break;
	}
	pubd_wire_encode(&h, buf);
	if (k == K_BADHDR) {
		switch (rnd() % 3) {
		case 0:
			buf[0] ^= 0x5a; /* magic */
			break;
		case 1:
			buf[4] = (uint8_t)(2 + rnd() % 250); /* version */
			break;
		default:
			buf[5] = (uint8_t)(0x02 << (rnd() % 7)); /* unknown flag bits */
			break;
		}
	}
	for (i = 0; i < payload; i++)
		buf[PUBD_WIRE_HDR_LEN + i] = (uint8_t)rnd();
	return PUBD_WIRE_HDR_LEN + payload;
}

/* --kinds LIST: zero the weight of every kind not in the comma-separated LIST. */
static int keep_kinds(const char *list)
{
	unsigned keep[K__COUNT] = {0}, k, any = 0;
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");

		for (k = 0; k < K__COUNT; k++)
			if (strlen(kind_names[k]) == n && strncmp(p, kind_names[k], n) == 0)
				break;
		if (k == K__COUNT)
			return -1;
		keep[k] = 1;
		any = 1;
		p += n;
		if (*p == ',')
			p++;
	}
	if (!any)
		return -1;
	for (k = 0; k < K__COUNT; k++)
		if (!keep[k])
			kind_weight[k] = 0;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"addr", required_argument, NULL, 'a'},
		{"port", required_argument, NULL, 'p'},
		{"group", required_argument, NULL, 'g'},
		{"rate", required_argument, NULL, 'r'},
		{"seconds", required_argument, NULL, 't'},
		{"seed", required_argument, NULL, 'S'},
		{"stats", required_argument, NULL, 'o'},
		{"kinds", required_argument, NULL, 'k'},
		{NULL, 0, NULL, 0},
	};
	struct sockaddr_in to[MAX_TARGETS];
	uint64_t groups[MAX_TARGETS], pool[POOL_SOURCES], counts[K__COUNT] = {0}, sent = 0, failed = 0, t0, i;
	unsigned naddr = 0, ngroups = 0, rate = 200, k;
	long seconds = 0;
	const char *stats = NULL;
	uint16_t port = 7470;
	struct sigaction sa = {.sa_handler = on_signal};
	uint8_t buf[PUBD_WIRE_HDR_LEN + MAX_PAYLOAD];
	FILE *f;
	int ch, fd;

	rng_state = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'a':
			if (naddr == MAX_TARGETS)
				return 2;
			memset(&to[naddr], 0, sizeof(to[naddr]));
			to[naddr].sin_family = AF_INET;
			if (inet_pton(AF_INET, optarg, &to[naddr].sin_addr) != 1) {
				fprintf(stderr, "soak_forge: bad address %s\n", optarg);
				return 2;
			}
			naddr++;
			break;
		case 'p':
			port = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		case 'g':
			if (ngroups == MAX_TARGETS)
				return 2;
			groups[ngroups++] = pubd_group_id(optarg, strlen(optarg));
			break;
		case 'r':
			rate = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 't':
			seconds = strtol(optarg, NULL, 0);
			break;
		case 'S':
			rng_state = strtoull(optarg, NULL, 0) * 0x9e3779b97f4a7c15ull + 1;
			break;
		case 'o':
			stats = optarg;
			break;
		case 'k':
			if (keep_kinds(optarg) < 0) {
				fprintf(stderr, "soak_forge: --kinds: one or more of "
						"whole,partial,badfrag,badhdr,seqjump,foreign\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: soak_forge --addr IP... --port P --group NAME... [--rate R] "
					"[--seconds S] [--seed N] [--stats FILE]\n");
			return 2;
		}
	}
	if (!naddr || !ngroups || !rate) {
		fprintf(stderr, "soak_forge: needs --addr, --group and a rate above 0\n");
		return 2;
	}
	for (i = 0; i < naddr; i++)
		to[i].sin_port = htons(port);
	for (i = 0; i < POOL_SOURCES; i++)
		pool[i] = rnd();
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("soak_forge: socket");
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	t0 = now_ms();
	for (i = 0; !stop && (seconds <= 0 || now_ms() - t0 < (uint64_t)seconds * 1000); i++) {
		/* Paced against the clock: datagram i leaves at i / rate seconds. */
		uint64_t due = t0 + i * 1000 / rate, now = now_ms();
		enum kind kd = pick_kind();
		unsigned a = (unsigned)(rnd() % naddr);
		size_t len;

		if (due > now) {
			struct timespec ts = {(time_t)((due - now) / 1000), (long)((due - now) % 1000) * 1000000};

			nanosleep(&ts, NULL);
		}
		len = forge(kd, groups[rnd() % ngroups], pool, buf);
		if (sendto(fd, buf, len, 0, (struct sockaddr *)&to[a], sizeof(to[a])) < 0) {
			failed++;
			continue;
		}
		counts[kd]++;
		sent++;
	}
	close(fd);
	f = stats ? fopen(stats, "w") : NULL;
	for (k = 0; k < K__COUNT; k++) {
		printf("%s %" PRIu64 "\n", kind_names[k], counts[k]);
		if (f)
			fprintf(f, "%s %" PRIu64 "\n", kind_names[k], counts[k]);
	}
	printf("sent %" PRIu64 "\nfailed %" PRIu64 "\n", sent, failed);
	if (f) {
		fprintf(f, "sent %" PRIu64 "\nfailed %" PRIu64 "\n", sent, failed);
		fclose(f);
	}
	return 0;
}
