// SPDX-License-Identifier: MIT
/*
 * The shared-memory publish path: the publish log pubd hands over at
 * WELCOME (an SHM frame with the log's memfd and two eventfds), and
 * pub_publish writing into it: a message is a record (or pieces, when it
 * is larger than a record may be), committed with a release store; pubd
 * is woken only when it said it sleeps. The socket carries no data then,
 * only requests and pubd's answers, PUB_SYNC's included (its req_id
 * travels in the record, so pubd answers it in order).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "publog_format.h"

void rx_fds_close(struct pub_client *c)
{
	unsigned i;

	for (i = 0; i < c->nrx_fds; i++)
		if (c->rx_fds[i] >= 0)
			close(c->rx_fds[i]);
	c->nrx_fds = 0;
}

void shm_detach(struct pub_client *c)
{
	if (c->log_map)
		munmap(c->log_map, c->log_map_len);
	if (c->log_doorbell >= 0)
		close(c->log_doorbell);
	if (c->log_space >= 0)
		close(c->log_space);
	c->log_map = NULL;
	c->log_doorbell = c->log_space = -1;
	c->wake_owed = false;
	/* A claim in the old log is gone with it; its pub_commit says so. */
	if (c->claim_rec)
		c->claim_open = false;
	c->claim_rec = NULL;
	rx_fds_close(c);
}

/* A publish log's record: a message's first piece? -1: not one of ours. */
static int publog_first(const struct pub_shmlog_view *v)
{
	struct pub_publog_piece p;

	return pub_publog_decode(v, &p) < 0 ? -1 : p.first;
}

uint64_t shm_messages_past_head(const struct pub_shmlog_writer *w, const void *map, size_t map_len,
				int (*first_piece)(const struct pub_shmlog_view *v))
{
	uint64_t head = atomic_load_explicit(&w->ctl->head, memory_order_acquire), n = 0;
	struct pub_shmlog_reader r;
	struct pub_shmlog_view v;
	bool first = true;
	int f;

	if (head > w->tail || w->tail - head > w->cap ||
	    pub_shmlog_reader_init(&r, (void *)map, map_len, w->cap, w->max_record, head) < 0)
		return 0;
	while (r.pos < w->tail && pub_shmlog_next(&r, &v) == 1 && (f = first_piece(&v)) >= 0) {
		n += f || first; /* (a later piece first: its message too) */
		first = false;
		pub_shmlog_consume(&r, &v);
	}
	return n;
}

/*
 * After the connection ended: messages in the publish log pubd had not
 * given the space of back, when pubd did not close the log itself. A pubd
 * that ends a connection knowingly (a hang-up, an error, a shutdown)
 * counts what it leaves unread and gives the log's pages back before it
 * closes the socket: they read zeros then, magic included. Otherwise
 * (killed, crashed): from its head to our tail, the messages begun there
 * (a later piece first: its message too). pubd writes head: one out of
 * range counts nothing.
 */
uint64_t shm_unread(const struct pub_client *c)
{
	if (*(const volatile uint64_t *)&c->log.ctl->magic != PUB_SHMLOG_MAGIC)
		return 0;
	return shm_messages_past_head(&c->log, c->log_map, c->log_map_len, publog_first);
}

int shm_attach(struct pub_client *c, const struct pub_msg_shm *m, const int fds[3])
{
	size_t len;
	void *map;

	len = pub_shmlog_map_len(m->capacity);
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (map == MAP_FAILED)
		return set_err(c, -errno, "mapping the publish log: %s", strerror(errno));
	if (pub_shmlog_writer_init(&c->log, map, len, false) < 0) {
		munmap(map, len);
		return set_err(c, -PUB_EPROTO, "pubd's publish log is not one this libpub can write");
	}
	c->log_map = map;
	c->log_map_len = len;
	c->log_doorbell = fds[1];
	c->log_space = fds[2];
	return 0;
}

static void ring(int fd)
{
	uint64_t one = 1;

	/* pubd never resets the count (each ring is an edge to it): one a ring
	 * cannot fill in 2^64 rings; nothing else can fail here. */
	(void)!write(fd, &one, sizeof(one));
}

void shm_wake(struct pub_client *c)
{
	if (!c->wake_owed)
		return;
	if (c->log_map && pub_shmlog_wake_reader(&c->log))
		ring(c->log_doorbell);
	dw_wake_all(c);
	c->wake_owed = false;
}

/* Wait for room for a record of len body bytes in w (rung through
 * doorbell, woken through space): 0, -EAGAIN (nonblocking), -ESTALE when
 * still says the log went while we waited (a retired direct log), or a
 * connection error (pubd went away while we waited). */
int shm_wait_room(struct pub_client *c, struct pub_shmlog_writer *w, int doorbell, int space, uint32_t len,
		  bool nonblock, bool (*still)(struct pub_client *c, const void *arg), const void *arg)
{
	struct pollfd p[2];
	uint64_t v;
	int r;

	while (!pub_shmlog_has_room(w, len)) {
		if (nonblock)
			return -EAGAIN;
		/* pubd makes room only by reading: it must know there is more
		 * (one that reads a direct log lazily too). */
		if (pub_shmlog_wake_reader(w) || atomic_load_explicit(&w->ctl->lazy, memory_order_relaxed))
			ring(doorbell);
		if (!pub_shmlog_writer_sleep(w, len))
			continue;
		p[0] = (struct pollfd){.fd = space, .events = POLLIN};
		p[1] = (struct pollfd){.fd = c->sock, .events = POLLIN};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return -errno;
		if (p[0].revents & POLLIN)
			(void)!read(space, &v, sizeof(v));
		if (p[1].revents) {
			/* Read what pubd says meanwhile (errors about earlier
			 * messages): it stops reading a client whose answers
			 * pile up unread, and would never make room. */
			r = rx_read(c);
			if (r < 0 && r != -EAGAIN)
				return r;
			r = process(c, NULL, NULL);
			if (r < 0)
				return r;
			if (still && !still(c, arg))
				return -ESTALE;
		}
	}
	return 0;
}

/* The ring bytes a message takes at most: its pieces with their headers,
 * one padding record (less than a record) and the next commit word. */
static uint64_t log_bytes(const struct pub_client *c, size_t glen, size_t len)
{
	uint32_t per = pub_shmlog_max_body(&c->log) - PUB_PUBLOG_HEAD;
	uint64_t pieces = (len + glen + per - 1) / per;

	if (!pieces)
		pieces = 1;
	return pieces * (PUB_SHMLOG_HDR_LEN + PUB_PUBLOG_HEAD + PUB_SHMLOG_ALIGN) + len + glen + c->log.max_record +
	       PUB_SHMLOG_ALIGN;
}

/* Write one piece: its record claimed, head and payload copied, committed. */
static int put_piece(struct pub_client *c, uint32_t req_id, const char *group, uint8_t glen, const uint8_t *data,
		     uint32_t n, uint32_t total, bool more, bool nonblock)
{
	uint32_t body = PUB_PUBLOG_HEAD + glen + n, head;
	uint8_t *b;
	int r;

	r = shm_wait_room(c, &c->log, c->log_doorbell, c->log_space, body, nonblock, NULL, NULL);
	if (r < 0)
		return r;
	b = pub_shmlog_claim(&c->log, PUB_SHMLOG_MSG, more ? PUB_SHMLOG_F_MORE : 0, total, body);
	if (!b)
		return -EAGAIN; /* cannot happen after wait_room; never write half a piece */
	head = pub_publog_put_head(b, req_id, group, glen);
	if (n)
		memcpy(b + head, data, n);
	pub_shmlog_commit(&c->log);
	return 0;
}

bool shm_fits_record(const struct pub_client *c, size_t glen, size_t len)
{
	return c->log_map && PUB_PUBLOG_HEAD + glen + len <= pub_shmlog_max_body(&c->log);
}

uint8_t *shm_claim(struct pub_client *c, const char *group, size_t glen, size_t len, int *err)
{
	uint32_t body = (uint32_t)(PUB_PUBLOG_HEAD + glen + len);
	uint8_t *b;

	*err = shm_wait_room(c, &c->log, c->log_doorbell, c->log_space, body, false, NULL, NULL);
	if (*err < 0)
		return NULL;
	b = pub_shmlog_claim(&c->log, PUB_SHMLOG_MSG, 0, (uint32_t)len, body);
	if (!b) {
		*err = -EAGAIN;
		return NULL;
	}
	c->claim_rec = b;
	return b + pub_publog_put_head(b, 0, group, (uint8_t)glen);
}

void shm_commit(struct pub_client *c, uint32_t req_id, int flags)
{
	/* The record is not visible until its commit word: its req_id can
	 * still be set now. */
	memcpy(c->claim_rec, &req_id, sizeof(req_id));
	pub_shmlog_commit(&c->log);
	c->claim_rec = NULL;
	c->wake_owed = true;
	if (!(flags & PUB_MORE))
		shm_wake(c);
}

int shm_publish(struct pub_client *c, uint32_t req_id, const char *group, size_t glen, const void *data, size_t len,
		int flags)
{
	const uint8_t *p = data;
	uint32_t max = pub_shmlog_max_body(&c->log) - PUB_PUBLOG_HEAD, n;
	bool nonblock = flags & PUB_NONBLOCK, first = true;
	size_t left = len;
	int r;

	/* PUB_NONBLOCK writes a message whole or not at all: it needs room for
	 * every piece now. One larger than half the log could never find that
	 * much room at once, so it waits like a blocking publish. */
	if (nonblock && log_bytes(c, glen, len) <= c->log.cap / 2) {
		if (pub_shmlog_room(&c->log) < log_bytes(c, glen, len))
			return -EAGAIN;
	} else {
		nonblock = false;
	}
	do {
		n = (uint32_t)(left < max - (first ? glen : 0) ? left : max - (first ? glen : 0));
		r = put_piece(c, first ? req_id : 0, group, first ? (uint8_t)glen : 0, p, n, (uint32_t)len, left > n,
			      nonblock);
		if (r < 0)
			return r;
		p += n;
		left -= n;
		first = false;
		/* pubd may be asleep while we wait for room for the next piece. */
		if (left && pub_shmlog_wake_reader(&c->log))
			ring(c->log_doorbell);
	} while (left);
	c->wake_owed = true;
	if (!(flags & PUB_MORE))
		shm_wake(c);
	return 0;
}
