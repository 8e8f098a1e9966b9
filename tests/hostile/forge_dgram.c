/* SPDX-License-Identifier: MIT */
/*
 * forge_dgram: a host on the fabric that lies. Builds pubd datagram headers
 * with daemon/wire.h's encoder and sends them by udp to an address (a group's
 * multicast address, or a unicast one: the fabric's port on a host).
 *
 *   forge_dgram --dst ADDR --port P --group NAME --mode MODE [--count N]
 *               [--rate PER_S] [--source S] [--seq Q] [--per K] [--if ADDR] [--age US]
 *               [--token T] [--sport P]
 *
 * MODE:
 *   sources   N whole one-fragment messages, each from a new random source id
 *   seq       N whole messages from --source S, sequence numbers Q, Q+1, ...
 *             (--seq may be huge: a jump in a real stream)
 *   holes     N whole messages from --source S, sequence numbers Q on in
 *             rounds of 2K - 1 (--per K): K messages two apart (K - 1
 *             one-message gaps, missing ranges), then the gaps filled from
 *             the lowest: every message of a stream sent, in an order that
 *             makes each late one look among the ranges left above it
 *   repair    the same as seq, flagged REPAIR (sent to the fabric port alone, they
 *             claim to answer NAKs nobody sent)
 *   heartbeat N heartbeats from --source S announcing next sequence Q, Q+1, ...
 *             (with --age US, the 64-byte form saying the stream began US
 *             microseconds ago, wire_ctl.h; with --token T, carrying repair
 *             token T, as a repair group's source does; nak, gone and
 *             status carry T too instead of random tokens)
 *   span      N whole 8-byte messages, --per K of them per source (a new
 *             random source id every K), sequence numbers 0, Q, 2Q, ...
 *             (--seq Q, default 65536): a stream that a repair group
 *             holds back for order across a wide span
 *   tiny      N first fragments (2-fragment, 2-byte messages, 1 byte each),
 *             --per K of them per source (seq 0..K-1), then a new source
 *   badfrag   N datagrams cycling through header faults: fragment count 0
 *             and 2^32-1, index past count, offset past the end, 4 GiB length
 *   nak       N NAKs (CONTROL) for --source S's messages Q .. Q+65535 (the
 *             largest range) with random repair tokens, a new source port
 *             every --per K of them: a forged NAK flood
 *   gone      N GONEs (CONTROL) from --source S for Q .. Q+65535 with
 *             random tokens: forged "give up" messages
 *   status    N flow control STATUSes (CONTROL) to --source S saying its
 *             receivers can take nothing past Q (window 0), each from a
 *             new random receiver id with a random token: a forged stall
 *   batch     N batches (wire.h) from --source S of --per K empty messages
 *             each (2 bytes apiece: the cheapest messages a datagram can
 *             carry), sequence numbers from Q on; K over PUBD_WIRE_BATCH_MAX
 *             is malformed
 *   chain     N whole 8-byte messages round robin over --per K source ids
 *             chosen to share one bucket of the unkeyed mix reassembly
 *             hashed with before its key (fmix64(source ^ fmix64(group +
 *             c)): low 24 bits equal), sequence numbers 0, 1, ... each
 *   chainrand the same from K random source ids: the control
 *   badbatch  N batches cycling through faults: an entry longer than what
 *             is left, a byte after the last entry, one message only, a
 *             fragment index, more messages than PUBD_WIRE_BATCH_MAX
 *             (nak and status: with --ask-cookie, the forger first sends
 *             one without a cookie and waits for the source's COOKIE, as
 *             a host that receives at its address can; the rest carry it)
 *   sniff     sends nothing: joins --dst (a group address) on --port and
 *             waits up to 10 s for a heartbeat carrying a repair token,
 *             then prints "SOURCE TOKEN" (hex): what any host that hears
 *             the group learns, to forge with (--source, --token)
 *
 * --if: the local address multicast leaves by (default 127.0.0.1).
 * --sport: the local port to send from (default: one the kernel picks, a new
 * one each run). pubd takes a source's datagrams from one address only
 * while that address is heard, as a real source's all leave by one socket:
 * runs that play the same source give the same port, and a forger of a
 * live source another.
 * --rate paces the sending against the clock (default 50000/s), so the
 * test measures pubd, not the kernel's socket buffer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mix.h"
#include "wire.h"
#include "wire_ctl.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: source ids that are random but the same on every run */
static uint64_t next_id(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* The inverse of the 64-bit mix reassembly's table used unkeyed
 * (pub_mix64): a forger who knows it picks ids for one bucket
 * (keyed_hash.h). */

static uint64_t inverse_odd(uint64_t a)
{
	uint64_t x = a;

	for (int i = 0; i < 6; i++)
		x *= 2 - a * x; /* Newton: doubles the correct low bits */
	return x;
}

static uint64_t fmix64_inverse(uint64_t k)
{
	k ^= k >> 33;
	k *= inverse_odd(0xc4ceb9fe1a85ec53ull);
	k ^= k >> 33;
	k *= inverse_odd(0xff51afd7ed558ccdull);
	k ^= k >> 33;
	return k;
}

/* Datagram i of a mode: the header fields (h has the group's defaults
 * set) and how many payload bytes follow. -1 for an unknown mode. "tiny"
 * starts a new source every per datagrams (in *source). */
static int forge(const char *mode, uint64_t i, uint64_t *source, uint64_t seq, uint64_t per, uint64_t *seed,
		 struct pubd_wire_hdr *h, size_t *payload)
{
	if (!strcmp(mode, "sources")) {
		h->source_id = next_id(seed);
	} else if (!strcmp(mode, "seq") || !strcmp(mode, "repair")) {
		h->source_id = *source;
		h->msg_seq = seq + i;
		if (!strcmp(mode, "repair"))
			h->flags = PUBD_WIRE_F_REPAIR;
	} else if (!strcmp(mode, "holes")) {
		uint64_t round = i / (2 * per - 1), j = i % (2 * per - 1);

		h->source_id = *source;
		h->msg_seq = seq + round * (2 * per - 1) + (j < per ? 2 * j : 2 * (j - per) + 1);
	} else if (!strcmp(mode, "heartbeat")) {
		h->source_id = *source;
		h->msg_seq = seq + i;
		h->flags = PUBD_WIRE_F_HEARTBEAT;
		h->msg_len = 0;
		h->frag_count = 0;
		*payload = 0;
	} else if (!strcmp(mode, "span")) {
		if (i % per == 0)
			*source = next_id(seed);
		h->source_id = *source;
		h->msg_seq = (i % per) * (seq ? seq : 65536);
	} else if (!strcmp(mode, "chain") || !strcmp(mode, "chainrand")) {
		uint64_t k = i % per + 1;

		if (!strcmp(mode, "chain"))
			h->source_id = fmix64_inverse(k << 24) ^ pub_mix64(h->group_id + 0x9e3779b97f4a7c15ull);
		else
			h->source_id = pub_mix64(k ^ *seed); /* K fixed ids, random-looking */
		h->msg_seq = i / per;
	} else if (!strcmp(mode, "tiny")) {
		if (i % per == 0)
			*source = next_id(seed);
		h->source_id = *source;
		h->msg_seq = i % per;
		h->msg_len = 2;
		h->frag_count = 2;
		*payload = 1;
	} else if (!strcmp(mode, "badfrag")) {
		h->source_id = *source ? *source : 0x6261646672616700u;
		h->msg_seq = i;
		switch (i % 5) {
		case 0:
			h->frag_count = 0;
			break;
		case 1:
			h->frag_count = UINT32_MAX;
			break;
		case 2:
			h->frag_index = 3;
			break;
		case 3:
			h->frag_offset = 4096;
			break;
		default:
			h->msg_len = UINT32_MAX;
			h->frag_count = 2;
			break;
		}
	} else if (!strcmp(mode, "nak") || !strcmp(mode, "gone") || !strcmp(mode, "status")) {
		h->source_id = strcmp(mode, "gone") ? next_id(seed) : *source;
		h->flags = PUBD_WIRE_F_CONTROL;
		h->frag_count = 0;
		*payload = PUBD_CTL_FIXED_LEN;
		h->msg_len = PUBD_CTL_FIXED_LEN;
	} else if (!strcmp(mode, "batch") || !strcmp(mode, "badbatch")) {
		h->source_id = *source ? *source : 0x6261746368000000u;
		h->flags = PUBD_WIRE_F_BATCH;
		h->frag_count = !strcmp(mode, "batch") ? (uint32_t)per : 4;
		h->msg_seq = seq + i * h->frag_count;
		*payload = (size_t)h->frag_count * PUBD_WIRE_BATCH_ENTRY_HDR;
		if (!strcmp(mode, "badbatch")) {
			switch (i % 5) {
			case 0: /* the last entry says 1 byte: past the end */
				break;
			case 1: /* a byte after the last entry */
				*payload += 1;
				break;
			case 2:
				h->frag_count = 1;
				*payload = PUBD_WIRE_BATCH_ENTRY_HDR;
				break;
			case 3:
				h->frag_index = 1;
				break;
			default:
				h->frag_count = PUBD_WIRE_BATCH_MAX + 1;
				*payload = (size_t)h->frag_count * PUBD_WIRE_BATCH_ENTRY_HDR;
				break;
			}
		}
		h->msg_len = (uint32_t)*payload;
	} else {
		return -1;
	}
	return 0;
}

/* The NAK, GONE or STATUS body of datagram i (forge set the header), with
 * token (0: a random one each). */
static void ctl_body(const char *mode, uint64_t source, uint64_t seq, uint64_t token, uint64_t cookie, uint64_t *seed,
		     uint8_t *out)
{
	bool status = !strcmp(mode, "status");
	struct pubd_ctl c = {.type = status		    ? PUBD_CTL_STATUS
				     : !strcmp(mode, "nak") ? PUBD_CTL_NAK
							    : PUBD_CTL_GONE,
			     .count = status ? 0 : PUBD_CTL_MAX_COUNT,
			     .stream = source,
			     .first_seq = seq,
			     .token = token ? token : next_id(seed),
			     .cookie = status || !strcmp(mode, "nak") ? cookie : 0};

	pubd_ctl_encode(&c, out, PUBD_CTL_MAX_LEN);
}

/* --ask-cookie: what a host that receives where it sends from learns by
 * asking. A datagram of ctl_len bytes (a NAK or STATUS without a cookie)
 * goes to the source on fd; its COOKIE answer comes back to fd. 0 when
 * none came within 2 s. */
static uint64_t ask_cookie(int fd, const struct sockaddr_in *to, const uint8_t *dgram, size_t len)
{
	struct timeval tv = {.tv_sec = 2};
	uint64_t deadline = now_ns() + 2000000000ull;
	uint8_t buf[2048];

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    sendto(fd, dgram, len, 0, (const struct sockaddr *)to, sizeof(*to)) < 0)
		return 0;
	while (now_ns() < deadline) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct pubd_wire_hdr h;
		struct pubd_ctl c;
		const uint8_t *p;
		size_t plen;

		if (n <= 0)
			continue;
		if (pubd_wire_decode(buf, (size_t)n, &h, &p, &plen) || !(h.flags & PUBD_WIRE_F_CONTROL) ||
		    pubd_ctl_decode(p, plen, &c) || c.type != PUBD_CTL_COOKIE)
			continue;
		return c.cookie;
	}
	return 0;
}

/* Mode sniff: a repair group's source id and token from its heartbeats,
 * read as any host on the group's multicast can. 0 when one was printed. */
static int sniff(const struct sockaddr_in *group, struct in_addr mif)
{
	struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = group->sin_port};
	struct ip_mreq mr = {.imr_multiaddr = group->sin_addr, .imr_interface = mif};
	struct timeval tv = {.tv_sec = 1};
	uint64_t deadline = now_ns() + 10000000000ull;
	uint8_t buf[65536];
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* The port is pubd's too: both sockets get the group's datagrams. */
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&any, sizeof(any)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		perror("forge_dgram: sniff");
		return 1;
	}
	while (now_ns() < deadline) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct pubd_wire_hdr h;
		const uint8_t *p;
		size_t plen;
		uint64_t token;

		if (n <= 0 || pubd_wire_decode(buf, (size_t)n, &h, &p, &plen) || !(h.flags & PUBD_WIRE_F_HEARTBEAT))
			continue;
		token = pubd_ctl_hb_token(buf, (size_t)n);
		if (!token)
			continue;
		printf("0x%016" PRIx64 " 0x%016" PRIx64 "\n", h.source_id, token);
		close(fd);
		return 0;
	}
	fprintf(stderr, "forge_dgram: sniff: no heartbeat with a token in 10 s\n");
	close(fd);
	return 1;
}

/* Sleep until the monotonic clock reaches due (ns). */
static void pace_until(uint64_t due)
{
	while (now_ns() < due) {
		struct timespec ts = {0, (long)(due - now_ns())};

		nanosleep(&ts, NULL); /* pacing, not synchronisation */
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"dst", required_argument, NULL, 'd'},
		{"port", required_argument, NULL, 'p'},
		{"group", required_argument, NULL, 'g'},
		{"mode", required_argument, NULL, 'm'},
		{"count", required_argument, NULL, 'n'},
		{"rate", required_argument, NULL, 'r'},
		{"source", required_argument, NULL, 'S'},
		{"seq", required_argument, NULL, 'Q'},
		{"per", required_argument, NULL, 'k'},
		{"if", required_argument, NULL, 'i'},
		{"age", required_argument, NULL, 'a'},
		{"token", required_argument, NULL, 'T'},
		{"sport", required_argument, NULL, 'P'},
		{"ask-cookie", no_argument, NULL, 'C'},
		{NULL, 0, NULL, 0},
	};
	const char *dst = NULL, *group = NULL, *mode = NULL, *ifaddr = "127.0.0.1";
	uint64_t count = 1, rate = 50000, source = 0, seq = 0, per = 64, seed = 0x686f7374696c65u, i, sent = 0;
	struct sockaddr_in to = {.sin_family = AF_INET}, from = {.sin_family = AF_INET};
	struct in_addr mif;
	uint8_t dgram[PUBD_WIRE_HDR_LEN + PUBD_CTL_MAX_LEN + 4 * PUBD_WIRE_BATCH_MAX];
	uint64_t start, age = 0, token = 0, cookie = 0;
	bool aged = false, want_cookie = false;
	int c, fd, one = 1;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			dst = optarg;
			break;
		case 'p':
			to.sin_port = htons((uint16_t)atoi(optarg));
			break;
		case 'g':
			group = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		case 'n':
			count = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			rate = strtoull(optarg, NULL, 0);
			break;
		case 'S':
			source = strtoull(optarg, NULL, 0);
			break;
		case 'Q':
			seq = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			per = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			ifaddr = optarg;
			break;
		case 'a':
			age = strtoull(optarg, NULL, 0);
			aged = true;
			break;
		case 'T':
			token = strtoull(optarg, NULL, 0);
			break;
		case 'P':
			from.sin_port = htons((uint16_t)atoi(optarg));
			break;
		case 'C':
			want_cookie = true;
			break;
		default:
			return 2;
		}
	}
	if (!dst || !group || !mode || !to.sin_port || inet_pton(AF_INET, dst, &to.sin_addr) != 1 ||
	    inet_pton(AF_INET, ifaddr, &mif) != 1 || !per) {
		fprintf(stderr, "usage: forge_dgram --dst ADDR --port P --group NAME --mode MODE [options]\n");
		return 2;
	}
	if (!strcmp(mode, "sniff"))
		return sniff(&to, mif);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mif, sizeof(mif)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &one, sizeof(one)) < 0) {
		perror("forge_dgram: socket");
		return 1;
	}
	/* Several runs (or runs at once) may send from one port: nothing
	 * here receives on it. */
	if (from.sin_port && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
			      bind(fd, (struct sockaddr *)&from, sizeof(from)) < 0)) {
		perror("forge_dgram: --sport");
		return 1;
	}
	start = now_ns();
	for (i = 0; i < count; i++) {
		struct pubd_wire_hdr h = {
			.version = PUBD_WIRE_VERSION,
			.group_id = pubd_group_id(group, strlen(group)),
			.msg_len = 8,
			.frag_count = 1,
		};
		size_t payload = 8, hdr_len = PUBD_WIRE_HDR_LEN;

		if (forge(mode, i, &source, seq, per, &seed, &h, &payload) < 0) {
			fprintf(stderr, "forge_dgram: unknown mode %s\n", mode);
			return 2;
		}
		if (payload > sizeof(dgram) - PUBD_WIRE_HDR_LEN) {
			fprintf(stderr, "forge_dgram: %zu payload bytes do not fit a datagram\n", payload);
			return 2;
		}
		if ((h.flags & PUBD_WIRE_F_CONTROL) && cookie) {
			payload += PUBD_CTL_COOKIE_LEN;
			h.msg_len += PUBD_CTL_COOKIE_LEN;
		}
		pubd_wire_encode(&h, dgram);
		if ((aged || token) && (h.flags & PUBD_WIRE_F_HEARTBEAT))
			hdr_len = pubd_ctl_hb_put(dgram, token, age);
		memset(dgram + PUBD_WIRE_HDR_LEN, 0x5a, payload);
		if (h.flags & PUBD_WIRE_F_BATCH) {
			/* Empty messages: every length 0, but the first badbatch
			 * fault's last entry, which claims a byte beyond. */
			memset(dgram + PUBD_WIRE_HDR_LEN, 0, payload);
			if (!strcmp(mode, "badbatch") && i % 5 == 0)
				dgram[PUBD_WIRE_HDR_LEN + payload - 1] = 1;
		} else if (h.flags & PUBD_WIRE_F_CONTROL) {
			ctl_body(mode, source, seq, token, cookie, &seed, dgram + PUBD_WIRE_HDR_LEN);
		} else if (payload) {
			memcpy(dgram + PUBD_WIRE_HDR_LEN, &i, payload < sizeof(i) ? payload : sizeof(i));
		}
		if (want_cookie && !cookie && (h.flags & PUBD_WIRE_F_CONTROL)) {
			cookie = ask_cookie(fd, &to, dgram, PUBD_WIRE_HDR_LEN + payload);
			if (!cookie) {
				fprintf(stderr, "forge_dgram: no COOKIE came back\n");
				return 1;
			}
			i--; /* this one again, with it */
			continue;
		}
		/* A NAK flood from many ports: a new socket (port) every per. */
		if (!strcmp(mode, "nak") && i && i % per == 0) {
			close(fd);
			fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (fd < 0) {
				perror("forge_dgram: socket");
				return 1;
			}
		}
		if (sendto(fd, dgram, hdr_len + payload, 0, (struct sockaddr *)&to, sizeof(to)) > 0)
			sent++;
		else if (errno != ENOBUFS && errno != EAGAIN)
			perror("forge_dgram: sendto");
		/* Pace: never ahead of count/rate seconds since the start. */
		if (rate && ((i & 63) == 63 || rate < 1000))
			pace_until(start + (i + 1) * 1000000000u / rate);
	}
	printf("forge_dgram: %s: %" PRIu64 " of %" PRIu64 " datagrams sent to %s:%u\n", mode, sent, count, dst,
	       ntohs(to.sin_port));
	close(fd);
	return sent == count ? 0 : 1;
}
