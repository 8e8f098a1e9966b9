/* SPDX-License-Identifier: MIT */
/*
 * Message buffers: reference counts, size classes, the bounded free lists.
 */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(msgbuf_refs_keep_it_until_the_last_put, drain),
		cmocka_unit_test_teardown(msgbuf_small_buffers_are_reused, drain),
		cmocka_unit_test_teardown(msgbuf_classes_do_not_mix, drain),
		cmocka_unit_test_teardown(msgbuf_large_buffers_go_back_to_malloc, drain),
		cmocka_unit_test_teardown(msgbuf_free_lists_are_bounded, drain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
