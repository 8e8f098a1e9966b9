// SPDX-License-Identifier: MIT
/*
 * The shared-memory receive path: the deliver log pubd hands over at
 * WELCOME (its second SHM frame), read by pub_recv without a system call
 * per message. A message in one record is returned where it lies in the
 * log: its space is given back to pubd only at the next pub_recv, so the
 * pointer stays valid until then. A message in pieces is put together in
 * the handle. pubd rings the doorbell (in pub_fd's epoll set) only after
 * the reader said it sleeps. Group logs (shmgroup.c) are read beside it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "deliverlog_format.h"
#include "internal.h"

/*
 * The connection is about to go while the caller's message lies in a log,
 * where it stays valid until the next pub_recv whatever became of the
 * connection: its pages become the caller's own, the same bytes at the same
 * address, before the socket is closed. Once pubd sees the socket go it
 * takes every page of the client's deliver log back (and writes a group
 * log on for others), so the shared pages could read zeros, or another
 * message, under the caller.
 */
void shm_keep_held(struct pub_client *c)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), from, to;
	void *copy;

	if (!c->held_data || !(c->dlog_holding || c->glog_held) || !c->held_len)
		return;
	from = (uintptr_t)c->held_data & ~(page - 1);
	to = ((uintptr_t)c->held_data + c->held_len + page - 1) & ~(page - 1);
	c->held_data = NULL;
	copy = mmap(NULL, to - from, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (copy == MAP_FAILED)
		return;
	memcpy(copy, (const void *)from, to - from);
	/* Moved over the shared pages in one step: never a moment without. */
	if (mremap(copy, to - from, to - from, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)from) == MAP_FAILED)
		munmap(copy, to - from);
}

void dlog_detach(struct pub_client *c)
{
	glog_detach_all(c); /* their slots are in the deliver log */
	if (c->dlog_map) {
		/* The caller's message may lie in it: valid until its next
		 * pub_recv, whatever became of the connection meanwhile (one
		 * message: an older dead log holds it only if this one does not). */
		if (c->dlog_holding && !c->dlog_dead_map) {
			c->dlog_dead_map = c->dlog_map;
			c->dlog_dead_len = c->dlog_map_len;
		} else {
			munmap(c->dlog_map, c->dlog_map_len);
		}
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->dlog_doorbell, NULL);
	}
	if (c->dlog_doorbell >= 0)
		close(c->dlog_doorbell);
	if (c->dlog_space >= 0)
		close(c->dlog_space);
	c->dlog_map = NULL;
	c->dlog_doorbell = c->dlog_space = -1;
	c->dlog_holding = false;
	c->dpart = false;
}

int dlog_attach(struct pub_client *c, const struct pub_msg_shm *m, const int fds[3])
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[1]};
	size_t len = pub_shmlog_map_len(m->capacity);
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);

	if (map == MAP_FAILED)
		return set_err(c, -errno, "mapping the deliver log: %s", strerror(errno));
	if (pub_shmlog_reader_init(&c->dlog, map, len, 0, 0, 0) < 0 || c->dlog.cap != m->capacity) {
		munmap(map, len);
		return set_err(c, -PUB_EPROTO, "pubd's deliver log is not one this libpub can read");
	}
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fds[1], &ev) < 0) {
		munmap(map, len);
		return set_err(c, -errno, "epoll_ctl: %s", strerror(errno));
	}
	c->dlog_map = map;
	c->dlog_map_len = len;
	c->dlog_doorbell = fds[1];
	c->dlog_space = fds[2];
	return 0;
}

void shm_release_dead(struct pub_client *c)
{
	if (c->dlog_dead_map)
		munmap(c->dlog_dead_map, c->dlog_dead_len);
	c->dlog_dead_map = NULL;
	glog_free_dead(c);
}

/* Give pubd back what was read; ring it if it waits for room. */
static void give_back(struct pub_client *c)
{
	uint64_t one = 1;

	if (pub_shmlog_release(&c->dlog))
		(void)!write(c->dlog_space, &one, sizeof(one));
}

void dlog_release(struct pub_client *c)
{
	if (c->dlog_map && c->dlog_holding) {
		c->dlog_holding = false;
		give_back(c);
	}
}

/* A piece of a message too large for one record: gathered in c->dbuf. */
int dlog_gather(struct pub_client *c, const struct pub_deliverlog_piece *p, struct pub_message *m)
{
	if (p->first) {
		if (p->total > c->info.max_message)
			return set_err(c, -PUB_EPROTO, "deliver log: a message of %u bytes, above max_message",
				       p->total);
		if (p->total > c->dcap) {
			uint8_t *b = realloc(c->dbuf, p->total);

			if (!b)
				return set_err(c, -ENOMEM, "recv: out of memory for a %u-byte message", p->total);
			c->dbuf = b;
			c->dcap = p->total;
		}
		memcpy(c->dgroup, p->group, p->glen);
		c->dgroup[p->glen] = '\0';
		c->dsource = p->source;
		c->dseq = p->seq;
		c->dtotal = p->total;
		c->dhave = 0;
		c->dpart = true;
	} else if (!c->dpart || p->total != c->dtotal) {
		return set_err(c, -PUB_EPROTO, "deliver log: a piece of no message begun");
	}
	if (p->len > c->dtotal - c->dhave || p->more == (c->dhave + p->len == c->dtotal))
		return set_err(c, -PUB_EPROTO, "deliver log: a message's pieces do not add up");
	memcpy(c->dbuf + c->dhave, p->data, p->len);
	c->dhave += p->len;
	if (p->more)
		return 0;
	c->dpart = false;
	memcpy(c->msg_group, c->dgroup, sizeof(c->msg_group));
	*m = (struct pub_message){
		.group = c->msg_group, .source = c->dsource, .seq = c->dseq, .data = c->dbuf, .len = c->dtotal};
	return 1;
}

static int own_next(struct pub_client *c, struct pub_message *m)
{
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	int r;

	for (;;) {
		r = pub_shmlog_next(&c->dlog, &v);
		if (r <= 0)
			return r < 0 ? set_err(c, -PUB_EPROTO, "deliver log: a record pubd does not write") : 0;
		if (v.type != PUB_SHMLOG_MSG || pub_deliverlog_decode(&v, &p) < 0)
			return set_err(c, -PUB_EPROTO, "deliver log: a malformed record");
		if (p.move) {
			/* The group goes on in its group log from here (its name
			 * copied before the record's room is given back). */
			char group[PUB_GROUP_MAX + 1];

			memcpy(group, p.group, p.glen);
			pub_shmlog_consume(&c->dlog, &v);
			give_back(c);
			r = glog_mark(c, group, p.glen);
			if (r < 0)
				return r;
			continue;
		}
		/* A group whose group log is still attached: what that log
		 * holds came first (and a message begun there in pieces is
		 * read to its end before anything else). */
		if (p.first && c->nglogs && ((r = glog_before(c, p.group, p.glen, m)) != 0 || c->dpart))
			return r;
		pub_shmlog_consume(&c->dlog, &v);
		if (p.first && !p.more && !c->dpart) {
			/* Returned where it lies: given back at the next call. */
			memcpy(c->msg_group, p.group, p.glen);
			c->msg_group[p.glen] = '\0';
			*m = (struct pub_message){
				.group = c->msg_group, .source = p.source, .seq = p.seq, .data = p.data, .len = p.len};
			c->dlog_holding = true;
			c->held_data = p.data;
			c->held_len = p.len;
			return 1;
		}
		r = dlog_gather(c, &p, m);
		give_back(c);
		if (r)
			return r;
	}
}

int dlog_next(struct pub_client *c, struct pub_message *m)
{
	int r;

	if (!c->dlog_map)
		return 0;
	dlog_release(c);
	glog_release(c);
	/* A message in pieces is read to its end from the log it is in. */
	if (c->dpart)
		return c->glog_part ? glog_next(c, m) : own_next(c, m);
	if (!c->nglogs)
		return own_next(c, m);
	/* Turn and turn about, so that neither keeps the other waiting; one
	 * that began a message in pieces keeps the turn until it ends. */
	if (c->glog_turn ^= 1) {
		r = glog_next(c, m);
		return r || c->dpart ? r : own_next(c, m);
	}
	r = own_next(c, m);
	return r || c->dpart ? r : glog_next(c, m);
}

bool dlog_sleep(struct pub_client *c)
{
	uint64_t v;

	if (!c->dlog_map)
		return true;
	(void)!read(c->dlog_doorbell, &v, sizeof(v)); /* an old ring is not news */
	/* The flag covers the group logs too: pubd rings the deliver log's
	 * doorbell after writing either; the wake page's, the direct logs,
	 * whose writers ring the same doorbell. Set before their last look
	 * (the barrier is pub_shmlog_reader_sleep's). */
	wake_sleep(c);
	if (!pub_shmlog_reader_sleep(&c->dlog))
		return false;
	return !glog_any(c) && !dr_any(c);
}

bool dlog_spin(struct pub_client *c)
{
	const struct pub_shmlog_rec *rec;
	unsigned i;

	for (i = 0; i < DLOG_SPINS; i++) {
		rec = (const struct pub_shmlog_rec *)(c->dlog.ring + (c->dlog.pos & (c->dlog.cap - 1)));
		if (atomic_load_explicit((_Atomic uint64_t *)&rec->commit, memory_order_acquire) || glog_any(c) ||
		    dr_any(c))
			return true;
		pub_shmlog_cpu_relax();
	}
	return false;
}

void dlog_awake(struct pub_client *c)
{
	if (c->dlog_map)
		pub_shmlog_reader_awake(&c->dlog);
	wake_awake(c);
}
