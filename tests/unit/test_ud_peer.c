/* SPDX-License-Identifier: MIT */
/* Who sent a UD datagram, as a reply needs it (core/ud_peer.c): from the GRH
 * area and the completion's fields, and back from opaque bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "ud_peer.h"

static void put_checksum(uint8_t *ip)
{
	uint32_t sum = 0;

	ip[10] = ip[11] = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
}

/* RoCEv2/IPv4 from src to 239.77.60.2, with a TTL and a TOS. */
static void roce4(uint8_t grh[PUBD_GRH_LEN], uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t ttl, uint8_t tos)
{
	uint8_t *ip = grh + 20;

	memset(grh, 0x5a, 20); /* undefined bytes */
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[1] = tos;
	ip[3] = 0x80;
	ip[8] = ttl;
	ip[9] = 17;
	ip[12] = a, ip[13] = b, ip[14] = c, ip[15] = d;
	ip[16] = 239, ip[17] = 77, ip[18] = 60, ip[19] = 2;
	put_checksum(ip);
}

static void grh6(uint8_t grh[PUBD_GRH_LEN], const uint8_t sgid[16], uint8_t next, uint8_t tclass)
{
	memset(grh, 0, PUBD_GRH_LEN);
	grh[0] = (uint8_t)(0x60 | tclass >> 4);
	grh[1] = (uint8_t)(tclass << 4);
	grh[6] = next;
	grh[7] = 64;
	memcpy(grh + 8, sgid, 16);
	grh[24] = 0xff;
}

static void ipv4_peer_is_stable_and_mapped(void **state)
{
	uint8_t g1[PUBD_GRH_LEN], g2[PUBD_GRH_LEN];
	struct pubd_ud_peer p1, p2, back;
	static const uint8_t want[16] = {[10] = 0xff, [11] = 0xff, [12] = 192, [13] = 168, [14] = 77, [15] = 1};

	(void)state;
	roce4(g1, 192, 168, 77, 1, 64, 0x28);
	roce4(g2, 192, 168, 77, 1, 61, 0x28); /* another TTL, another checksum */
	assert_true(pubd_ud_peer_from_grh(g1, true, 0x11, 0, 0, &p1));
	assert_true(pubd_ud_peer_from_grh(g2, true, 0x11, 0, 0, &p2));
	assert_memory_equal(&p1, &p2, sizeof(p1)); /* the daemon compares bytes */
	assert_int_equal(p1.addr.kind, PUBD_UD_IPV4);
	assert_memory_equal(p1.addr.gid, want, 16);
	assert_int_equal(p1.addr.tclass, 0x28);
	assert_int_equal(p1.qpn, 0x11);
	assert_true(pubd_ud_peer_parse(&p1, sizeof(p1), &back));
	assert_memory_equal(&back, &p1, sizeof(p1));
}

static void sources_that_cannot_be_answered(void **state)
{
	uint8_t g[PUBD_GRH_LEN];
	struct pubd_ud_peer p;
	static const uint8_t mc[16] = {0xff, 0x0e, [15] = 1}, zero[16] = {0};

	(void)state;
	roce4(g, 224, 0, 0, 5, 64, 0);
	assert_false(pubd_ud_peer_from_grh(g, true, 0x11, 0, 0, &p));
	roce4(g, 127, 0, 0, 1, 64, 0);
	assert_false(pubd_ud_peer_from_grh(g, true, 0x11, 0, 0, &p));
	roce4(g, 255, 255, 255, 255, 64, 0);
	assert_false(pubd_ud_peer_from_grh(g, true, 0x11, 0, 0, &p));
	roce4(g, 0, 0, 0, 0, 64, 0);
	assert_false(pubd_ud_peer_from_grh(g, true, 0x11, 0, 0, &p));
	/* QP numbers that no sender has: SMI, GSI, the multicast QPN. */
	roce4(g, 10, 0, 0, 1, 64, 0);
	assert_false(pubd_ud_peer_from_grh(g, true, 0, 0, 0, &p));
	assert_false(pubd_ud_peer_from_grh(g, true, 1, 0, 0, &p));
	assert_false(pubd_ud_peer_from_grh(g, true, 0xffffff, 0, 0, &p));
	assert_true(pubd_ud_peer_from_grh(g, true, 2, 0, 0, &p));
	/* A corrupt IPv4 header is no encoding we know. */
	g[20 + 11] ^= 0x40;
	assert_false(pubd_ud_peer_from_grh(g, true, 2, 0, 0, &p));
	grh6(g, mc, 17, 0);
	assert_false(pubd_ud_peer_from_grh(g, true, 2, 0, 0, &p));
	grh6(g, zero, 17, 0);
	assert_false(pubd_ud_peer_from_grh(g, true, 2, 0, 0, &p));
	/* Neither UDP nor a BTH after the header. */
	{
		static const uint8_t ok[16] = {0xfe, 0x80, [8] = 2, [15] = 9};

		grh6(g, ok, 6, 0);
		assert_false(pubd_ud_peer_from_grh(g, true, 2, 0, 0, &p));
	}
}

static void gid_kinds_and_lid(void **state)
{
	static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 7};
	uint8_t g[PUBD_GRH_LEN];
	struct pubd_ud_peer p, back;

	(void)state;
	grh6(g, v6, 17, 0xb8);
	assert_true(pubd_ud_peer_from_grh(g, true, 0x99, 0, 0, &p));
	assert_int_equal(p.addr.kind, PUBD_UD_UDP6);
	assert_int_equal(p.addr.tclass, 0xb8);
	assert_memory_equal(p.addr.gid, v6, 16);
	grh6(g, v6, 0x1b, 0);
	assert_true(pubd_ud_peer_from_grh(g, true, 0x99, 0x12, 3, &p));
	assert_int_equal(p.addr.kind, PUBD_UD_IB);
	assert_int_equal(p.addr.lid, 0x12);
	assert_int_equal(p.addr.sl, 3);
	assert_true(pubd_ud_peer_parse(&p, sizeof(p), &back));
	/* InfiniBand without a GRH: the LID, if it is a unicast one. */
	assert_true(pubd_ud_peer_from_grh(g, false, 0x99, 0x12, 0, &p));
	assert_int_equal(p.addr.kind, PUBD_UD_LID);
	assert_false(pubd_ud_peer_from_grh(g, false, 0x99, 0, 0, &p));
	assert_false(pubd_ud_peer_from_grh(g, false, 0x99, 0xc001, 0, &p));
}

/* send_to takes opaque bytes: anything not made by from_grh is refused. */
static void parse_refuses_what_from_grh_never_makes(void **state)
{
	uint8_t g[PUBD_GRH_LEN], raw[32];
	struct pubd_ud_peer p, q, out;

	(void)state;
	roce4(g, 10, 1, 2, 3, 64, 0);
	assert_true(pubd_ud_peer_from_grh(g, true, 0x42, 0, 0, &p));
	assert_false(pubd_ud_peer_parse(NULL, sizeof(p), &out));
	assert_false(pubd_ud_peer_parse(&p, sizeof(p) - 1, &out));
	memset(raw, 0, sizeof(raw));
	memcpy(raw, &p, sizeof(p));
	assert_false(pubd_ud_peer_parse(raw, sizeof(raw), &out)); /* a udp sockaddr's length */
	q = p;
	q.addr.pad[1] = 1;
	assert_false(pubd_ud_peer_parse(&q, sizeof(q), &out));
	q = p;
	q.addr.kind = 9;
	assert_false(pubd_ud_peer_parse(&q, sizeof(q), &out));
	q = p;
	q.addr.gid[12] = 230; /* a multicast IPv4 */
	assert_false(pubd_ud_peer_parse(&q, sizeof(q), &out));
	q = p;
	q.addr.gid[10] = 0; /* IPv4 kind with a GID that is not v4-mapped */
	assert_false(pubd_ud_peer_parse(&q, sizeof(q), &out));
	q = p;
	q.qpn = 0x1000000;
	assert_false(pubd_ud_peer_parse(&q, sizeof(q), &out));
	q = p;
	q.addr.kind = PUBD_UD_LID;
	q.addr.lid = 0xffff;
	assert_false(pubd_ud_peer_parse(&q, sizeof(q), &out));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ipv4_peer_is_stable_and_mapped),
		cmocka_unit_test(sources_that_cannot_be_answered),
		cmocka_unit_test(gid_kinds_and_lid),
		cmocka_unit_test(parse_refuses_what_from_grh_never_makes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
