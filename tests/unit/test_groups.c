// SPDX-License-Identifier: MIT
/*
 * The group table: slots (lowest free first), the index by id and by name
 * against a plain walk over the slots, the count of groups up, through
 * thousands of random adds and removes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "groups.h"
#include "wire.h"

#define NAMES 3000u
#define STEPS 60000u

static struct pubd_group_config cfgs[NAMES];
static char names[NAMES][16];

static int setup(void **state)
{
	unsigned i;

	(void)state;
	for (i = 0; i < NAMES; i++) {
		snprintf(names[i], sizeof(names[i]), "g%u", i);
		cfgs[i].name = names[i];
		cfgs[i].scope = PUBD_SCOPE_HOST;
	}
	return 0;
}

/* What the index must agree with: a walk over the slots. */
static struct pubd_group *walk_by_name(const struct pubd_groups *gs, const char *name)
{
	struct pubd_group *g;
	unsigned i;

	pubd_groups_foreach(gs, g, i)
	{
		if (g->name_len == strlen(name) && !memcmp(g->name, name, g->name_len))
			return g;
	}
	return NULL;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void groups_index_agrees_with_a_walk(void **state)
{
	struct pubd_groups gs = {0};
	struct pubd_group *in[NAMES] = {0};
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned step, i, count = 0, up = 0;

	(void)state;
	for (step = 0; step < STEPS; step++) {
		unsigned k = (unsigned)(rnd(&seed) % NAMES);
		struct pubd_group *g;

		if (!in[k]) {
			unsigned lowest = 0;

			while (lowest < gs.n && gs.v[lowest])
				lowest++;
			in[k] = pubd_groups_add(&gs, &cfgs[k]);
			assert_non_null(in[k]);
			/* The lowest free slot, as the fabric's slots expect. */
			assert_int_equal(in[k]->slot, lowest);
			count++;
		} else if (rnd(&seed) % 3 == 0) {
			bool to = !in[k]->up;

			pubd_group_set_up(&gs, in[k], to);
			up = to ? up + 1 : up - 1;
		} else {
			up -= in[k]->up;
			pubd_groups_remove(&gs, in[k]);
			in[k] = NULL;
			count--;
		}
		assert_int_equal(gs.count, count);
		assert_int_equal(gs.up, up);
		/* A few lookups a step, present and absent, by name and id. */
		for (i = 0; i < 4; i++) {
			unsigned q = (unsigned)(rnd(&seed) % NAMES);

			g = pubd_groups_by_name(&gs, names[q], strlen(names[q]));
			assert_ptr_equal(g, in[q]);
			assert_ptr_equal(g, walk_by_name(&gs, names[q]));
			assert_ptr_equal(pubd_groups_by_id(&gs, pubd_group_id(names[q], strlen(names[q]))), in[q]);
		}
	}
	/* Everything still in is found; a name's prefix is not the name. */
	for (i = 0; i < NAMES; i++)
		assert_ptr_equal(pubd_groups_by_name(&gs, names[i], strlen(names[i])), in[i]);
	assert_null(pubd_groups_by_name(&gs, "g1", 1));
	assert_null(pubd_groups_by_id(&gs, 12345));
	pubd_groups_free(&gs);
	assert_null(pubd_groups_by_name(&gs, names[0], strlen(names[0])));
	assert_int_equal(gs.count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(groups_index_agrees_with_a_walk, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
