/* SPDX-License-Identifier: MIT */
/*
 * The direct path's part in reading a direct log (direct.c has the rest):
 * what publog.c calls as it reads one. A record is decoded as a deliver
 * log's, checked against the log's group; the message's fan-out passes
 * over the log's readers, counted delivered here; and after each read,
 * readers the writer was not told of (or has not taken in) are rung by
 * pubd, and pubd says whether it wants to be rung for every message.
 */
#include <errno.h>
#include <string.h>

#include "directlog.h"
#include "server_internal.h"

static struct pub_shmlog_ctl *ctl_of(const struct srv_direct *d)
{
	return (struct pub_shmlog_ctl *)d->l->shm.map;
}

void srv_direct_publish_gen(struct srv_direct *d)
{
	d->wakers_gen++;
	atomic_store_explicit(&ctl_of(d)->wakers_gen, d->wakers_gen, memory_order_release);
}

/* Tell the writer about reader rd (its wake page and doorbell), if it can
 * take the fds now; until it has, pubd rings rd itself. A writer that
 * reads nothing is sent SRV_FDS_UNREAD_MAX fds at most (srv_send_fds). */
void srv_direct_tell_writer(struct srv_direct *d, struct srv_direct_reader *rd)
{
	struct pubd_client *w = d->writer, *c = rd->s->client;
	uint8_t frame[96 + PUB_PROTO_NAME_MAX];
	struct pub_msg_shm m = {.kind = PUB_SHM_WAKER,
				.slot = rd->slot,
				.start = d->wakers_gen + 1, /* what wakers_gen says once the writer took it in */
				.group = {d->name, d->name_len},
				.log_id = d->id,
				.peer = c->id,
				.source = d->source};
	int fds[2] = {c->wake_ro_fd, c->dlog->shm.doorbell_fd};
	long n;

	if (d->retired_ns || w->closing || w->gone)
		return;
	n = pub_proto_enc_shm(frame, sizeof(frame), &m);
	if (n <= 0 || srv_send_fds(w, frame, (size_t)n, fds, 2) < 0)
		return;
	rd->told = true;
	srv_direct_publish_gen(d);
}

/* ---- lazy or prompt ---- */

/* pubd need not be rung for every message when nothing but the counts
 * waits for it: a host group, every subscriber of which reads the log and
 * is woken by the writer (told, and the writer took it in). */
static bool lazy_now(const struct srv_direct *d)
{
	const struct pubd_group *g = d->g;
	unsigned i;

	if (!g || !g->host || d->retired_ns || d->nreaders != g->nsubs)
		return false;
	if (atomic_load_explicit(&ctl_of(d)->wakers_seen, memory_order_acquire) != d->wakers_gen)
		return false;
	for (i = 0; i < d->nreaders; i++)
		if (!d->readers[i].told)
			return false;
	return true;
}

void srv_direct_update_lazy(struct srv_direct *d)
{
	bool lazy = lazy_now(d);

	if (lazy == d->lazy)
		return;
	d->lazy = lazy;
	atomic_store_explicit(&ctl_of(d)->lazy, lazy, memory_order_release);
	/* Prompt again: the writer rings only a reader that said it sleeps. */
	if (!lazy)
		atomic_store_explicit(&ctl_of(d)->reader_sleeping, 1, memory_order_release);
}

bool srv_direct_after_read(struct srv_direct *d, bool read_any)
{
	bool acked = atomic_load_explicit(&ctl_of(d)->wakers_seen, memory_order_acquire) == d->wakers_gen;
	unsigned i;

	for (i = 0; i < d->nreaders; i++) {
		struct srv_direct_reader *rd = &d->readers[i];
		struct pubd_client *c = rd->s->client;

		if (!rd->told)
			srv_direct_tell_writer(d, rd);
		/* The backstop: a reader the writer may not know of yet is
		 * rung by pubd, at the turn's flush, if it sleeps. */
		if (read_any && (!rd->told || !acked) && c->dlog) {
			c->dlog->unrung = true;
			srv_mark_dirty(c);
		}
	}
	srv_direct_update_lazy(d);
	return !d->lazy;
}

/* ---- fan-out ---- */

void srv_direct_fan_begin(struct srv_direct *d, struct pubd_group *g, size_t len, struct pubd_msgbuf *pieces,
			  uint64_t seq)
{
	struct pubd_ipc *srv = d->l->srv;
	unsigned i;

	for (i = 0; i < d->nreaders; i++) {
		struct pubd_sub *s = d->readers[i].s;

		if (s->group != g)
			continue;
		s->direct_now = true;
		if (pieces) {
			pubd_ipc_deliver(srv, s, d->source, seq, pieces);
			continue;
		}
		d->readers[i].given++; /* no more can it say it lost */
		d->readers[i].given_bytes += len;
		srv_count_delivered(s->client, s, len);
		srv->counters[PUBD_CTR_DIRECT_DELIVERED]++;
	}
	srv->direct_fan_out = true;
}

void srv_direct_fan_end(struct srv_direct *d)
{
	unsigned i;

	for (i = 0; i < d->nreaders; i++)
		d->readers[i].s->direct_now = false;
}

int srv_direct_decode(const struct srv_direct *d, const struct pub_shmlog_view *v, struct pub_publog_piece *p)
{
	struct pub_deliverlog_piece q;

	/* The writer's source field carries a PUB_SYNC's req_id (readers
	 * take the source pubd gave them): answered once read. */
	if (v->type != PUB_SHMLOG_MSG || pub_deliverlog_decode(v, &q) < 0 || !pub_direct_record_ok(&q))
		return -EPROTO;
	p->req_id = (uint32_t)q.source;
	p->seq = q.seq;
	p->first = q.first;
	p->more = q.more;
	p->glen = q.glen;
	p->data = q.data;
	p->len = q.len;
	p->total = q.total;
	/* Compared where it lies: the writer may change those bytes as we
	 * look, but nothing of them is used after. A match says the record is
	 * of our group, whose name (d->name) is the one used from here on:
	 * p->group is left unfilled (publog.c takes the name from d). */
	if (q.first && (q.glen != d->name_len || !pub_direct_name_is(q.group, d->name, q.glen)))
		return -EPROTO;
	return 0;
}
