/* SPDX-License-Identifier: MIT */
/*
 * An intrusive chained hash table on two 64-bit keys, for tables whose
 * keys a remote peer picks (source ids, group ids): hashed with a secret
 * key (keyed_hash.h). Reassembly keeps its streams, partials and
 * tombstones in it; loss repair's order (engine/repair_order.c) its
 * holding streams. Lookup is inline: it is on the receive path.
 */
#ifndef PUBD_HTAB_H
#define PUBD_HTAB_H

#include <stddef.h>
#include <stdint.h>

#include "keyed_hash.h"

#ifndef container_of
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#endif

struct hnode {
	struct hnode *next;
	uint64_t k1, k2;
};

struct htab {
	struct hnode **b;
	size_t mask;
	size_t n;
	/* The keys are a remote sender's to choose: keyed (keyed_hash.h). An
	 * unkeyed mix (fmix64) let a forger put 8,000 source ids in one chain. */
	struct pubd_hash_key key;
};

static inline size_t hslot(const struct htab *t, uint64_t k1, uint64_t k2)
{
	return (size_t)pubd_hash_2u64(&t->key, k1, k2) & t->mask;
}

static inline struct hnode *htab_find(const struct htab *t, uint64_t k1, uint64_t k2)
{
	struct hnode *n;

	for (n = t->b[hslot(t, k1, k2)]; n; n = n->next)
		if (n->k1 == k1 && n->k2 == k2)
			return n;
	return NULL;
}

/* htab.c. init: -1 without memory. free: the bucket array (the nodes are
 * the caller's). */
int pubd_htab_init(struct htab *t, const struct pubd_hash_key *key);
void pubd_htab_free(struct htab *t);
void pubd_htab_insert(struct htab *t, struct hnode *n);
void pubd_htab_remove(struct htab *t, struct hnode *n);
size_t pubd_htab_buckets(const struct htab *t);

#endif
