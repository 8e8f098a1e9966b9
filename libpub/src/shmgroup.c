// SPDX-License-Identifier: MIT
/*
 * Group logs: a group's messages, written once by pubd for all of the
 * group's local subscribers on shared memory (common/deliverlog_format.h).
 * pubd hands one over with an SHM frame before the SUBSCRIBE's OK; it is
 * mapped read-only (pubd hands over a read-only file) and read like the deliver log,
 * each message where it lies, valid until the next pub_recv. How far this
 * reader has read goes into its slot in the deliver log's control page,
 * and the deliver log's space eventfd is rung when pubd says it waits for
 * room.
 *
 * Order. A group's messages come from its group log until an END record
 * there; after it they come in the deliver log (pubd wrote the END first).
 * So a deliver-log message of a group whose log is still attached waits
 * until that log has nothing more before it (shmrecv.c asks glog_before).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "deliverlog_format.h"
#include "internal.h"

static void glog_free(struct pub_glog *gl)
{
	if (gl->map)
		munmap(gl->map, gl->map_len);
	free(gl);
}

/* Remove glogs[i]; a log the caller's message still lies in is unmapped
 * at the next pub_recv (glog_release). */
static void glog_remove(struct pub_client *c, size_t i)
{
	struct pub_glog *gl = c->glogs[i];

	c->glogs[i] = c->glogs[--c->nglogs];
	if (c->glog_part == gl) {
		c->glog_part = NULL;
		c->dpart = false;
	}
	if (c->glog_held == gl) {
		gl->next_dead = c->glogs_dead;
		c->glogs_dead = gl;
		return;
	}
	glog_free(gl);
}

static struct pub_glog *glog_find(struct pub_client *c, const char *group, size_t glen, size_t *idx)
{
	for (size_t i = 0; i < c->nglogs; i++) {
		if (c->glogs[i]->glen == glen && !memcmp(c->glogs[i]->group, group, glen)) {
			if (idx)
				*idx = i;
			return c->glogs[i];
		}
	}
	return NULL;
}

int glog_attach(struct pub_client *c, const struct pub_msg_shm *m, int fd)
{
	size_t len = pub_shmlog_map_len(m->capacity), i;
	struct pub_glog *gl;
	void *map;

	if (!c->dlog_map || m->slot >= PUB_DELIVERLOG_NSLOTS || m->group.len > PUB_GROUP_MAX)
		return set_err(c, -PUB_EPROTO, "pubd's group log frame is not one this libpub can read");
	if (c->nglogs == c->glog_cap) {
		size_t cap = c->glog_cap ? c->glog_cap * 2 : 8;
		struct pub_glog **v = realloc(c->glogs, cap * sizeof(*v));

		if (!v)
			return set_err(c, -ENOMEM, "group log: out of memory");
		c->glogs = v;
		c->glog_cap = cap;
	}
	gl = calloc(1, sizeof(*gl));
	if (!gl)
		return set_err(c, -ENOMEM, "group log: out of memory");
	/* Read-only: pubd hands over a file opened read-only. */
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		free(gl);
		return set_err(c, -errno, "mapping the group log of '%.*s': %s", (int)m->group.len, m->group.ptr,
			       strerror(errno));
	}
	gl->map = map;
	gl->map_len = len;
	if (pub_shmlog_reader_init(&gl->r, map, len, m->capacity, m->max_record, m->start) < 0) {
		glog_free(gl);
		return set_err(c, -PUB_EPROTO, "pubd's group log is not one this libpub can read");
	}
	memcpy(gl->group, m->group.ptr, m->group.len);
	gl->glen = m->group.len;
	gl->after_mark = (m->flags & PUB_SHM_F_AFTER_MARK) != 0;
	gl->slot = pub_deliverlog_slot(c->dlog_map, m->slot);
	/* A log of the same group from before (resubscribed) is done with. */
	if (glog_find(c, gl->group, gl->glen, &i))
		glog_remove(c, i);
	c->glogs[c->nglogs++] = gl;
	return 0;
}

void glog_detach(struct pub_client *c, const char *group)
{
	size_t i;

	if (glog_find(c, group, strlen(group), &i))
		glog_remove(c, i);
}

void glog_detach_all(struct pub_client *c)
{
	/* One the caller's message lies in stays mapped until its next pub_recv. */
	while (c->nglogs)
		glog_remove(c, c->nglogs - 1);
	free(c->glogs);
	c->glogs = NULL;
	c->nglogs = c->glog_cap = 0;
}

void glog_free_dead(struct pub_client *c)
{
	struct pub_glog *gl;

	while ((gl = c->glogs_dead)) {
		c->glogs_dead = gl->next_dead;
		if (c->glog_held == gl)
			c->glog_held = NULL;
		glog_free(gl);
	}
}

/* Say how far we have read; ring pubd if it waits for room. */
static void publish_pos(struct pub_client *c, struct pub_glog *gl)
{
	uint64_t one = 1;

	atomic_store_explicit(gl->slot, gl->r.pos, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&gl->r.ctl->writer_waiting, memory_order_relaxed))
		(void)!write(c->dlog_space, &one, sizeof(one));
}

void glog_say_read(struct pub_client *c, const char *group)
{
	struct pub_glog *gl = group ? glog_find(c, group, strlen(group), NULL) : NULL;

	if (gl)
		publish_pos(c, gl);
}

void glog_release(struct pub_client *c)
{
	glog_free_dead(c); /* forgets one held there: its slot may be gone */
	if (c->glog_held)
		publish_pos(c, c->glog_held);
	c->glog_held = NULL;
}

/* pubd said, in the deliver log, that it closed the connection: its closed
 * flag, or the control page gone (pubd gives a closed client's pages back,
 * and the page then reads zeros: no magic). */
static bool dropped(const struct pub_client *c)
{
	return atomic_load_explicit(&c->dlog.ctl->closed, memory_order_acquire) != 0 ||
	       *(const volatile uint64_t *)&c->dlog.ctl->magic != PUB_SHMLOG_MAGIC;
}

/*
 * The next message of gl: 1 (in *m), 0 for none yet, or an error. An END
 * removes gl (its group goes on in the deliver log): 0, with *ended set.
 */
static int glog_read(struct pub_client *c, struct pub_glog *gl, struct pub_message *m, bool *ended)
{
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	size_t i;
	int r;

	*ended = false;
	/* Another log's message in pieces is being put together: it ends
	 * first. A log given back is read from its mark on. */
	if ((c->dpart && c->glog_part != gl) || gl->after_mark)
		return 0;
	for (;;) {
		/* pubd closed this connection: it writes the group logs on for
		 * others, over what we have not read. The socket says why. */
		if (dropped(c))
			return 0;
		r = pub_shmlog_next(&gl->r, &v);
		if (r <= 0)
			return r < 0 && !dropped(c)
				       ? set_err(c, -PUB_EPROTO, "group log of '%s': a record pubd does not write",
						 gl->group)
				       : 0;
		pub_shmlog_consume(&gl->r, &v);
		if (v.type == PUB_SHMLOG_END) {
			publish_pos(c, gl);
			*ended = true;
			if (glog_find(c, gl->group, gl->glen, &i))
				glog_remove(c, i);
			return 0;
		}
		if (pub_deliverlog_decode(&v, &p) < 0 ||
		    (p.first && (p.glen != gl->glen || memcmp(p.group, gl->group, gl->glen))))
			return set_err(c, -PUB_EPROTO, "group log of '%s': a malformed record", gl->group);
		if (p.first && !p.more && !c->dpart) {
			memcpy(c->msg_group, gl->group, gl->glen);
			c->msg_group[gl->glen] = '\0';
			*m = (struct pub_message){
				.group = c->msg_group, .source = p.source, .seq = p.seq, .data = p.data, .len = p.len};
			c->glog_held = gl;
			c->held_data = p.data;
			c->held_len = p.len;
			return 1;
		}
		c->glog_part = gl;
		r = dlog_gather(c, &p, m);
		publish_pos(c, gl);
		if (r) {
			c->glog_part = NULL;
			return r;
		}
	}
}

int glog_next(struct pub_client *c, struct pub_message *m)
{
	size_t n = c->nglogs, k;
	bool ended;
	int r;

	if (c->glog_part)
		return glog_read(c, c->glog_part, m, &ended);
	/* Round robin, so that no busy group keeps the others waiting. */
	for (k = 0; k < n && c->nglogs; k++) {
		struct pub_glog *gl = c->glogs[(c->glog_rr + k) % c->nglogs];

		r = glog_read(c, gl, m, &ended);
		if (r) {
			c->glog_rr++;
			return r;
		}
		if (c->dpart)
			return 0; /* gl began a message in pieces: nothing else until it ends */
	}
	return 0;
}

int glog_before(struct pub_client *c, const char *group, uint8_t glen, struct pub_message *m)
{
	struct pub_glog *gl = glog_find(c, group, glen, NULL);
	bool ended;

	return gl ? glog_read(c, gl, m, &ended) : 0;
}

bool glog_any(struct pub_client *c)
{
	for (size_t i = 0; i < c->nglogs; i++) {
		const struct pub_shmlog_reader *r = &c->glogs[i]->r;
		const struct pub_shmlog_rec *rec = (const struct pub_shmlog_rec *)(r->ring + (r->pos & (r->cap - 1)));

		if (!c->glogs[i]->after_mark &&
		    atomic_load_explicit((_Atomic uint64_t *)&rec->commit, memory_order_acquire))
			return true;
	}
	return false;
}

int glog_mark(struct pub_client *c, const char *group, uint8_t glen)
{
	uint64_t deadline = now_ns() + 5000000000ull;
	struct pub_glog *gl;
	int r;

	/* pubd sent the frame before it wrote the mark: it is on the socket. */
	while (!(gl = glog_find(c, group, glen, NULL)) || !gl->after_mark) {
		r = process(c, NULL, NULL);
		if (r < 0)
			return r;
		if ((gl = glog_find(c, group, glen, NULL)) && gl->after_mark)
			break;
		r = rx_read(c);
		if (r == -EAGAIN) {
			struct pollfd p = {.fd = c->sock, .events = POLLIN};

			if (now_ns() >= deadline)
				return set_err(c, -PUB_EPROTO, "deliver log: a mark of '%.*s' without its group log",
					       (int)glen, group);
			poll(&p, 1, 100);
		} else if (r < 0) {
			return r;
		}
	}
	gl->after_mark = false;
	return 0;
}
