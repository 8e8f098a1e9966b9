/* SPDX-License-Identifier: MIT */
/*
 * Address handles. A join's AH is replaced on every rejoin and dropped with
 * the group, but sends posted before may still name it: it is destroyed only
 * once the send queue has completed past them.
 */
#include <stdlib.h>

#include "verbs_internal.h"
#include "log.h"

void verbs_ah_retire(struct pubd_fabric *f, struct ibv_ah *ah)
{
	struct dead_ah *d;

	if (!ah)
		return;
	/* Sends are completed in order; once tx_done passes this point no WR
	 * that could name the AH is outstanding. */
	if (f->tx_done >= f->tx_posted) {
		ibv_destroy_ah(ah);
		return;
	}
	if (f->ndead == f->capdead) {
		unsigned cap = f->capdead ? f->capdead * 2 : 8;

		d = realloc(f->dead, cap * sizeof(*d));
		if (!d) {
			/* Cannot defer: destroying early only risks sends that
			 * are failing anyway; leaking would be worse over time. */
			log_warn("verbs: out of memory deferring an AH; destroying it now");
			ibv_destroy_ah(ah);
			return;
		}
		f->dead = d;
		f->capdead = cap;
	}
	f->dead[f->ndead++] = (struct dead_ah){ah, f->tx_posted};
}

void verbs_ah_reap(struct pubd_fabric *f, bool all)
{
	unsigned i = 0;

	while (i < f->ndead) {
		if (all || f->dead[i].seq <= f->tx_done) {
			ibv_destroy_ah(f->dead[i].ah);
			f->dead[i] = f->dead[--f->ndead];
		} else {
			i++;
		}
	}
}
