/* SPDX-License-Identifier: MIT */
/*
 * Message buffers: reference counts, size classes, the bounded free lists.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "msgbuf.h"

static int drain(void **state)
{
	(void)state;
	pubd_msgbuf_cache_drain();
	return 0;
}

static void msgbuf_refs_keep_it_until_the_last_put(void **state)
{
	struct pubd_msgbuf *m = pubd_msgbuf_alloc(64);

	(void)state;
	assert_non_null(m);
	assert_int_equal(m->len, 64);
	assert_int_equal(m->refs, 1);
	memset(m->data, 0xab, 64);
	assert_ptr_equal(pubd_msgbuf_get(m), m);
	pubd_msgbuf_put(m);
	assert_int_equal(pubd_msgbuf_cached(), 0); /* still referenced */
	assert_int_equal(m->data[63], 0xab);
	pubd_msgbuf_put(m);
	assert_int_equal(pubd_msgbuf_cached(), 1);
	pubd_msgbuf_put(NULL);
}

static void msgbuf_small_buffers_are_reused(void **state)
{
	struct pubd_msgbuf *a, *b;

	(void)state;
	a = pubd_msgbuf_alloc(100);
	assert_non_null(a);
	pubd_msgbuf_put(a);
	b = pubd_msgbuf_alloc(200); /* the same class (up to 256) */
	assert_ptr_equal(b, a);
	assert_int_equal(b->len, 200);
	assert_int_equal(b->refs, 1);
	assert_int_equal(pubd_msgbuf_cached(), 0);
	memset(b->data, 1, 200); /* the whole length is usable */
	pubd_msgbuf_put(b);
}

static void msgbuf_classes_do_not_mix(void **state)
{
	struct pubd_msgbuf *small, *mid, *big;

	(void)state;
	small = pubd_msgbuf_alloc(256);
	mid = pubd_msgbuf_alloc(257);
	big = pubd_msgbuf_alloc(PUBD_MSGBUF_CLASS_MAX);
	assert_non_null(small);
	assert_non_null(mid);
	assert_non_null(big);
	memset(small->data, 1, 256);
	memset(mid->data, 2, 257);
	memset(big->data, 3, PUBD_MSGBUF_CLASS_MAX);
	pubd_msgbuf_put(small);
	pubd_msgbuf_put(mid);
	/* 257 bytes do not fit the 256-byte buffer on its list: the 1 KiB one. */
	assert_ptr_equal(pubd_msgbuf_alloc(257), mid);
	memset(mid->data, 2, 257);
	pubd_msgbuf_put(mid);
	pubd_msgbuf_put(big);
	assert_int_equal(pubd_msgbuf_cached(), 3);
}

static void msgbuf_large_buffers_go_back_to_malloc(void **state)
{
	struct pubd_msgbuf *m = pubd_msgbuf_alloc(PUBD_MSGBUF_CLASS_MAX + 1);

	(void)state;
	assert_non_null(m);
	memset(m->data, 4, PUBD_MSGBUF_CLASS_MAX + 1);
	pubd_msgbuf_put(m);
	assert_int_equal(pubd_msgbuf_cached(), 0);
	m = pubd_msgbuf_alloc(0); /* an empty message is a buffer too */
	assert_non_null(m);
	assert_int_equal(m->len, 0);
	pubd_msgbuf_put(m);
	assert_int_equal(pubd_msgbuf_cached(), 1);
}

static void msgbuf_free_lists_are_bounded(void **state)
{
	enum { N = PUBD_MSGBUF_CACHE_PER_CLASS + 50 };
	static struct pubd_msgbuf *v[N];

	(void)state;
	for (unsigned i = 0; i < N; i++) {
		v[i] = pubd_msgbuf_alloc(64);
		assert_non_null(v[i]);
	}
	for (unsigned i = 0; i < N; i++)
		pubd_msgbuf_put(v[i]);
	assert_int_equal(pubd_msgbuf_cached(), PUBD_MSGBUF_CACHE_PER_CLASS);
	pubd_msgbuf_cache_drain();
	assert_int_equal(pubd_msgbuf_cached(), 0);
}

struct lender_log {
	struct pubd_msgbuf_lender lender;
	unsigned returned;
	uint32_t last_cookie;
};

/* A buffer's footprint is what was allocated for it: the header and its
 * bytes rounded up to the size class (what the client budget charges for a
 * reply), the bytes themselves for a large one, the header alone for a
 * lent one. */
static void msgbuf_footprint_is_what_was_allocated(void **state)
{
	struct pubd_msgbuf *small = pubd_msgbuf_alloc(262), *large = pubd_msgbuf_alloc(PUBD_MSGBUF_CLASS_MAX + 1);
	struct pubd_msgbuf *lent = pubd_msgbuf_lend(NULL, 0, (const uint8_t *)"x", 1);

	(void)state;
	assert_non_null(small);
	assert_non_null(large);
	assert_non_null(lent);
	assert_int_equal(pubd_msgbuf_footprint(small), sizeof(*small) + 1024);
	assert_int_equal(pubd_msgbuf_footprint(large), sizeof(*large) + PUBD_MSGBUF_CLASS_MAX + 1);
	assert_int_equal(pubd_msgbuf_footprint(lent), sizeof(*lent));
	pubd_msgbuf_put(small);
	pubd_msgbuf_put(large);
	pubd_msgbuf_put(lent);
}

static void on_returned(struct pubd_msgbuf_lender *lender, uint32_t cookie)
{
	struct lender_log *l = (struct lender_log *)lender;

	l->returned++;
	l->last_cookie = cookie;
}

/* A lent buffer reads the lender's bytes, and the lender hears once, at
 * the last put. */
static void msgbuf_lent_returns_at_the_last_put(void **state)
{
	struct lender_log l = {.lender.returned = on_returned};
	uint8_t bytes[3000];
	struct pubd_msgbuf *m;

	(void)state;
	memset(bytes, 'q', sizeof(bytes));
	m = pubd_msgbuf_lend(&l.lender, 42, bytes, sizeof(bytes));
	assert_non_null(m);
	assert_ptr_equal(m->data, bytes);
	assert_int_equal(m->len, sizeof(bytes));
	assert_true(pubd_msgbuf_is_lent(m));
	pubd_msgbuf_get(m);
	pubd_msgbuf_put(m);
	assert_int_equal(l.returned, 0);
	pubd_msgbuf_put(m);
	assert_int_equal(l.returned, 1);
	assert_int_equal(l.last_cookie, 42);
}

/* Detached, a buffer keeps its bytes in a copy of its own; the lender is
 * not told again, and may reuse its memory at once. */
static void msgbuf_detached_keeps_its_bytes(void **state)
{
	struct lender_log l = {.lender.returned = on_returned};
	uint8_t bytes[100];
	struct pubd_msgbuf *m;

	(void)state;
	memset(bytes, 'r', sizeof(bytes));
	m = pubd_msgbuf_lend(&l.lender, 7, bytes, sizeof(bytes));
	assert_non_null(m);
	assert_int_equal(pubd_msgbuf_detach(m), 0);
	assert_false(pubd_msgbuf_is_lent(m));
	assert_ptr_not_equal(m->data, bytes);
	memset(bytes, 'X', sizeof(bytes));
	assert_int_equal(m->data[0], 'r');
	assert_int_equal(m->data[99], 'r');
	assert_int_equal(pubd_msgbuf_detach(m), 0); /* twice: nothing more to do */
	pubd_msgbuf_put(m);
	assert_int_equal(l.returned, 0);
	/* An owned buffer has nothing to detach. */
	m = pubd_msgbuf_alloc(10);
	assert_int_equal(pubd_msgbuf_detach(m), 0);
	assert_ptr_equal(m->data, m->inline_);
	pubd_msgbuf_put(m);
}

/* A send reading the lent bytes in place pins the buffer: it cannot be
 * detached (the device would read memory the lender reuses) until the
 * unpin; the unpin's reference is a reference like any, so the lender is
 * told at the last of them, pin or put. */
static void msgbuf_pinned_is_not_detached(void **state)
{
	struct pubd_mem_region region = {0};
	struct lender_log l = {.lender.returned = on_returned, .lender.region = &region};
	uint8_t bytes[64];
	struct pubd_msgbuf *m;

	(void)state;
	memset(bytes, 'p', sizeof(bytes));
	region.base = bytes;
	region.len = sizeof(bytes);
	m = pubd_msgbuf_lend(&l.lender, 3, bytes, sizeof(bytes));
	assert_non_null(m);
	assert_ptr_equal(pubd_msgbuf_region(m), &region);
	pubd_msgbuf_pin(m);
	assert_int_equal(pubd_msgbuf_detach(m), -EBUSY);
	assert_true(pubd_msgbuf_is_lent(m));
	pubd_msgbuf_put(m); /* the lender's holder: the pin remains */
	assert_int_equal(l.returned, 0);
	pubd_msgbuf_unpin(m);
	assert_int_equal(l.returned, 1);
	/* pinned and unpinned with other holders left: detachable again */
	m = pubd_msgbuf_lend(&l.lender, 4, bytes, sizeof(bytes));
	pubd_msgbuf_pin(m);
	pubd_msgbuf_unpin(m);
	assert_int_equal(pubd_msgbuf_detach(m), 0);
	assert_null(pubd_msgbuf_region(m));
	pubd_msgbuf_put(m);
	assert_int_equal(l.returned, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(msgbuf_refs_keep_it_until_the_last_put, drain),
		cmocka_unit_test_teardown(msgbuf_small_buffers_are_reused, drain),
		cmocka_unit_test_teardown(msgbuf_classes_do_not_mix, drain),
		cmocka_unit_test_teardown(msgbuf_large_buffers_go_back_to_malloc, drain),
		cmocka_unit_test_teardown(msgbuf_free_lists_are_bounded, drain),
		cmocka_unit_test_teardown(msgbuf_lent_returns_at_the_last_put, drain),
		cmocka_unit_test_teardown(msgbuf_footprint_is_what_was_allocated, drain),
		cmocka_unit_test_teardown(msgbuf_detached_keeps_its_bytes, drain),
		cmocka_unit_test_teardown(msgbuf_pinned_is_not_detached, drain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
