/* SPDX-License-Identifier: MIT */
/*
 * A bounded cache of address handles for unicast replies on a UD fabric
 * (loss repair's NAKs and repairs), keyed by what a handle is built from
 * (struct pubd_ud_addr: the peer's GID, LID, SL and traffic class; not its
 * QP number, which each send names by itself).
 *
 * Pure: the handles are opaque (void *), made and destroyed by the caller's
 * ops, and time comes in as now. Nothing a peer does grows it past cap
 * entries: the least recently used goes (its handle destroyed) to make
 * room. Creating a handle can be slow (RoCE resolves the peer's MAC in the
 * kernel, waiting for ARP when it is not known), so creations are paced
 * (new_per_sec) and a failure is remembered for fail_hold_ns, so a peer
 * that cannot be reached is not tried again at every send. A handle older
 * than max_age_ns is rebuilt at its next use (the peer's MAC may have
 * changed behind its address).
 */
#ifndef PUBD_AH_CACHE_H
#define PUBD_AH_CACHE_H

#include <stdint.h>

#include "pacer.h"
#include "ud_peer.h"
#include "keyed_hash.h"

struct pubd_ah_cache_ops {
	/* The handle for a, or NULL with *err (-errno) set. */
	void *(*create)(void *ctx, const struct pubd_ud_addr *a, int *err);
	void (*destroy)(void *ctx, void *handle);
};

struct pubd_ah_cache_cfg {
	uint32_t cap;	       /* entries at most (positive and failed) */
	uint64_t max_age_ns;   /* rebuild a handle this old at its next use */
	uint64_t fail_hold_ns; /* a failed creation is not retried for this long */
	uint32_t new_per_sec;  /* creations per second at most (burst as many) */
	/* The hash's secret: peers' addresses come off the wire (keyed_hash.h). */
	struct pubd_hash_key hash_key;
};

struct pubd_ah_cache_stats {
	uint64_t hits, created, failed, evicted, expired, held, paced;
};

struct pubd_ah_entry;

struct pubd_ah_cache {
	struct pubd_ah_cache_cfg cfg;
	const struct pubd_ah_cache_ops *ops;
	void *ctx;
	struct pubd_ah_entry *e; /* cap entries */
	int32_t *bucket;	 /* heads of hash chains, nbucket of them */
	uint32_t nbucket;	 /* a power of two, at least 2 x cap */
	int32_t lru_head, lru_tail, free_head;
	uint32_t used;
	struct pubd_pacer pace;
	struct pubd_ah_cache_stats st;
};

/* 0 or -ENOMEM (cap 0 is taken as 1). */
int pubd_ah_cache_init(struct pubd_ah_cache *c, const struct pubd_ah_cache_cfg *cfg,
		       const struct pubd_ah_cache_ops *ops, void *ctx, uint64_t now);
/* Destroys every handle and frees the cache; idempotent. */
void pubd_ah_cache_close(struct pubd_ah_cache *c);
/* Destroys every handle, keeping the cache usable (the device went away:
 * its handles with it). Remembered failures go too. */
void pubd_ah_cache_flush(struct pubd_ah_cache *c);
/*
 * The handle for a at now: cached, or created (evicting the least recently
 * used when full). NULL with *err: the creation failed now or within
 * fail_hold_ns (its error), or -EAGAIN when creations are paced.
 */
void *pubd_ah_cache_get(struct pubd_ah_cache *c, const struct pubd_ud_addr *a, uint64_t now, int *err);
/* Entries held now (handles and remembered failures). */
uint32_t pubd_ah_cache_size(const struct pubd_ah_cache *c);

#endif
