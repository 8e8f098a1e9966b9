/* SPDX-License-Identifier: MIT */
/*
 * The socket filter that cuts our own looped-back datagrams to nothing
 * (selffilter.c): the program's construction, pure, apart from attaching it.
 */
#ifndef PUBD_UDP_SELFFILTER_H
#define PUBD_UDP_SELFFILTER_H

#include <linux/filter.h>
#include <netinet/in.h>
#include <stdint.h>

/* Instructions of the program, at most: the kernel's limit for a classic
 * BPF program (BPF_MAXINSNS), room for some 370 addresses. */
#define UDP_SELF_FILTER_MAX 4096

/*
 * A classic BPF program for a UDP socket: a datagram from source port
 * sport and a source address among addrs (IPv4 ones v4-mapped, as
 * from_self keeps them) is cut to keep bytes (the UDP header's 8: an empty
 * datagram); every other passes whole. Writes at most cap instructions into
 * out; returns how many, or -ENOSPC.
 */
int udp_self_filter_build(struct sock_filter *out, unsigned cap, uint16_t sport, const struct in6_addr *addrs,
			  unsigned naddrs, uint32_t keep);

#endif
