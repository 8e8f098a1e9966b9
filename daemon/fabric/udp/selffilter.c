/* SPDX-License-Identifier: MIT */
/*
 * Our own datagrams, cut short in the kernel. The group socket receives
 * every datagram we send to a group we listen to (IP_MULTICAST_LOOP stays
 * on: other daemons on this host need it), and pubd discards it (rx_self).
 * Copying a 64 KiB message out of the socket only to discard it costs as
 * much as sending it. A classic BPF socket filter cuts a datagram from our
 * send port and one of our addresses (the test from_self makes in rx.c, on
 * the same port and address list) to its UDP header, so it reads as an
 * empty datagram from us: still counted as rx_self, nothing copied.
 * Everything else passes whole.
 *
 * A filter that drops (returns 0) would be counted in the socket's drops,
 * which SO_RXQ_OVFL reports as overflow: cutting is not a drop.
 *
 * The filter runs on the UDP datagram: offset 0 is its header, the IP
 * header is at SKF_NET_OFF.
 */
#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>

#include "selffilter.h"
#include "udp_internal.h"
#include "log.h"

#define NET(off) ((uint32_t)SKF_NET_OFF + (off))

struct prog {
	struct sock_filter *ins;
	unsigned n, cap;
};

static void emit(struct prog *p, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	if (p->n < p->cap)
		p->ins[p->n] = (struct sock_filter){code, jt, jf, k};
	p->n++;
}

/* Jump to instruction `to` from the one about to be emitted. */
static void jump(struct prog *p, unsigned to)
{
	emit(p, BPF_JMP | BPF_JA, 0, 0, to - p->n - 1);
}

static uint32_t word(const struct in6_addr *a, unsigned i)
{
	uint32_t w;

	memcpy(&w, &a->s6_addr[4 * i], 4);
	return ntohl(w); /* BPF loads words big-endian */
}

int udp_self_filter_build(struct sock_filter *out, unsigned cap, uint16_t sport, const struct in6_addr *addrs,
			  unsigned naddrs, uint32_t keep)
{
	/* Two passes: the first counts, so the jumps to the end are known. */
	struct prog p = {out, 0, 0};
	unsigned cut = 0, pass = 0, i, w, pass_no;

	for (pass_no = 0; pass_no < 2; pass_no++) {
		p.n = 0;
		p.cap = pass_no ? cap : 0;
		emit(&p, BPF_LD | BPF_H | BPF_ABS, 0, 0, 0); /* the UDP source port */
		emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, sport);
		jump(&p, pass);
		emit(&p, BPF_LD | BPF_B | BPF_ABS, 0, 0, NET(0)); /* the IP version */
		emit(&p, BPF_ALU | BPF_RSH | BPF_K, 0, 0, 4);
		emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 4);
		emit(&p, BPF_JMP | BPF_JA, 0, 0, 0); /* IPv4: patched below, to its block */
		{
			unsigned v4_start, ja_v4 = p.n - 1;

			/* IPv6: the source's four words against each address. */
			for (i = 0; i < naddrs; i++) {
				for (w = 0; w < 4; w++) {
					emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, NET(8 + 4 * w));
					/* A mismatch skips the rest of this address's block. */
					emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 0, (uint8_t)(2 * (3 - w) + 1),
					     word(&addrs[i], w));
				}
				jump(&p, cut);
			}
			jump(&p, pass);
			v4_start = p.n;
			if (pass_no && ja_v4 < cap)
				out[ja_v4].k = v4_start - ja_v4 - 1;
			/* IPv4: the source against the v4-mapped addresses. */
			emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, NET(12));
			for (i = 0; i < naddrs; i++) {
				if (!IN6_IS_ADDR_V4MAPPED(&addrs[i]))
					continue;
				emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, word(&addrs[i], 3));
				jump(&p, cut);
			}
			jump(&p, pass);
		}
		cut = p.n;
		emit(&p, BPF_RET | BPF_K, 0, 0, keep);
		pass = p.n;
		emit(&p, BPF_RET | BPF_K, 0, 0, UINT32_MAX);
	}
	return p.n <= cap ? (int)p.n : -ENOSPC;
}

void udp_self_filter_attach(struct pubd_fabric *f)
{
	struct sock_filter *ins = malloc(UDP_SELF_FILTER_MAX * sizeof(*ins));
	struct sock_fprog prog;
	unsigned naddrs = f->nself_addrs;
	int n = -ENOMEM;

	/* A host with more addresses than a program holds gets one for the
	 * first (its interface's first): the rest are read whole and known
	 * by from_self, which knows them all. */
	while (ins &&
	       (n = udp_self_filter_build(ins, UDP_SELF_FILTER_MAX, f->sport, f->self_addrs, naddrs,
					  (uint32_t)sizeof(struct udphdr))) == -ENOSPC &&
	       naddrs > 0)
		naddrs = naddrs > 64 ? naddrs - naddrs / 8 : naddrs - 1;
	if (n >= 0) {
		prog = (struct sock_fprog){.len = (unsigned short)n, .filter = ins};
		n = setsockopt(f->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ? -errno : n;
	}
	free(ins);
	if (n < 0) {
		log_info("fabric udp: no socket filter for our own datagrams (%s, %u addresses): they are read "
			 "whole and discarded",
			 strerror(-n), f->nself_addrs);
		return;
	}
	if (naddrs < f->nself_addrs)
		log_info("fabric udp: the socket filter for our own datagrams holds %u of the host's %u addresses: "
			 "ours from the others are read whole and discarded",
			 naddrs, f->nself_addrs);
	f->self_filter = true;
	f->self_filter_addrs = naddrs;
}
