/* SPDX-License-Identifier: MIT */
/*
 * The socket filter for our own looped-back datagrams (fabric/udp/
 * selffilter.c), run here by a small classic-BPF interpreter of the
 * instructions it uses, on IPv4 and IPv6 datagrams: ours (our send port
 * and one of our addresses) are cut to the UDP header, all others pass
 * whole; room for 300 addresses (a host with more gets a filter for the
 * first, and the rest are told apart in rx.c). The kernel's side is in the
 * integration tier (raw_udp.sh).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "selffilter.h"

#define SPORT 40123
#define KEEP  8u
#define NET0  ((uint32_t)SKF_NET_OFF)

struct dgram {
	uint8_t net[40]; /* the IP header */
	uint8_t udp[8];	 /* the UDP header, where the filter's offset 0 is */
};

static const uint8_t *at(const struct dgram *d, uint32_t k, uint32_t n)
{
	if (k >= NET0) {
		assert_true(k - NET0 + n <= sizeof(d->net));
		return d->net + (k - NET0);
	}
	assert_true(k + n <= sizeof(d->udp));
	return d->udp + k;
}

/* What the kernel would keep of d: the program's return value. */
static uint32_t run(const struct sock_filter *p, int n, const struct dgram *d)
{
	uint32_t a = 0;
	int pc = 0, steps = 0;

	while (pc >= 0 && pc < n && steps++ < 10000) {
		const struct sock_filter *i = &p[pc++];
		const uint8_t *b;

		switch (i->code) {
		case BPF_LD | BPF_B | BPF_ABS:
			a = *at(d, i->k, 1);
			break;
		case BPF_LD | BPF_H | BPF_ABS:
			b = at(d, i->k, 2);
			a = (uint32_t)b[0] << 8 | b[1];
			break;
		case BPF_LD | BPF_W | BPF_ABS:
			b = at(d, i->k, 4);
			a = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
			break;
		case BPF_ALU | BPF_RSH | BPF_K:
			a >>= i->k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += a == i->k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JA:
			pc += (int)i->k;
			break;
		case BPF_RET | BPF_K:
			return i->k;
		default:
			fail_msg("instruction %d: code 0x%x not expected", pc - 1, i->code);
		}
	}
	fail_msg("the program ran off its end or looped");
	return 0;
}

/* A datagram of family (AF_INET or AF_INET6) from src and sport. */
static struct dgram from(int family, const char *src, uint16_t sport)
{
	struct dgram d = {0};

	d.net[0] = family == AF_INET ? 0x45 : 0x60;
	assert_int_equal(inet_pton(family, src, d.net + (family == AF_INET ? 12 : 8)), 1);
	d.udp[0] = (uint8_t)(sport >> 8);
	d.udp[1] = (uint8_t)sport;
	return d;
}

static struct dgram v4(const char *src, uint16_t sport)
{
	return from(AF_INET, src, sport);
}

static struct dgram v6(const char *src, uint16_t sport)
{
	return from(AF_INET6, src, sport);
}

/* As collect_self_addrs makes them: ::, ::ffff:0.0.0.0, then the interface's. */
static unsigned self_addrs(struct in6_addr *a)
{
	static const char *const text[] = {"::", "::ffff:0.0.0.0", "::ffff:10.1.2.3", "fd00::1", "fe80::1:2:3:4"};
	unsigned i;

	for (i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		assert_int_equal(inet_pton(AF_INET6, text[i], &a[i]), 1);
	return i;
}

static void ours_are_cut_and_the_rest_pass_whole(void **state)
{
	struct sock_filter p[UDP_SELF_FILTER_MAX];
	struct in6_addr a[8];
	unsigned na = self_addrs(a);
	int n = udp_self_filter_build(p, UDP_SELF_FILTER_MAX, SPORT, a, na, KEEP);
	struct dgram d;

	(void)state;
	assert_true(n > 0);
	/* Ours: our port and one of our addresses, either family. */
	d = v4("10.1.2.3", SPORT);
	assert_int_equal(run(p, n, &d), KEEP);
	d = v4("0.0.0.0", SPORT); /* multicast sent on lo */
	assert_int_equal(run(p, n, &d), KEEP);
	d = v6("fd00::1", SPORT);
	assert_int_equal(run(p, n, &d), KEEP);
	d = v6("fe80::1:2:3:4", SPORT);
	assert_int_equal(run(p, n, &d), KEEP);
	/* Another host, or another port on ours: whole. */
	d = v4("10.1.2.4", SPORT);
	assert_int_equal(run(p, n, &d), UINT32_MAX);
	d = v4("10.1.2.3", SPORT + 1);
	assert_int_equal(run(p, n, &d), UINT32_MAX);
	d = v6("fd00::2", SPORT);
	assert_int_equal(run(p, n, &d), UINT32_MAX);
	d = v6("fe80::1:2:3:5", SPORT); /* three words the same, the last not */
	assert_int_equal(run(p, n, &d), UINT32_MAX);
	d = v6("fd00::1", 7470);
	assert_int_equal(run(p, n, &d), UINT32_MAX);
	/* An IPv4 address is not taken for the IPv6 one with its bytes. */
	d = v6("::a01:203", SPORT);
	assert_int_equal(run(p, n, &d), UINT32_MAX);
}

/* As many addresses as a host with many interfaces may have. */
#define NMANY 300

static void every_address_fits_and_a_short_buffer_is_refused(void **state)
{
	struct sock_filter p[UDP_SELF_FILTER_MAX];
	struct in6_addr a[NMANY];
	char text[64];
	unsigned i;
	int n;

	(void)state;
	for (i = 0; i < NMANY; i++) {
		if (i % 2)
			snprintf(text, sizeof(text), "fd00::%x", i + 1);
		else
			snprintf(text, sizeof(text), "::ffff:10.0.%u.%u", (i + 1) / 256, (i + 1) % 256);
		assert_int_equal(inet_pton(AF_INET6, text, &a[i]), 1);
	}
	n = udp_self_filter_build(p, UDP_SELF_FILTER_MAX, SPORT, a, NMANY, KEEP);
	assert_true(n > 0 && n <= UDP_SELF_FILTER_MAX);
	for (i = 0; i < NMANY; i++) {
		struct dgram d;

		if (i % 2) {
			snprintf(text, sizeof(text), "fd00::%x", i + 1);
			d = v6(text, SPORT);
		} else {
			snprintf(text, sizeof(text), "10.0.%u.%u", (i + 1) / 256, (i + 1) % 256);
			d = v4(text, SPORT);
		}
		assert_int_equal(run(p, n, &d), KEEP);
	}
	assert_int_equal(udp_self_filter_build(p, (unsigned)n - 1, SPORT, a, NMANY, KEEP), -ENOSPC);
	{
		/* Nothing written past a buffer shorter than the jump it patches
		 * (AddressSanitizer watches this one's end). */
		struct sock_filter tiny[3];

		assert_int_equal(udp_self_filter_build(tiny, 3, SPORT, a, NMANY, KEEP), -ENOSPC);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ours_are_cut_and_the_rest_pass_whole),
		cmocka_unit_test(every_address_fits_and_a_short_buffer_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
