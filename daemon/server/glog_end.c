/* SPDX-License-Identifier: MIT */
/*
 * A group log's ending (glog.c has its making, readers and writing). When
 * its readers fall a subscriber queue behind, pubd ends the log for all of
 * them at once: an END record, then what waited goes to each reader's own
 * deliver log. A log whose subscribe ACL changed, whose group went, or
 * that a reader pubd ended may still hold a message in, is retired: ended,
 * never written again, freed with its last reader. Once a second the
 * readers an END moved off get the log back when they have read up to it;
 * those that do not within limits.group_log_drain_ms are given up on.
 */
#include <unistd.h>

#include "glog_internal.h"
#include "log.h"
#include "loop.h"
#include "server_internal.h"

/* Move every reader off the log: an END record, then what waited goes to
 * each reader's own deliveries, oldest first. */
static void glog_end(struct pubd_ipc *srv, struct srv_glog *gl, const char *why)
{
	struct pubd_group *g = gl->g;
	uint64_t end;
	unsigned i, k;

	if (!g->glog_live && !gl->wq_n) {
		gl->must_end = false;
		return;
	}
	/* The reserve keeps room for it whatever the readers hold. */
	if (!pub_shmlog_claim(&gl->w, PUB_SHMLOG_END, 0, 0, 0))
		log_err("group %s: no room for its group log's END record (a bug)", g->name);
	pub_shmlog_commit(&gl->w);
	end = gl->w.tail;
	gl->ended_ns = pubd_now_ns();
	g->glog_ends++;
	glog_readers_wait(gl, -1, gl->wq_n, gl->wq_bytes);
	srv_log_limited(srv, log_glog_end, LOG_NOTICE,
			"group %s: %s: its %u group log readers read on from their own deliver logs (%u messages "
			"waiting)",
			g->name, why, g->glog_live, gl->wq_n);
	for (i = 0; i < g->nsubs; i++) {
		struct pubd_sub *s = g->subs[i];

		if (!s->glog_live || s->glog != gl)
			continue;
		s->glog_live = false;
		g->glog_live--;
		s->glog_until = end;
		gl->draining++;
		if (s->client->dlog) {
			s->client->dlog->unrung = true;
			srv_mark_dirty(s->client);
		}
		for (k = 0; k < gl->wq_n; k++) {
			struct glog_wait *x = &gl->wq[(gl->wq_head + k) % gl->wq_cap];

			pubd_ipc_deliver(srv, s, x->source, x->seq, x->m);
		}
	}
	for (k = 0; k < gl->wq_n; k++)
		pubd_msgbuf_put(gl->wq[(gl->wq_head + k) % gl->wq_cap].m);
	gl->wq_n = 0;
	gl->wq_bytes = 0;
	gl->wq_written = 0;
	gl->must_end = false;
	if (gl->waiting)
		glog_set_waiting(gl, false);
	if (gl->on_list)
		glog_wait_unlink(srv, gl);
	/* Those ended look at their slots again as they read. */
	glog_refresh_head(gl);
}

void srv_glog_flush_all(struct pubd_ipc *srv)
{
	struct srv_glog *gl, *next;

	for (gl = srv->glogs_waiting; gl; gl = next) {
		next = gl->next_waiting;
		if (gl->must_end)
			glog_end(srv, gl, "readers fell a subscriber queue behind on its group log");
		else
			glog_write_waiting(srv, gl);
	}
}

/* End the group's log and retire it: nobody is given it again, nothing is
 * written to it again; it goes with its last reader. */
static void glog_retire(struct pubd_ipc *srv, struct pubd_group *g, const char *why)
{
	struct srv_glog *gl = g->glog;

	if (!gl)
		return;
	glog_end(srv, gl, why);
	g->glog = NULL;
	gl->g = NULL;
	if (gl->on_list)
		glog_wait_unlink(srv, gl);
	/* Nothing is written to it again, and it is given to nobody: the fd
	 * goes. The mapping stays until glog_free punches the pages out. */
	close(gl->memfd);
	gl->memfd = -1;
	if (!gl->readers)
		glog_free(srv, gl);
}

/* Give the group's log back to the subscriptions an END moved off, once
 * they have read up to it (a retired log's too). */
static void give_back(struct pubd_ipc *srv, struct pubd_group *g)
{
	unsigned i;

	for (i = 0; i < g->nsubs; i++) {
		struct pubd_sub *s = g->subs[i];
		struct srv_glog *gl = g->glog;

		if (gl && (gl->draining || gl->wq_n || gl->must_end))
			return;
		bool had = s->glog != NULL;

		if (s->glog_until && s->glog != gl)
			glog_look_at_reader(s->glog, s); /* a retired log: read to its END yet? */
		if (s->glog_live || s->glog_until)
			continue;
		srv_glog_leave(srv, s);
		glog_give(s->client, s, true); /* also one that could not have it at SUBSCRIBE */
		if (s->glog_live && had)
			g->glog_returns++;
	}
}

/*
 * Readers an END moved off that have not read up to it within
 * limits.group_log_drain_ms (stopped, hung, or hostile): the log would take
 * no reader again until they did, leaving every subscriber of the group on
 * copies. Give up on them instead: the log is retired (they keep reading
 * what they mapped, up to its END, and pubd writes no more there), the
 * others get a new one, and the clients given up on get no group log again
 * while connected, so none of them can make pubd retire logs one after the
 * other (each retired log stays in memory while a client maps it).
 */
static void give_up_on_drainers(struct pubd_ipc *srv, struct pubd_group *g)
{
	struct srv_glog *gl = g->glog;
	unsigned i, n = 0;

	for (i = 0; i < g->nsubs; i++) {
		struct pubd_sub *s = g->subs[i];

		if (s->glog == gl && s->glog_until) {
			s->client->glog_withheld = true;
			n++;
		}
	}
	g->glog_abandoned++;
	srv_log_limited(srv, log_glog_end, LOG_NOTICE,
			"group %s: %u group log reader%s did not read to the END within %u ms: a new group log for "
			"the others, none for %s",
			g->name, n, n == 1 ? "" : "s", srv->cfg->group_log_drain_ms, n == 1 ? "it" : "them");
	glog_retire(srv, g, "readers stuck before its END");
}

void srv_glog_tick(struct pubd_ipc *srv, uint64_t now_ns)
{
	uint64_t drain_ns = (uint64_t)srv->cfg->group_log_drain_ms * 1000000u;
	struct pubd_group *g;
	unsigned i;

	if (!srv->cfg->group_log)
		return;
	pubd_groups_foreach(srv->groups, g, i)
	{
		struct srv_glog *gl = g->glog;

		if (g->glog_live == g->nsubs)
			continue;
		if (gl && gl->draining)
			glog_refresh_head(gl); /* what the ended readers have read since */
		if (gl && gl->draining && now_ns > gl->ended_ns && now_ns - gl->ended_ns >= drain_ns)
			give_up_on_drainers(srv, g);
		give_back(srv, g);
	}
}

/*
 * pubd ends c before it hung up (ended.c keeps what it may still read until
 * it does). libpub may still hold a message where it lies in a group log c
 * reads (its slot is then behind the log's tail), valid until its next
 * pub_recv; pubd, writing on for the others, would write over it as soon
 * as the ring wraps, under the caller. Such a log is retired instead: the
 * others read to its END and get a new one, as after any END, and the old
 * one is kept, unwritten, until c hangs up (glog_leave's hold), charged to
 * limits.client_buffer_budget. When the budget has no room for it, the
 * log is not retired and c's message may be written over: c was ended,
 * and an attacker that used the budget up must not make every group's
 * readers change logs for each connection it gets ended.
 */
void srv_glog_client_ended(struct pubd_client *c)
{
	unsigned i;

	for (i = 0; i < c->nsubs; i++) {
		struct pubd_sub *s = c->subs[i];
		struct srv_glog *gl = s->glog;

		if (!gl || gl != s->group->glog || !(s->glog_live || s->glog_until) ||
		    glog_released_now(gl, s) >= gl->w.tail || !srv_budget_fits(c->srv, gl->shm.map_len))
			continue;
		glog_retire(c->srv, s->group, "a reader pubd ended may still hold a message in it");
	}
}

void srv_glog_acl_changed(struct pubd_ipc *srv, struct pubd_group *g)
{
	if (g->glog && !pubd_acl_same(&g->glog->acl, &g->cfg->subscribe))
		glog_retire(srv, g, "its subscribe ACL changed: a new group log for readers the ACL allows");
}

void srv_glog_group_removed(struct pubd_ipc *srv, struct pubd_group *g)
{
	glog_retire(srv, g, "the group is gone");
}
