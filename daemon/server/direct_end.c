/* SPDX-License-Identifier: MIT */
/*
 * Where a retired direct log ends for its readers (common/directlog.h has
 * the word): the one rule that keeps a reader from taking what pubd never
 * read. A reader reads the log straight, as fast as the writer writes, and
 * pubd may stand behind both; a writer that heeds nothing (a reload took
 * its right away, and it writes on) can outrun pubd's catch-up, and a word
 * stored at where pubd stopped then comes after its readers took records
 * beyond it: read, never counted published. So, in two steps:
 *
 *   freeze  each reader's word says wait (a reader asks it again before it
 *           takes a record), and the writer is held: pubd gives it back none
 *           of the room it reads, so it can write no further than a lap past
 *           where pubd stood. pubd then reads the log up to its writer;
 *   end     the word says where pubd stopped, and the writer has its room
 *           back (what it writes now, pubd counts when the log goes, and no
 *           reader reads).
 *
 * Every record a reader took was committed before the freeze, so pubd's
 * read after it takes it in, and the end lies beyond it. (The reader's
 * look at the word after its acquire load of the commit is sequentially
 * consistent, pubd's freeze too, with a full fence before it looks at the
 * commit words: enough on x86 and ARMv8, whose loads in order from one
 * thread are not seen reordered; the C11 model alone would want a fence on
 * the reader's side too, an mfence a message.) An honest writer waiting
 * for room as a log is retired gets it only after the end: what it then
 * commits is counted when the log goes (client_gone), never read.
 *
 * Not covered: a writer pubd is ending (a protocol error, a slow
 * subscriber's close) is not read while its close waits, and its logs end
 * where pubd stopped (RETIRE_CLOSED): its readers may take what it commits
 * meanwhile.
 */
#include "directlog.h"
#include "server_internal.h"

static _Atomic uint64_t *word_of(const struct srv_direct *d, unsigned i)
{
	const struct pubd_client *c = d->readers[i].s->client;

	return c->dlog ? pub_deliverlog_slot(c->dlog->shm.map, d->readers[i].slot) : NULL;
}

void srv_direct_freeze(struct srv_direct *d)
{
	if (d->frozen)
		return;
	for (unsigned i = 0; i < d->nreaders; i++) {
		_Atomic uint64_t *w = word_of(d, i);
		uint64_t live = pub_direct_end_word(d->id, false, 0);

		/* Over the live word only: a reader that let the log go said
		 * so there (its slot is freed by that word). */
		if (w)
			atomic_compare_exchange_strong_explicit(w, &live, pub_direct_frozen_word(d->id),
								memory_order_seq_cst, memory_order_relaxed);
	}
	/* Between the freeze and pubd's look at the commit words (a reader
	 * that saw the word live took only what this look sees committed). */
	atomic_thread_fence(memory_order_seq_cst);
	d->frozen = true;
	srv_publog_hold(d->l, true);
}

void srv_direct_end(struct srv_direct *d)
{
	uint64_t end = pub_direct_end_word(d->id, true, d->l->r.pos);

	for (unsigned i = 0; i < d->nreaders; i++) {
		_Atomic uint64_t *w = word_of(d, i);
		uint64_t was = pub_direct_frozen_word(d->id);

		/* Over the frozen word, or the live one (a reader the freeze
		 * did not see); never over one its reader wrote. */
		if (w && !atomic_compare_exchange_strong_explicit(w, &was, end, memory_order_release,
								  memory_order_relaxed)) {
			was = pub_direct_end_word(d->id, false, 0);
			atomic_compare_exchange_strong_explicit(w, &was, end, memory_order_release,
								memory_order_relaxed);
		}
	}
	if (d->frozen)
		srv_publog_hold(d->l, false);
	d->frozen = false;
}
