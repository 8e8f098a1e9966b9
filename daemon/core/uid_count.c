/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "uid_count.h"

#define UID_COUNT_MIN_SLOTS 16u

static uint32_t home(const struct pubd_uid_count *t, uint32_t uid)
{
	return (uint32_t)pubd_hash_2u64(&t->key, uid, 0) & t->mask;
}

/* The slot holding uid, or the empty one where it would go (the load stays
 * at most half, so there always is one). */
static uint32_t probe(const struct pubd_uid_count *t, uint32_t uid)
{
	uint32_t i = home(t, uid);

	while (t->slots[i].count && t->slots[i].uid != uid)
		i = (i + 1) & t->mask;
	return i;
}

static int resize(struct pubd_uid_count *t, uint32_t nslots)
{
	struct pubd_uid_slot *old = t->slots;
	uint32_t i, oldn = old ? t->mask + 1 : 0;

	t->slots = calloc(nslots, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return -ENOMEM;
	}
	t->mask = nslots - 1;
	for (i = 0; i < oldn; i++)
		if (old[i].count)
			t->slots[probe(t, old[i].uid)] = old[i];
	free(old);
	return 0;
}

void pubd_uid_count_init(struct pubd_uid_count *t, const struct pubd_hash_key *key)
{
	*t = (struct pubd_uid_count){.key = *key};
}

void pubd_uid_count_free(struct pubd_uid_count *t)
{
	free(t->slots);
	t->slots = NULL;
	t->mask = 0;
	t->n = 0;
}

uint32_t pubd_uid_count_get(const struct pubd_uid_count *t, uint32_t uid)
{
	return t->slots ? t->slots[probe(t, uid)].count : 0;
}

int pubd_uid_count_inc(struct pubd_uid_count *t, uint32_t uid)
{
	uint32_t i;

	if (t->slots) {
		i = probe(t, uid);
		if (t->slots[i].count) {
			t->slots[i].count++;
			return 0;
		}
	}
	/* A new uid: at most half the slots in use after it. */
	if (!t->slots || 2 * (t->n + 1) > t->mask + 1) {
		if (resize(t, t->slots ? 2 * (t->mask + 1) : UID_COUNT_MIN_SLOTS) < 0)
			return -ENOMEM;
	}
	i = probe(t, uid);
	t->slots[i] = (struct pubd_uid_slot){.uid = uid, .count = 1};
	t->n++;
	return 0;
}

/* Empty slot i, moving back into it each later entry of its run that may
 * sit there (whose home is not between i and where it is): every entry
 * stays reachable from its home without tombstones. */
static void remove_at(struct pubd_uid_count *t, uint32_t i)
{
	uint32_t j = i;

	for (;;) {
		j = (j + 1) & t->mask;
		if (!t->slots[j].count)
			break;
		if (((j - home(t, t->slots[j].uid)) & t->mask) >= ((j - i) & t->mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].count = 0;
}

void pubd_uid_count_dec(struct pubd_uid_count *t, uint32_t uid)
{
	uint32_t i;

	if (!t->slots)
		return;
	i = probe(t, uid);
	if (!t->slots[i].count || --t->slots[i].count)
		return;
	remove_at(t, i);
	t->n--;
	/* Given back after a crowd of uids has gone; kept when that fails. */
	if (t->mask + 1 > UID_COUNT_MIN_SLOTS && 8 * t->n < t->mask + 1)
		(void)resize(t, (t->mask + 1) / 2);
}
