/* SPDX-License-Identifier: MIT */
/* The bounded cache of unicast address handles (core/ah_cache.c), its
 * handles made and destroyed by a recording fake. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ah_cache.h"

#define SEC 1000000000ull

struct fake {
	unsigned created, destroyed;
	int fail;	     /* the next creations fail with this (0: succeed) */
	unsigned live[4096]; /* handles are 1 + index here: live[i] 1 while alive */
};

static void *fake_create(void *ctx, const struct pubd_ud_addr *a, int *err)
{
	struct fake *fk = ctx;

	(void)a;
	if (fk->fail) {
		*err = fk->fail;
		return NULL;
	}
	fk->live[fk->created] = 1;
	return (void *)(uintptr_t)(1 + fk->created++);
}

static void fake_destroy(void *ctx, void *h)
{
	struct fake *fk = ctx;
	uintptr_t i = (uintptr_t)h - 1;

	assert_true(i < fk->created);
	assert_int_equal(fk->live[i], 1); /* never twice */
	fk->live[i] = 0;
	fk->destroyed++;
}

static const struct pubd_ah_cache_ops ops = {.create = fake_create, .destroy = fake_destroy};

static struct pubd_ud_addr addr(uint32_t n)
{
	struct pubd_ud_addr a = {.gid = {[10] = 0xff, [11] = 0xff, [12] = 10}, .kind = PUBD_UD_IPV4};

	memcpy(a.gid + 13, &n, 3);
	return a;
}

static void hit_after_create_and_key_is_the_address(void **state)
{
	struct pubd_ah_cache_cfg cfg = {.cap = 4, .max_age_ns = 60 * SEC, .fail_hold_ns = 10 * SEC};
	struct pubd_ah_cache c;
	struct fake fk = {0};
	struct pubd_ud_addr a = addr(1), b = addr(1);
	void *h1, *h2;
	int err;

	(void)state;
	assert_int_equal(pubd_ah_cache_init(&c, &cfg, &ops, &fk, 0), 0);
	h1 = pubd_ah_cache_get(&c, &a, 1, &err);
	assert_non_null(h1);
	assert_int_equal(err, 0);
	h2 = pubd_ah_cache_get(&c, &b, 2, &err);
	assert_ptr_equal(h1, h2);
	assert_int_equal(fk.created, 1);
	/* Another traffic class is another handle. */
	b.tclass = 0x20;
	assert_ptr_not_equal(pubd_ah_cache_get(&c, &b, 3, &err), h1);
	assert_int_equal(fk.created, 2);
	assert_int_equal(c.st.hits, 1);
	assert_int_equal(pubd_ah_cache_size(&c), 2);
	pubd_ah_cache_close(&c);
	assert_int_equal(fk.destroyed, 2);
	pubd_ah_cache_close(&c); /* idempotent */
	assert_int_equal(fk.destroyed, 2);
}

/* A churning (or hostile) set of peers never holds more than cap handles:
 * the least recently used goes, its handle destroyed. */
static void bounded_lru_eviction(void **state)
{
	struct pubd_ah_cache_cfg cfg = {.cap = 8, .max_age_ns = 60 * SEC, .fail_hold_ns = 10 * SEC};
	struct pubd_ah_cache c;
	struct fake fk = {0};
	struct pubd_ud_addr a0 = addr(0);
	void *h0;
	int err;

	(void)state;
	assert_int_equal(pubd_ah_cache_init(&c, &cfg, &ops, &fk, 0), 0);
	h0 = pubd_ah_cache_get(&c, &a0, 0, &err);
	for (uint32_t i = 1; i < 3000; i++) {
		struct pubd_ud_addr a = addr(i);

		assert_non_null(pubd_ah_cache_get(&c, &a, i, &err));
		/* Peer 0 keeps asking: it stays the most recently used. */
		assert_ptr_equal(pubd_ah_cache_get(&c, &a0, i, &err), h0);
		assert_true(pubd_ah_cache_size(&c) <= 8);
		assert_int_equal(fk.created - fk.destroyed, pubd_ah_cache_size(&c));
	}
	assert_int_equal(c.st.evicted, 3000 - 8);
	assert_int_equal(fk.live[0], 1);
	/* Recently used survive, in order: the last 7 new peers and peer 0. */
	for (uint32_t i = 2993; i < 3000; i++) {
		struct pubd_ud_addr a = addr(i);
		unsigned before = fk.created;

		assert_non_null(pubd_ah_cache_get(&c, &a, 4000, &err));
		assert_int_equal(fk.created, before);
	}
	pubd_ah_cache_close(&c);
	assert_int_equal(fk.created, fk.destroyed);
}

static void failure_is_held_then_retried(void **state)
{
	struct pubd_ah_cache_cfg cfg = {.cap = 4, .max_age_ns = 60 * SEC, .fail_hold_ns = 10 * SEC};
	struct pubd_ah_cache c;
	struct fake fk = {.fail = -EHOSTUNREACH};
	struct pubd_ud_addr a = addr(7);
	int err;

	(void)state;
	assert_int_equal(pubd_ah_cache_init(&c, &cfg, &ops, &fk, 0), 0);
	assert_null(pubd_ah_cache_get(&c, &a, SEC, &err));
	assert_int_equal(err, -EHOSTUNREACH);
	fk.fail = 0;
	/* Within the hold: the remembered failure, no new attempt. */
	assert_null(pubd_ah_cache_get(&c, &a, 10 * SEC, &err));
	assert_int_equal(err, -EHOSTUNREACH);
	assert_int_equal(fk.created, 0);
	assert_int_equal(c.st.failed, 1);
	assert_int_equal(c.st.held, 1);
	/* After it: tried again, and now it works. */
	assert_non_null(pubd_ah_cache_get(&c, &a, 11 * SEC, &err));
	assert_int_equal(fk.created, 1);
	assert_int_equal(pubd_ah_cache_size(&c), 1);
	pubd_ah_cache_close(&c);
	assert_int_equal(fk.destroyed, 1);
}

static void old_handle_rebuilt(void **state)
{
	struct pubd_ah_cache_cfg cfg = {.cap = 4, .max_age_ns = 60 * SEC, .fail_hold_ns = 10 * SEC};
	struct pubd_ah_cache c;
	struct fake fk = {0};
	struct pubd_ud_addr a = addr(3);
	void *h1, *h2;
	int err;

	(void)state;
	assert_int_equal(pubd_ah_cache_init(&c, &cfg, &ops, &fk, 0), 0);
	h1 = pubd_ah_cache_get(&c, &a, SEC, &err);
	assert_ptr_equal(pubd_ah_cache_get(&c, &a, 60 * SEC, &err), h1);
	h2 = pubd_ah_cache_get(&c, &a, 61 * SEC, &err);
	assert_non_null(h2);
	assert_ptr_not_equal(h1, h2);
	assert_int_equal(fk.live[0], 0); /* the old one destroyed */
	assert_int_equal(c.st.expired, 1);
	assert_int_equal(pubd_ah_cache_size(&c), 1);
	pubd_ah_cache_close(&c);
	assert_int_equal(fk.created, fk.destroyed);
}

/* Creations are paced: a burst of new peers gets new_per_sec handles, the
 * rest -EAGAIN (and nothing cached for them), more a second later. */
static void creations_paced(void **state)
{
	struct pubd_ah_cache_cfg cfg = {.cap = 64, .max_age_ns = 60 * SEC, .fail_hold_ns = 10 * SEC, .new_per_sec = 5};
	struct pubd_ah_cache c;
	struct fake fk = {0};
	unsigned ok = 0, paced = 0;
	int err;

	(void)state;
	assert_int_equal(pubd_ah_cache_init(&c, &cfg, &ops, &fk, SEC), 0);
	for (uint32_t i = 0; i < 20; i++) {
		struct pubd_ud_addr a = addr(i);

		if (pubd_ah_cache_get(&c, &a, SEC, &err))
			ok++;
		else
			paced += err == -EAGAIN;
	}
	assert_int_equal(ok, 5);
	assert_int_equal(paced, 15);
	assert_int_equal(pubd_ah_cache_size(&c), 5);
	/* Known peers are not paced. */
	for (uint32_t i = 0; i < 5; i++) {
		struct pubd_ud_addr a = addr(i);

		assert_non_null(pubd_ah_cache_get(&c, &a, SEC, &err));
	}
	struct pubd_ud_addr late = addr(19);

	assert_non_null(pubd_ah_cache_get(&c, &late, 2 * SEC, &err));
	pubd_ah_cache_close(&c);
	assert_int_equal(fk.created, fk.destroyed);
}

/* A device rebuild: every handle destroyed, failures forgotten, the cache
 * usable again at once. */
static void flush_drops_everything(void **state)
{
	struct pubd_ah_cache_cfg cfg = {.cap = 16, .max_age_ns = 60 * SEC, .fail_hold_ns = 10 * SEC};
	struct pubd_ah_cache c;
	struct fake fk = {0};
	struct pubd_ud_addr bad = addr(99);
	int err;

	(void)state;
	assert_int_equal(pubd_ah_cache_init(&c, &cfg, &ops, &fk, 0), 0);
	for (uint32_t i = 0; i < 10; i++) {
		struct pubd_ud_addr a = addr(i);

		assert_non_null(pubd_ah_cache_get(&c, &a, 1, &err));
	}
	fk.fail = -ENETDOWN;
	assert_null(pubd_ah_cache_get(&c, &bad, 1, &err));
	fk.fail = 0;
	assert_int_equal(pubd_ah_cache_size(&c), 11);
	pubd_ah_cache_flush(&c);
	assert_int_equal(pubd_ah_cache_size(&c), 0);
	assert_int_equal(fk.destroyed, 10);
	assert_non_null(pubd_ah_cache_get(&c, &bad, 2, &err));
	for (uint32_t i = 0; i < 16; i++) {
		struct pubd_ud_addr a = addr(i);

		assert_non_null(pubd_ah_cache_get(&c, &a, 3, &err));
	}
	assert_int_equal(pubd_ah_cache_size(&c), 16);
	pubd_ah_cache_close(&c);
	assert_int_equal(fk.created, fk.destroyed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hit_after_create_and_key_is_the_address),
		cmocka_unit_test(bounded_lru_eviction),
		cmocka_unit_test(failure_is_held_then_retried),
		cmocka_unit_test(old_handle_rebuilt),
		cmocka_unit_test(creations_paced),
		cmocka_unit_test(flush_drops_everything),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
