/* SPDX-License-Identifier: MIT */
/*
 * The udp fabric's memberships by address (fabric/udp/member_ix.c), against
 * a plain list: random joins and leaves of IPv4 and IPv6 addresses, every
 * lookup answered as a walk of the list answers it. Leaves exercise the
 * backward shift, which must never strand an entry behind a hole.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "udp_internal.h"

#define ADDRS 3000u

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Address k: IPv4 239.x.y.z for even k, IPv6 ff3e::k for odd; the port
 * differs on purpose (it is not part of the address). */
static void addr_of(unsigned k, struct sockaddr_storage *a)
{
	memset(a, 0, sizeof(*a));
	if (k % 2 == 0) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)a;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(0xef000000u | k);
		s4->sin_port = htons((uint16_t)k);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)a;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr.s6_addr[0] = 0xff;
		s6->sin6_addr.s6_addr[1] = 0x3e;
		s6->sin6_addr.s6_addr[14] = (uint8_t)(k >> 8);
		s6->sin6_addr.s6_addr[15] = (uint8_t)k;
		s6->sin6_port = htons((uint16_t)k);
	}
}

static void member_ix_agrees_with_a_list(void **state)
{
	static struct membership ms[ADDRS];
	bool in[ADDRS] = {0};
	struct udp_member_ix ix = {0};
	struct sockaddr_storage probe;
	unsigned step, k, n = 0, most = 0;

	(void)state;
	for (k = 0; k < ADDRS; k++)
		addr_of(k, &ms[k].group);
	for (step = 0; step < 200000; step++) {
		k = (unsigned)(next_rand() % ADDRS);
		/* Joins outnumber leaves for the first half (4 of 5 addresses
		 * joined), then the other way round (1 of 5). */
		bool filling = step < 100000, act = next_rand() % 4 == 0;

		if (!in[k] && (filling || act)) {
			assert_int_equal(udp_member_ix_add(&ix, &ms[k]), 0);
			in[k] = true;
			n++;
		} else if (in[k] && (!filling || act)) {
			udp_member_ix_del(&ix, &ms[k]);
			in[k] = false;
			n--;
		}
		most = n > most ? n : most;
		assert_int_equal(ix.n, n);
		/* The address just touched, by an equal address of another
		 * port, and one at random. */
		addr_of(k, &probe);
		((struct sockaddr_in *)&probe)->sin_port ^= 0xffff;
		assert_ptr_equal(udp_member_ix_find(&ix, &probe), in[k] ? &ms[k] : NULL);
		k = (unsigned)(next_rand() % ADDRS);
		addr_of(k, &probe);
		assert_ptr_equal(udp_member_ix_find(&ix, &probe), in[k] ? &ms[k] : NULL);
		if (step % 20000 == 0) /* the whole table, now and then */
			for (k = 0; k < ADDRS; k++) {
				addr_of(k, &probe);
				assert_ptr_equal(udp_member_ix_find(&ix, &probe), in[k] ? &ms[k] : NULL);
			}
	}
	assert_true(most > ADDRS * 3 / 4 && n < ADDRS / 3);
	/* At most half full. */
	assert_true(ix.n * 2 <= ix.mask + 1);
	udp_member_ix_free(&ix);
}

/* A datagram without a destination address (no PKTINFO) has only its
 * family set: it belongs to no membership, and nothing else is read. */
static void member_ix_unknown_family_finds_nothing(void **state)
{
	static struct membership m;
	struct udp_member_ix ix = {0};
	struct sockaddr_storage none;

	(void)state;
	addr_of(2, &m.group);
	assert_int_equal(udp_member_ix_add(&ix, &m), 0);
	memset(&none, 0, sizeof(none));
	none.ss_family = AF_UNSPEC;
	assert_null(udp_member_ix_find(&ix, &none));
	udp_member_ix_del(&ix, &m);
	udp_member_ix_del(&ix, &m); /* not there: nothing happens */
	assert_int_equal(ix.n, 0);
	udp_member_ix_free(&ix);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(member_ix_agrees_with_a_list),
		cmocka_unit_test(member_ix_unknown_family_finds_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
