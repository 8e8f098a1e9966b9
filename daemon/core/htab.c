/* SPDX-License-Identifier: MIT */
/*
 * The intrusive chained hash table on two 64-bit keys (htab.h).
 *
 * The bucket array doubles at load 1 and halves below load 1/8 (never under
 * HTAB_MIN_BUCKETS): a burst of forged sources grows it to thousands of
 * buckets, and what the burst took is given back once its streams expire
 * (THREATS.md 1). The gap between the two loads keeps a table that hovers
 * around one size from resizing on every insert and remove.
 */
#include <stdlib.h>

#include "htab.h"

#define HTAB_MIN_BUCKETS 64

int pubd_htab_init(struct htab *t, const struct pubd_hash_key *key)
{
	t->key = *key;
	t->b = calloc(HTAB_MIN_BUCKETS, sizeof(*t->b));
	if (!t->b)
		return -1;
	t->mask = HTAB_MIN_BUCKETS - 1;
	t->n = 0;
	return 0;
}

/* Move every node into a bucket array of nb (a power of two). If that
 * allocation fails the table keeps its size: chains grow longer, or the
 * array stays larger than it needs. */
void pubd_htab_free(struct htab *t)
{
	free(t->b);
	t->b = NULL;
	t->mask = 0;
	t->n = 0;
}

static void htab_resize(struct htab *t, size_t nb)
{
	struct hnode **b = calloc(nb, sizeof(*b)), *n, *next;
	struct htab nt = {.b = b, .mask = nb - 1, .key = t->key};
	size_t i;

	if (!b)
		return;
	for (i = 0; i <= t->mask; i++) {
		for (n = t->b[i]; n; n = next) {
			size_t s = hslot(&nt, n->k1, n->k2);

			next = n->next;
			n->next = b[s];
			b[s] = n;
		}
	}
	free(t->b);
	t->b = b;
	t->mask = nb - 1;
}

void pubd_htab_insert(struct htab *t, struct hnode *n)
{
	size_t s;

	if (t->n > t->mask)
		htab_resize(t, (t->mask + 1) * 2);
	s = hslot(t, n->k1, n->k2);
	n->next = t->b[s];
	t->b[s] = n;
	t->n++;
}

void pubd_htab_remove(struct htab *t, struct hnode *n)
{
	struct hnode **pp = &t->b[hslot(t, n->k1, n->k2)];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (!*pp)
		return;
	*pp = n->next;
	t->n--;
	if (t->mask + 1 > HTAB_MIN_BUCKETS && t->n < (t->mask + 1) / 8)
		htab_resize(t, (t->mask + 1) / 2);
}

size_t pubd_htab_buckets(const struct htab *t)
{
	return t->mask + 1;
}
