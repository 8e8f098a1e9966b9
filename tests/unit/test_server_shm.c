/* SPDX-License-Identifier: MIT */
/*
 * The server's shared-memory logs, with the client's side written by hand
 * (not libpub), so a test can write what libpub never would: the handover
 * at HELLO, publishing through the publish log (whole, in pieces, refused),
 * a record no writer of the protocol makes, a client that hangs up in the
 * middle of a record, and deliveries through the deliver log with its
 * back-pressure and the slow-subscriber policy.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "deliverlog_format.h"
#include "msgbuf.h"
#include "publog_format.h"
#include "server_harness.h"
#include "server_internal.h" /* white-box: the log's mapping */
#include "shmlog.h"

struct shm_client {
	int fd;
	uint8_t *pmap, *dmap;
	size_t plen, dlen;
	int pdoor, pspace, ddoor, dspace;
	struct pub_shmlog_writer w;
	struct pub_shmlog_reader r;
};

/* Read the handshake's bytes and fds: WELCOME and two SHM frames. */
static void read_handshake(struct fixture *f, int fd, uint8_t *buf, size_t *have, int *fds, unsigned *nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	int tries;

	*have = 0;
	*nfds = 0;
	for (tries = 0; tries < 400 && (*have < 8 + 30 || !*nfds); tries++) {
		struct iovec iov = {.iov_base = buf + *have, .iov_len = 1024 - *have};
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl)};
		struct cmsghdr *cm;
		ssize_t n;

		turn(f);
		n = recvmsg(fd, &mh, MSG_DONTWAIT);
		if (n <= 0)
			continue;
		*have += (size_t)n;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			unsigned k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			memcpy(fds + *nfds, CMSG_DATA(cm), k * sizeof(int));
			*nfds += k;
		}
	}
}

/* HELLO asking for shared memory; both logs mapped as libpub would. */
static void shm_hello(struct fixture *f, struct shm_client *sc)
{
	uint8_t frame[300], buf[1024], type;
	struct pub_msg_welcome wel;
	struct pub_msg_shm shm[2];
	const uint8_t *body;
	uint32_t len;
	size_t have, off = 0;
	unsigned nfds, i;
	int fds[8];

	sc->fd = client(f);
	send_frame(sc->fd, frame, pub_proto_enc_hello(frame, sizeof(frame), PUB_HELLO_F_SHM, "s", 1));
	read_handshake(f, sc->fd, buf, &have, fds, &nfds);
	assert_int_equal(nfds, 6);
	assert_int_equal(pub_proto_frame_peek(buf, have, 4096, &type, &len, &body, NULL), 1);
	assert_int_equal(type, PUB_FRAME_WELCOME);
	assert_int_equal(pub_proto_dec_welcome(body, len, &wel), 0);
	assert_int_equal(wel.flags, PUB_WELCOME_F_SHM | PUB_WELCOME_F_SHM_DELIVER);
	off = PUB_PROTO_HDR_LEN + len;
	for (i = 0; i < 2; i++) {
		assert_int_equal(pub_proto_frame_peek(buf + off, have - off, 4096, &type, &len, &body, NULL), 1);
		assert_int_equal(type, PUB_FRAME_SHM);
		assert_int_equal(pub_proto_dec_shm(body, len, &shm[i]), 0);
		off += PUB_PROTO_HDR_LEN + len;
	}
	assert_int_equal(shm[0].kind, PUB_SHM_PUBLISH_LOG);
	assert_int_equal(shm[1].kind, PUB_SHM_DELIVER_LOG);
	/* Sealed: a client cannot shrink the memory pubd reads and writes. */
	assert_int_equal(ftruncate(fds[0], 0), -1);
	assert_int_equal(errno, EPERM);
	sc->plen = pub_shmlog_map_len(shm[0].capacity);
	sc->dlen = pub_shmlog_map_len(shm[1].capacity);
	sc->pmap = mmap(NULL, sc->plen, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	sc->dmap = mmap(NULL, sc->dlen, PROT_READ | PROT_WRITE, MAP_SHARED, fds[3], 0);
	assert_true(sc->pmap != MAP_FAILED && sc->dmap != MAP_FAILED);
	close(fds[0]);
	close(fds[3]);
	sc->pdoor = fds[1], sc->pspace = fds[2], sc->ddoor = fds[4], sc->dspace = fds[5];
	assert_int_equal(pub_shmlog_writer_init(&sc->w, sc->pmap, sc->plen, false), 0);
	assert_int_equal(pub_shmlog_reader_init(&sc->r, sc->dmap, sc->dlen, 0, 0, 0), 0);
}

static void shm_close(struct shm_client *sc)
{
	munmap(sc->pmap, sc->plen);
	munmap(sc->dmap, sc->dlen);
	close(sc->pdoor), close(sc->pspace), close(sc->ddoor), close(sc->dspace);
	if (sc->fd >= 0)
		close(sc->fd);
}

static void ring(int fd)
{
	uint64_t one = 1;

	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
}

/* An eventfd's count, read (and so reset) from the client's side. */
static uint64_t eventfd_count(int fd)
{
	uint64_t v;

	return read(fd, &v, sizeof(v)) == sizeof(v) ? v : 0;
}

/* One piece into the publish log, committed (pubd rung when it sleeps). */
static void put_piece(struct shm_client *sc, uint32_t req_id, const char *g, size_t n, uint32_t total, bool more)
{
	size_t glen = g ? strlen(g) : 0;
	uint8_t *b = pub_shmlog_claim(&sc->w, PUB_SHMLOG_MSG, more ? PUB_SHMLOG_F_MORE : 0, total,
				      (uint32_t)(PUB_PUBLOG_HEAD + glen + n));

	assert_non_null(b);
	memset(b + pub_publog_put_head(b, req_id, g, (uint8_t)glen), 'p', n);
	pub_shmlog_commit(&sc->w);
	if (pub_shmlog_wake_reader(&sc->w))
		ring(sc->pdoor);
}

/* A message through the log reaches the engine whole, once, checked like
 * a PUBLISH frame; PUB_SYNC's req_id in the record gets its answer. */
static void the_publish_log_carries_messages_checked(void **state)
{
	struct fixture *f = *state;
	struct shm_client sc;
	uint32_t code, piece = 1000;

	shm_hello(f, &sc);
	put_piece(&sc, 5, "open", 100, 100, false);
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.publish, 1);
	assert_int_equal(f->calls.len, 100);
	put_piece(&sc, 6, "closed", 10, 10, false); /* publish: [] */
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_ERROR);
	assert_int_equal(code, PUB_ERR_ACL);
	/* A later piece that asks for an answer is not one libpub writes. */
	put_piece(&sc, 0, "open", piece, 3 * piece, true);
	put_piece(&sc, 0, NULL, piece, 3 * piece, true);
	put_piece(&sc, 7, NULL, piece, 3 * piece, false);
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_ERROR); /* req_id only in the first piece */
	assert_int_equal(code, PUB_ERR_PROTO);
	shm_close(&sc);
}

/* The publish log remembers the group its last message was admitted to,
 * and forgets it when ACLs are reloaded: a client whose publish ACL no
 * longer allows the group is told, and its next record is refused. */
static void a_reloaded_acl_reaches_the_next_record(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *open = pubd_groups_by_name(&f->groups, "open", 4);
	const struct pubd_group *closed = pubd_groups_by_name(&f->groups, "closed", 6);
	const struct pubd_group_config *was = open->cfg;
	struct shm_client sc;
	uint32_t code;

	shm_hello(f, &sc);
	put_piece(&sc, 5, "open", 100, 100, false);
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_OK);
	put_piece(&sc, 6, "open", 100, 100, false);
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.publish, 2);
	/* A reload gives open the publish ACL of closed (publish: []). */
	open->cfg = closed->cfg;
	pubd_ipc_acl_changed(&f->srv, open, was);
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_ERROR); /* publishing to open ended */
	assert_int_equal(code, PUB_ERR_ACL);
	put_piece(&sc, 7, "open", 100, 100, false);
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_ERROR);
	assert_int_equal(code, PUB_ERR_ACL);
	assert_int_equal(f->calls.publish, 2);
	shm_close(&sc);
}

static void a_message_in_pieces_is_published_whole(void **state)
{
	struct fixture *f = *state;
	struct shm_client sc;
	uint32_t code, piece = 60000;

	shm_hello(f, &sc);
	put_piece(&sc, 9, "open", piece, 3 * piece, true);
	put_piece(&sc, 0, NULL, piece, 3 * piece, true);
	put_piece(&sc, 0, NULL, piece, 3 * piece, false);
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.publish, 1);
	assert_int_equal(f->calls.len, 3 * piece);
	shm_close(&sc);
	while (f->srv.nclients)
		turn(f);
	assert_int_equal(f->srv.charged, 0);
}

/* A record no writer of the protocol makes ends that client, nobody else. */
static void a_bad_record_ends_only_its_client(void **state)
{
	struct fixture *f = *state;
	struct shm_client sc;
	uint64_t garbage = (uint64_t)7 << 32 | 48; /* a lap the log is not on */
	uint32_t code;
	int other = hello(f);

	shm_hello(f, &sc);
	memcpy(sc.pmap + PUB_SHMLOG_CTL_LEN, &garbage, 8);
	ring(sc.pdoor);
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_ERROR);
	assert_int_equal(code, PUB_ERR_PROTO);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_REJECTED], 1);
	assert_int_equal(group_req(f, other, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.publish, 0);
	shm_close(&sc);
	close(other);
}

/* Hanging up: what was committed is published (even never rung in), a
 * record begun and never committed is counted client_gone. */
static void a_hang_up_mid_record_costs_that_record_only(void **state)
{
	struct fixture *f = *state;
	struct shm_client sc;
	unsigned i;
	uint8_t *b;

	shm_hello(f, &sc);
	for (i = 0; i < 3; i++) {
		b = pub_shmlog_claim(&sc.w, PUB_SHMLOG_MSG, 0, 50, PUB_PUBLOG_HEAD + 4 + 50);
		pub_publog_put_head(b, 0, "open", 4);
		pub_shmlog_commit(&sc.w); /* no ring: pubd sleeps on */
	}
	b = pub_shmlog_claim(&sc.w, PUB_SHMLOG_MSG, 0, 50, PUB_PUBLOG_HEAD + 4 + 50);
	memset(b, 0, 3); /* ...and the writer dies */
	close(sc.fd);
	sc.fd = -1;
	while (f->srv.nclients)
		turn(f);
	assert_int_equal(f->calls.publish, 3);
	assert_int_equal(f->drops.by_reason[PUB_DROP_CLIENT_GONE], 1);
	assert_int_equal(f->counters[PUBD_CTR_MSG_DROPPED], 1);
	shm_close(&sc);
}

static uint64_t ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)((int64_t)(t.tv_sec - t0->tv_sec) * 1000 + (int64_t)(t.tv_nsec - t0->tv_nsec) / 1000000);
}

/*
 * A writer that goes on after its client hung up: another thread (or a
 * process sharing the mapping) commits records a little ahead of pubd,
 * for at most 3 s. Each is refused with an answer (a req_id, a group whose
 * ACL denies it), which costs pubd more than it costs the writer. It paces
 * itself on what pubd has refused (the drop counter, read while pubd's
 * thread writes it: a hostile writer's guess, not a synchronisation) and
 * gives itself the room pubd has not given back yet.
 */
#define GOON_POS (1u << 16) /* > records in a lap */
struct goon {
	struct fixture *f;
	struct shm_client *sc;
	uint64_t pos[GOON_POS]; /* where record k starts (or padding before it) */
	_Atomic unsigned written;
	_Atomic bool stop;
};

static void *goon_writer(void *arg)
{
	struct goon *g = arg;
	struct pub_shmlog_writer *w = &g->sc->w;
	struct timespec t0;
	unsigned k = 0, done;
	uint64_t seen;
	uint8_t *b;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!atomic_load(&g->stop) && ms_since(&t0) < 3000) {
		done = (unsigned)__atomic_load_n(&g->f->counters[PUBD_CTR_MSG_DROPPED], __ATOMIC_RELAXED);
		if (done > k)
			done = k;
		seen = g->pos[done % GOON_POS];
		if (w->tail > seen + w->cap / 2)
			continue; /* half a lap ahead of pubd, no more */
		atomic_store(&w->ctl->head, seen);
		w->head_seen = seen;
		g->pos[k % GOON_POS] = w->tail;
		b = pub_shmlog_claim(w, PUB_SHMLOG_MSG, 0, 8, PUB_PUBLOG_HEAD + 6 + 8);
		if (!b)
			continue;
		pub_publog_put_head(b, 1, "closed", 6);
		pub_shmlog_commit(w);
		atomic_store(&g->written, ++k);
	}
	return NULL;
}

/* A client that hung up has its log read a batch a turn, no further than a
 * lap past where its close began, and for no longer than CLOSE_GRACE_NS:
 * a writer that goes on committing neither keeps pubd in one turn nor keeps
 * the client for ever. Before, pubd read "to the end" in one loop: the
 * first turn after the hang-up lasted as long as the writer went on (3 s
 * here; SIGTERM took 27 s in the audit). Every record pubd looked at is
 * refused (and counted) or counted client_gone. */
static void a_hung_up_writer_that_goes_on_is_not_read_for_ever(void **state)
{
	struct fixture *f = *state;
	struct goon *g = calloc(1, sizeof(*g));
	uint64_t longest = 0, ms, gone, denied;
	struct timespec t0, t;
	struct shm_client sc;
	struct pubd_client *c;
	pthread_t th;

	assert_non_null(g);
	shm_hello(f, &sc);
	g->f = f;
	g->sc = &sc;
	g->pos[0] = sc.w.tail;
	assert_int_equal(pthread_create(&th, NULL, goon_writer, g), 0);
	while (atomic_load(&g->written) < 1000)
		;
	shutdown(sc.fd, SHUT_WR); /* hung up; the writer goes on */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	c = f->srv.clients;
	while (f->srv.nclients && ms_since(&t0) < 10000) {
		/* The fabric sent what it was given (the harness keeps none). */
		while (c->tx_pending)
			pubd_ipc_tx_done(&f->srv, c, 0, 1);
		clock_gettime(CLOCK_MONOTONIC, &t);
		turn(f);
		ms = ms_since(&t);
		longest = ms > longest ? ms : longest;
	}
	ms = ms_since(&t0);
	atomic_store(&g->stop, true);
	pthread_join(th, NULL);
	gone = f->drops.by_reason[PUB_DROP_CLIENT_GONE];
	denied = pubd_groups_by_name(&f->groups, "closed", 6)->drops.by_reason[PUB_DROP_ACL_DENIED];
	print_message("hung-up writer: %u records committed, %llu refused, %llu client_gone; closed after %llu ms, "
		      "longest turn %llu ms\n",
		      atomic_load(&g->written), (unsigned long long)denied, (unsigned long long)gone,
		      (unsigned long long)ms, (unsigned long long)longest);
	assert_int_equal(f->srv.nclients, 0);
	assert_true(longest < 500);
	assert_true(ms < 2500); /* CLOSE_GRACE_NS and a turn */
	/* Read no further than a lap past the hang-up, and nothing lost
	 * uncounted of what pubd looked at. */
	assert_true(denied <= sc.w.cap / 8 + 1000);
	assert_true(denied + gone <= atomic_load(&g->written));
	assert_int_equal(f->counters[PUBD_CTR_MSG_DROPPED], denied + gone);
	free(g);
	shm_close(&sc);
}

/* Replies to publish-log records back-pressure the log as they do the
 * socket: a client that commits records pubd refuses with an answer (a
 * req_id, a group that does not exist) and never reads its socket is
 * paused at CTRL_BYTES_HIGH of queued replies, within the client budget.
 * Before, its replies queued without bound (the audit: 183 MB against a
 * 64 MiB budget, pubd at 974 MB). Once it reads, it is read on, and every
 * record is answered and counted. */
static void unread_replies_pause_the_publish_log(void **state)
{
	struct fixture *f = *state;
	struct shm_client sc;
	struct pubd_client *c;
	char name[201];
	uint8_t buf[65536], type;
	const uint8_t *body;
	uint32_t len, n = 0, errors = 0, idle = 0, most_budget_over = 0;
	size_t most = 0, have = 0, off;
	ssize_t k;
	uint8_t *b;

	memset(name, 'u', 200);
	name[200] = '\0';
	shm_hello(f, &sc);
	c = f->srv.clients;
	assert_non_null(c->log);
	/* 40,000 replies of about 260 bytes: 10 MB, past CTRL_BYTES_HIGH. */
	while (n < 40000 && idle < 100) {
		b = pub_shmlog_claim(&sc.w, PUB_SHMLOG_MSG, 0, 1, PUB_PUBLOG_HEAD + 200 + 1);
		if (!b) {
			if (pub_shmlog_wake_reader(&sc.w))
				ring(sc.pdoor);
			turn(f);
			idle++;
			continue;
		}
		idle = 0;
		b[pub_publog_put_head(b, ++n, name, 200)] = 'x';
		pub_shmlog_commit(&sc.w);
		if (pub_shmlog_wake_reader(&sc.w))
			ring(sc.pdoor);
		if (c->out_ctrl_bytes > most)
			most = c->out_ctrl_bytes;
		if (!srv_budget_fits(&f->srv, 0))
			most_budget_over++;
	}
	print_message("unread replies: %u records committed, %zu reply bytes queued at most (CTRL_BYTES_HIGH %u)\n", n,
		      most, CTRL_BYTES_HIGH);
	assert_true(c->paused);
	assert_true(n < 40000); /* the writer found no room: pubd stopped reading */
	assert_true(most < CTRL_BYTES_HIGH + 1024);
	assert_int_equal(most_budget_over, 0);
	/* It reads: pubd resumes it, and every record is answered. */
	while (errors < n) {
		turn(f);
		if (pub_shmlog_wake_reader(&sc.w))
			ring(sc.pdoor);
		k = read(sc.fd, buf + have, sizeof(buf) - have);
		if (k <= 0)
			continue;
		have += (size_t)k;
		off = 0;
		while (pub_proto_frame_peek(buf + off, have - off, sizeof(buf), &type, &len, &body, NULL) == 1) {
			assert_int_equal(type, PUB_FRAME_ERROR);
			errors++;
			off += PUB_PROTO_HDR_LEN + len;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	assert_int_equal(errors, n);
	assert_int_equal(f->drops.by_reason[PUB_DROP_NO_GROUP], n);
	assert_false(c->paused);
	shm_close(&sc);
}

/* A delivery to one subscriber: its sub entry in the group. */
static void deliver(struct fixture *f, const char *group, uint64_t seq, size_t len)
{
	struct pubd_group *g = pubd_groups_by_name(&f->groups, group, strlen(group));
	struct pubd_msgbuf *m = pubd_msgbuf_alloc(len);

	assert_non_null(m);
	memset(m->data, (int)(seq & 0xff), len);
	pubd_ipc_deliver(&f->srv, g->subs[0], 0xabc, seq, m);
	pubd_msgbuf_put(m);
}

/* Deliveries are written into the deliver log, not the socket; a full log
 * holds the rest in the subscriber queue until the reader makes room. */
static void deliveries_go_through_the_deliver_log(void **state)
{
	struct fixture *f = *state;
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	struct shm_client sc;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	uint64_t seq, got = 0, rings = 0;
	uint32_t code;

	shm_hello(f, &sc);
	assert_int_equal(group_req(f, sc.fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	for (seq = 0; seq < 40; seq++)
		deliver(f, "open", seq, 60000); /* 40 x 60 KB: more than a 1 MiB log holds */
	turn(f);
	assert_true(pubd_ipc_queued_for(g->subs[0]) > 0);
	assert_true(g->delivered > 0 && g->delivered < 40);
	while (got < 40) {
		int r = pub_shmlog_next(&sc.r, &v);

		assert_true(r >= 0);
		if (r == 0) {
			if (pub_shmlog_release(&sc.r)) {
				ring(sc.dspace);
				rings++;
			}
			turn(f);
			continue;
		}
		assert_int_equal(pub_deliverlog_decode(&v, &p), 0);
		assert_int_equal(p.source, 0xabc);
		assert_int_equal(p.seq, got);
		assert_int_equal(p.len, 60000);
		assert_memory_equal(p.group, "open", 4);
		assert_int_equal(p.data[0], (uint8_t)got);
		pub_shmlog_consume(&sc.r, &v);
		got++;
	}
	assert_int_equal(g->delivered, 40);
	assert_int_equal(pubd_ipc_queued_for(g->subs[0]), 0);
	/* Each ring woke pubd, and pubd read none (edge-triggered). */
	assert_true(rings > 0);
	assert_int_equal(eventfd_count(sc.dspace), rings);
	shm_close(&sc);
}

/* A message up to a quarter of the deliver log is one record (the reader
 * returns it where it lies); a larger one comes in pieces that add up. */
static void a_message_of_a_quarter_of_the_log_is_one_record(void **state)
{
	struct fixture *f = *state;
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	struct shm_client sc;
	uint32_t code, one, more, have = 0, pieces = 0;

	shm_hello(f, &sc);
	one = sc.r.cap / 4 - 64;
	more = sc.r.cap / 4 + 64;
	assert_int_equal(group_req(f, sc.fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	deliver(f, "open", 0, one);
	deliver(f, "open", 1, more);
	turn(f);
	assert_int_equal(pub_shmlog_next(&sc.r, &v), 1);
	assert_int_equal(pub_deliverlog_decode(&v, &p), 0);
	assert_int_equal(p.seq, 0);
	assert_false(p.more);
	assert_int_equal(p.len, one);
	assert_int_equal(p.total, one);
	pub_shmlog_consume(&sc.r, &v);
	do {
		assert_int_equal(pub_shmlog_next(&sc.r, &v), 1);
		assert_int_equal(pub_deliverlog_decode(&v, &p), 0);
		assert_int_equal(p.seq, 1);
		assert_int_equal(p.total, more);
		have += p.len;
		pieces++;
		pub_shmlog_consume(&sc.r, &v);
	} while (p.more);
	assert_int_equal(have, more);
	assert_int_equal(pieces, 2);
	shm_close(&sc);
}

/* Read what the deliver log holds now, checking each record is the next
 * sequence number; returns how many were read. */
static unsigned read_log(struct shm_client *sc, uint64_t *next)
{
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	unsigned n = 0;

	while (pub_shmlog_next(&sc->r, &v) > 0) {
		assert_int_equal(pub_deliverlog_decode(&v, &p), 0);
		assert_int_equal(p.seq, *next);
		pub_shmlog_consume(&sc->r, &v);
		++*next;
		n++;
	}
	if (pub_shmlog_release(&sc->r))
		ring(sc->dspace);
	return n;
}

/* With nothing queued before it, a delivery is in the log at once (no
 * queue entry, no flush needed); once deliveries wait in the queue, a new
 * one waits behind them even when the log has room again, so the log
 * keeps the order. */
static void a_delivery_goes_straight_into_the_log_unless_others_wait(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	struct shm_client sc;
	uint64_t seq = 0, next = 0;
	uint32_t code;
	unsigned i;

	shm_hello(f, &sc);
	assert_int_equal(group_req(f, sc.fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	deliver(f, "open", seq++, 100);
	assert_int_equal(g->delivered, 1);
	assert_int_equal(pubd_ipc_queued_for(g->subs[0]), 0);
	assert_int_equal(read_log(&sc, &next), 1);
	while (pubd_ipc_queued_for(g->subs[0]) == 0)
		deliver(f, "open", seq++, 60000); /* until the log is full */
	assert_true(read_log(&sc, &next) > 0);	  /* room again, no turn yet */
	deliver(f, "open", seq++, 100);
	assert_int_equal(pubd_ipc_queued_for(g->subs[0]), 2); /* behind the one waiting */
	for (i = 0; i < 100 && next < seq; i++) {
		turn(f);
		read_log(&sc, &next);
	}
	assert_int_equal(next, seq);
	assert_int_equal(g->delivered, seq);
	shm_close(&sc);
}

/* A reply is not held behind deliveries waiting for room in a full
 * deliver log: libpub waits for a reply without reading that log. */
static void replies_pass_a_full_deliver_log(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	struct shm_client sc;
	uint8_t frame[64];
	uint64_t seq;
	uint32_t code;

	shm_hello(f, &sc);
	assert_int_equal(group_req(f, sc.fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	for (seq = 0; seq < 40; seq++)
		deliver(f, "open", seq, 60000);
	turn(f);
	assert_true(pubd_ipc_queued_for(g->subs[0]) > 0); /* the log is full; nothing read */
	send_frame(sc.fd, frame, pub_proto_enc_query(frame, sizeof(frame), 3, PUB_QUERY_GROUPS, "", 0));
	assert_int_equal(reply(f, sc.fd, &code), PUB_FRAME_OK);
	assert_int_equal(group_req(f, sc.fd, PUB_FRAME_SUBSCRIBE, "nosuch", &code), PUB_FRAME_ERROR);
	assert_int_equal(code, PUB_ERR_NO_GROUP);
	assert_true(pubd_ipc_queued_for(g->subs[0]) > 0); /* still full: the replies went past */
	shm_close(&sc);
}

/* One whole message of n bytes of fill, committed without a reply asked for. */
static void put_message(struct shm_client *sc, size_t n, uint8_t fill)
{
	uint8_t *b = pub_shmlog_claim(&sc->w, PUB_SHMLOG_MSG, 0, (uint32_t)n, (uint32_t)(PUB_PUBLOG_HEAD + 4 + n));

	assert_non_null(b);
	memset(b + pub_publog_put_head(b, 0, "open", 4), fill, n);
	pub_shmlog_commit(&sc->w);
	if (pub_shmlog_wake_reader(&sc->w))
		ring(sc->pdoor);
}

static void turn_until_published(struct fixture *f, unsigned n)
{
	unsigned i;

	for (i = 0; i < 400 && f->calls.publish < n; i++)
		turn(f);
	assert_int_equal(f->calls.publish, n);
}

/* The same, the turns without their settling (what is held stays lent). */
static void turn_unsettled_until_published(struct fixture *f, unsigned n)
{
	unsigned i;

	for (i = 0; i < 400 && f->calls.publish < n; i++) {
		pubd_loop_run_once(f->loop, 5);
		pubd_ipc_flush_all(&f->srv);
	}
	assert_int_equal(f->calls.publish, n);
}

static uint64_t log_head(const struct shm_client *sc)
{
	return atomic_load(&((struct pub_shmlog_ctl *)sc->pmap)->head);
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	while (n--)
		if (*p++ != v)
			return false;
	return true;
}

/* A large message is published from its record (lent, not copied); once
 * the engine lets it go the writer has its space back. A small one is
 * copied, which costs less than lending. */
static void a_large_message_is_published_from_its_record(void **state)
{
	struct fixture *f = *state;
	struct shm_client sc;

	shm_hello(f, &sc);
	put_message(&sc, 4096, 'a');
	turn_until_published(f, 1);
	assert_int_equal(f->calls.len, 4096);
	assert_int_equal(f->counters[PUBD_CTR_PUBLOG_LENT], 1);
	assert_int_equal(f->counters[PUBD_CTR_PUBLOG_LENT_COPIED], 0);
	assert_int_equal(log_head(&sc), sc.w.tail);
	put_message(&sc, 64, 'b');
	turn_until_published(f, 2);
	assert_int_equal(f->counters[PUBD_CTR_PUBLOG_LENT], 1);
	assert_int_equal(log_head(&sc), sc.w.tail);
	shm_close(&sc);
}

/* A lent message still held when the loop turn ends (a transmit backlog)
 * is copied then, and the writer gets its space back: it waits for
 * nobody. Until then the head stays before the lent record. What the
 * writer scribbles there afterwards is not in the held message. */
static void a_held_message_is_copied_when_the_turn_ends(void **state)
{
	struct fixture *f = *state;
	struct shm_client sc;
	struct pubd_msgbuf *m;
	uint64_t first;

	f->calls.hold = true;
	shm_hello(f, &sc);
	first = sc.w.tail;
	put_message(&sc, 8192, 'a');
	turn_unsettled_until_published(f, 1);
	m = f->calls.held[0];
	assert_true(pubd_msgbuf_is_lent(m));
	assert_true(m->data >= f->srv.clients->log->shm.map &&
		    m->data < f->srv.clients->log->shm.map + f->srv.clients->log->shm.map_len);
	assert_true(log_head(&sc) <= first); /* the record is still ours */
	pubd_ipc_settle(&f->srv);
	assert_false(pubd_msgbuf_is_lent(m));
	assert_int_equal(f->counters[PUBD_CTR_PUBLOG_LENT_COPIED], 1);
	assert_int_equal(log_head(&sc), sc.w.tail);
	assert_null(f->srv.lending);
	memset(sc.pmap + PUB_SHMLOG_CTL_LEN, 'z', 16384); /* the writer reuses the space */
	assert_int_equal(m->len, 8192);
	assert_true(all_bytes(m->data, m->len, 'a'));
	shm_close(&sc);
}

/* A client that hangs up with messages lent and held: its log is read to
 * the end and unmapped, the held messages are copied first and stay whole
 * (reading an unmapped record would fault). */
static void a_client_gone_leaves_its_held_messages_whole(void **state)
{
	struct fixture *f = *state;
	struct shm_client sc;
	unsigned i;

	f->calls.hold = true;
	shm_hello(f, &sc);
	for (i = 0; i < 3; i++) {
		uint8_t *b = pub_shmlog_claim(&sc.w, PUB_SHMLOG_MSG, 0, 2048, PUB_PUBLOG_HEAD + 4 + 2048);

		memset(b + pub_publog_put_head(b, 0, "open", 4), 'a' + (int)i, 2048);
		pub_shmlog_commit(&sc.w); /* never rung: read when it hangs up */
	}
	close(sc.fd);
	sc.fd = -1;
	while (f->srv.nclients)
		turn(f);
	assert_int_equal(f->calls.publish, 3);
	assert_int_equal(f->counters[PUBD_CTR_PUBLOG_LENT], 3);
	assert_int_equal(f->counters[PUBD_CTR_PUBLOG_LENT_COPIED], 3);
	for (i = 0; i < 3; i++) {
		assert_false(pubd_msgbuf_is_lent(f->calls.held[i]));
		assert_true(all_bytes(f->calls.held[i]->data, 2048, (uint8_t)('a' + i)));
	}
	assert_null(f->srv.lending);
	shm_close(&sc);
}

/* Pages of [p, p + len) in the memfd's page cache, however mapped. */
static size_t resident_pages(uint8_t *p, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page, i, in = 0;
	unsigned char *vec = calloc(n, 1);

	assert_non_null(vec);
	assert_int_equal(mincore(p, len, vec), 0);
	for (i = 0; i < n; i++)
		in += vec[i] & 1;
	free(vec);
	return in;
}

/* A client that keeps its mappings after it is gone keeps none of the
 * pages pubd wrote (else reconnecting again and again would pin pubd's
 * memory without bound): once it hung up, not one of its deliver log's,
 * not even of a message it may still hold where it lies (libpub copies
 * that one into pages of its own before it closes the socket), and none of
 * its publish log's, its own writes included. */
static void a_client_gone_leaves_nothing_pinned(void **state)
{
	struct fixture *f = *state;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	struct shm_client sc;
	uint8_t buf[4096];
	uint64_t seq;
	uint32_t code;
	uint8_t *b;

	shm_hello(f, &sc);
	assert_int_equal(group_req(f, sc.fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	for (seq = 0; seq < 4; seq++)
		deliver(f, "open", seq, 60000);
	turn(f);
	/* As libpub reads: the first given back, the second returned and held. */
	assert_int_equal(pub_shmlog_next(&sc.r, &v), 1);
	pub_shmlog_consume(&sc.r, &v);
	pub_shmlog_release(&sc.r);
	assert_int_equal(pub_shmlog_next(&sc.r, &v), 1);
	assert_int_equal(pub_deliverlog_decode(&v, &p), 0);
	assert_int_equal(p.seq, 1);
	pub_shmlog_consume(&sc.r, &v);
	/* And a message begun in its publish log, never committed. */
	b = pub_shmlog_claim(&sc.w, PUB_SHMLOG_MSG, 0, 200000, PUB_PUBLOG_HEAD + 4 + 200000);
	assert_non_null(b);
	memset(b, 'x', PUB_PUBLOG_HEAD + 4 + 200000);
	assert_true(resident_pages(sc.dmap, sc.dlen) >= 4 * 60000 / page);
	assert_true(resident_pages(sc.pmap, sc.plen) >= 200000 / page);

	close(sc.fd);
	sc.fd = -1;
	while (f->srv.nclients)
		turn(f);
	assert_int_equal(f->srv.nlingering, 0);
	assert_int_equal(resident_pages(sc.dmap, sc.dlen), 0);
	assert_int_equal(resident_pages(sc.pmap, sc.plen), 0);
	shm_close(&sc);

	/* A client pubd ends (a bad record) before it hangs up reads on what
	 * it has not read (pubd counted it delivered): that stays, all of it,
	 * and so does the connection, shut for writing, counted against
	 * max_clients and its log against the client budget, until the client
	 * hangs up. Its control page says closed. */
	shm_hello(f, &sc);
	assert_int_equal(group_req(f, sc.fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	deliver(f, "open", 0, 60000);
	deliver(f, "open", 1, 60000);
	turn(f);
	memcpy(sc.pmap + PUB_SHMLOG_CTL_LEN, &(uint64_t){(uint64_t)7 << 32 | 48}, 8);
	ring(sc.pdoor);
	while (f->srv.nclients)
		turn(f);
	assert_int_equal(f->srv.nlingering, 1);
	/* ... and against its uid's limits.max_clients_per_uid. */
	assert_int_equal(pubd_uid_count_get(&f->srv.per_uid, getuid()), 1);
	assert_true(f->srv.charged >= sc.dlen);
	assert_true(resident_pages(sc.dmap, sc.dlen) >= 2 * 60000 / page);
	assert_int_equal(atomic_load(&((struct pub_shmlog_ctl *)sc.dmap)->closed), 1);
	for (seq = 0; seq < 2; seq++) {
		assert_int_equal(pub_shmlog_next(&sc.r, &v), 1);
		assert_int_equal(pub_deliverlog_decode(&v, &p), 0);
		assert_int_equal(p.seq, seq);
		assert_true(all_bytes(p.data, p.len, (uint8_t)seq));
		pub_shmlog_consume(&sc.r, &v);
	}
	/* The socket says why, then ends. */
	while (read(sc.fd, buf, sizeof(buf)) > 0)
		;
	close(sc.fd);
	sc.fd = -1;
	while (f->srv.nlingering)
		turn(f);
	assert_int_equal(pubd_uid_count_get(&f->srv.per_uid, getuid()), 0);
	assert_int_equal(f->srv.charged, 0);
	assert_int_equal(resident_pages(sc.dmap, sc.dlen), 0);
	shm_close(&sc);
}

/* A send reading a lent record in place (the verbs fabric: inplace.c)
 * pins its message: the turn's end neither copies it nor gives its record
 * back to the writer until the send is done; then it goes as any loan. */
static void a_pinned_message_waits_for_its_send(void **state)
{
	struct fixture *f = *state;
	struct shm_client sc;
	struct pubd_msgbuf *m;
	uint64_t first;

	f->calls.hold = true;
	shm_hello(f, &sc);
	first = sc.w.tail;
	put_message(&sc, 8192, 'a');
	turn_unsettled_until_published(f, 1);
	m = f->calls.held[0];
	assert_true(pubd_msgbuf_is_lent(m));
	assert_ptr_equal(pubd_msgbuf_region(m), &f->srv.clients->log->region);
	pubd_msgbuf_pin(m); /* the fabric posted a send from the record */
	assert_int_equal(pubd_msgbuf_detach(m), -EBUSY);
	f->calls.held[0] = NULL; /* the transmit queue is done with it */
	f->calls.nheld = 0;
	pubd_msgbuf_put(m);
	pubd_ipc_settle(&f->srv);
	assert_true(pubd_msgbuf_is_lent(m)); /* not copied: the device reads it */
	assert_int_equal(f->counters[PUBD_CTR_PUBLOG_LENT_COPIED], 0);
	assert_true(log_head(&sc) <= first); /* the record is still ours */
	assert_non_null(f->srv.lending);
	assert_true(all_bytes(m->data, m->len, 'a'));
	pubd_msgbuf_unpin(m); /* the send completed: the last reference */
	pubd_ipc_settle(&f->srv);
	assert_int_equal(f->counters[PUBD_CTR_PUBLOG_LENT_COPIED], 0);
	assert_int_equal(log_head(&sc), sc.w.tail);
	assert_null(f->srv.lending);
	shm_close(&sc);
}

static unsigned unregistered;
static void count_unregister(struct pubd_mem_region *r)
{
	unregistered++;
	r->unregister = NULL;
	r->fabric = NULL;
}

/* A client that hangs up while a send reads its record in place: its log
 * stays mapped (and registered) until the send is done, then the region is
 * unregistered before the mapping goes. */
static void a_client_gone_keeps_its_log_for_a_pinned_send(void **state)
{
	struct fixture *f = *state;
	static int fake_fabric;
	struct pubd_mem_region *r;
	struct shm_client sc;
	struct pubd_msgbuf *m;

	f->calls.hold = true;
	shm_hello(f, &sc);
	put_message(&sc, 4096, 'q');
	turn_unsettled_until_published(f, 1);
	m = f->calls.held[0];
	r = pubd_msgbuf_region(m);
	assert_non_null(r);
	/* as a fabric registers it */
	unregistered = 0;
	r->fabric = &fake_fabric;
	r->unregister = count_unregister;
	pubd_msgbuf_pin(m);
	f->calls.held[0] = NULL;
	f->calls.nheld = 0;
	pubd_msgbuf_put(m);
	close(sc.fd);
	sc.fd = -1;
	while (f->srv.nclients)
		turn(f);
	assert_int_equal(unregistered, 0); /* still read by the send */
	assert_true(pubd_msgbuf_is_lent(m));
	assert_true(all_bytes(m->data, m->len, 'q')); /* still mapped */
	/* ...and still charged to the client budget: kept logs are bounded */
	assert_true(f->srv.charged >= f->cfg.publish_log);
	pubd_msgbuf_unpin(m); /* done: the orphan log goes, unregistered first */
	assert_int_equal(unregistered, 1);
	assert_int_equal(f->srv.charged, 0);
	assert_int_equal(f->counters[PUBD_CTR_PUBLOG_LENT_COPIED], 0);
	shm_close(&sc);
}

/* While the engine polls (busy_poll, or lingering after work) pubd reads a
 * publish log every turn and never says it sleeps there, so a record the
 * client commits without ringing is read; once polling stops, pubd says it
 * sleeps again (and the client must ring). */
static void a_polled_log_is_read_without_a_ring(void **state)
{
	struct fixture *f = *state;
	struct pub_shmlog_ctl *ctl;
	struct shm_client sc;
	unsigned i;

	shm_hello(f, &sc);
	ctl = (struct pub_shmlog_ctl *)sc.pmap;
	f->srv.polling = true;
	put_message(&sc, 100, 'a');
	turn_until_published(f, 1);
	for (i = 0; i < 4; i++)
		turn(f);
	assert_int_equal(atomic_load(&ctl->reader_sleeping), 0);
	/* Committed, not rung (the client sees pubd awake). */
	assert_false(pub_shmlog_wake_reader(&sc.w));
	{
		uint8_t *b = pub_shmlog_claim(&sc.w, PUB_SHMLOG_MSG, 0, 100, PUB_PUBLOG_HEAD + 4 + 100);

		assert_non_null(b);
		memset(b + pub_publog_put_head(b, 0, "open", 4), 'b', 100);
		pub_shmlog_commit(&sc.w);
	}
	turn_until_published(f, 2);
	/* Polling over: the next empty look says pubd sleeps. */
	f->srv.polling = false;
	for (i = 0; i < 4 && !atomic_load(&ctl->reader_sleeping); i++)
		turn(f);
	assert_int_equal(atomic_load(&ctl->reader_sleeping), 1);
	shm_close(&sc);
}

/* ---- group logs ---- */

/* pubd watches a publish log's doorbell edge-triggered and never reads
 * it (a system call per wakeup less): every ring still wakes it, whatever
 * the count the rings before left. */
static void every_ring_wakes_pubd_without_a_read(void **state)
{
	struct fixture *f = *state;
	struct pub_shmlog_ctl *ctl;
	struct shm_client sc;
	unsigned i, k;

	shm_hello(f, &sc);
	ctl = (struct pub_shmlog_ctl *)sc.pmap;
	for (k = 0; k < 5; k++) {
		for (i = 0; i < 400 && !atomic_load(&ctl->reader_sleeping); i++)
			turn(f);
		assert_int_equal(atomic_load(&ctl->reader_sleeping), 1);
		put_message(&sc, 100, 'a'); /* rings: pubd said it sleeps */
		turn_until_published(f, k + 1);
	}
	assert_int_equal(eventfd_count(sc.pdoor), 5);
	shm_close(&sc);
}

/* The deliver-log tests above see each subscriber's own log: no group logs. */
static int setup_own_logs(void **state)
{
	int r = setup(state);

	((struct fixture *)*state)->cfg.group_log = 0;
	return r;
}

struct glog_reader {
	uint8_t *map;
	size_t len;
	uint32_t slot;
	struct pub_shmlog_reader r;
};

/* One turn, then what the socket has: bytes after buf[*have], and the fd
 * that came with them, if one did. */
static void turn_and_recv(struct fixture *f, int sock, uint8_t *buf, size_t cap, size_t *have, int *fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct iovec iov = {.iov_base = buf + *have, .iov_len = cap - *have};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl)};
	ssize_t n;

	turn(f);
	n = recvmsg(sock, &mh, MSG_DONTWAIT);
	if (n <= 0)
		return;
	*have += (size_t)n;
	if (CMSG_FIRSTHDR(&mh))
		memcpy(fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(*fd));
}

/* The group log of an SHM frame, mapped read-only as libpub maps it. */
static void map_glog(struct glog_reader *gr, const struct pub_msg_shm *m, int fd)
{
	gr->len = pub_shmlog_map_len(m->capacity);
	gr->slot = m->slot;
	gr->map = mmap(NULL, gr->len, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(gr->map != MAP_FAILED);
	close(fd);
	assert_int_equal(pub_shmlog_reader_init(&gr->r, gr->map, gr->len, m->capacity, m->max_record, m->start), 0);
}

/* Whether a client that is not root (nobody's uid, if we are root) fails
 * to open the file behind fd for writing, through /proc/self/fd. */
static int cannot_reopen_writable(int fd)
{
	char path[64];
	int status = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
			_exit(2);
		_exit(open(path, O_RDWR) < 0 && errno == EACCES ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* SUBSCRIBE with the group log's SHM frame (and its memfd) before the OK;
 * the log mapped read-only, as libpub maps it. */
static void subscribe_glog(struct fixture *f, struct shm_client *sc, const char *group, struct glog_reader *gr)
{
	uint8_t frame[300], buf[1024], type;
	struct pub_msg_shm m;
	const uint8_t *body;
	size_t have = 0, off;
	uint32_t len;
	int fd = -1, tries;
	void *w;

	send_frame(sc->fd, frame,
		   pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_SUBSCRIBE, 7, group, strlen(group)));
	for (tries = 0; tries < 400; tries++) {
		turn_and_recv(f, sc->fd, buf, sizeof(buf), &have, &fd);
		if (pub_proto_frame_peek(buf, have, 4096, &type, &len, &body, NULL) == 1 && type == PUB_FRAME_SHM &&
		    have >= PUB_PROTO_HDR_LEN + len + PUB_PROTO_HDR_LEN + 4)
			break;
	}
	assert_int_equal(pub_proto_frame_peek(buf, have, 4096, &type, &len, &body, NULL), 1);
	assert_int_equal(type, PUB_FRAME_SHM);
	assert_int_equal(pub_proto_dec_shm(body, len, &m), 0);
	assert_int_equal(m.kind, PUB_SHM_GROUP_LOG);
	assert_int_equal(m.flags, 0);
	assert_memory_equal(m.group.ptr, group, strlen(group));
	off = PUB_PROTO_HDR_LEN + len;
	assert_int_equal(pub_proto_frame_peek(buf + off, have - off, 4096, &type, &len, &body, NULL), 1);
	assert_int_equal(type, PUB_FRAME_OK);
	assert_true(fd >= 0);
	/* Read-only for the reader: no mapping of it can write, now or later,
	 * nor can it write, resize, punch or seal it, or open it writable. */
	w = mmap(NULL, pub_shmlog_map_len(m.capacity), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(w == MAP_FAILED);
	assert_int_equal(errno, EACCES);
	assert_int_equal(write(fd, "x", 1), -1);
	assert_int_equal(ftruncate(fd, 0), -1);
	assert_int_equal(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), -1);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	assert_int_equal(cannot_reopen_writable(fd), 1);
	map_glog(gr, &m, fd);
	assert_int_equal(mprotect(gr->map, gr->len, PROT_READ | PROT_WRITE), -1);
}

/* A group log given back (no SUBSCRIBE): its SHM frame, which says to read
 * it from the mark on, read from the socket (turning), mapped read-only. */
static void given_back(struct fixture *f, struct shm_client *sc, struct glog_reader *gr)
{
	uint8_t buf[1024], type = 0;
	struct pub_msg_shm m;
	const uint8_t *body = NULL;
	uint32_t len = 0;
	size_t have = 0;
	int fd = -1, tries;

	for (tries = 0; tries < 20 && (fd < 0 || pub_proto_frame_peek(buf, have, 4096, &type, &len, &body, NULL) != 1);
	     tries++)
		turn_and_recv(f, sc->fd, buf, sizeof(buf), &have, &fd);
	assert_true(fd >= 0);
	assert_int_equal(type, PUB_FRAME_SHM);
	assert_int_equal(pub_proto_dec_shm(body, len, &m), 0);
	assert_int_equal(m.kind, PUB_SHM_GROUP_LOG);
	assert_int_equal(m.flags, PUB_SHM_F_AFTER_MARK);
	map_glog(gr, &m, fd);
}

/* Is the next record in sc's deliver log group's mark (read past it)? */
static bool next_is_mark(struct shm_client *sc, const char *group)
{
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;

	if (pub_shmlog_next(&sc->r, &v) != 1 || pub_deliverlog_decode(&v, &p) < 0)
		return false;
	pub_shmlog_consume(&sc->r, &v);
	return p.move && p.glen == strlen(group) && !memcmp(p.group, group, p.glen);
}

/* What the engine does with a message of g (engine_fan_out). */
static void fan_out(struct fixture *f, struct pubd_group *g, uint64_t seq, size_t len)
{
	struct pubd_msgbuf *m = pubd_msgbuf_alloc(len);
	unsigned i;

	assert_non_null(m);
	memset(m->data, (int)(seq & 0xff), len);
	pubd_ipc_group_log_put(&f->srv, g, 0xabc, seq, m->data, m->len, m);
	for (i = 0; i < g->nsubs; i++)
		if (!g->subs[i]->glog_live)
			pubd_ipc_deliver(&f->srv, g->subs[i], 0xabc, seq, m);
	pubd_msgbuf_put(m);
}

/* a and b, each a shared-memory subscriber of open reading its group log. */
static void two_readers(struct fixture *f, struct shm_client *a, struct shm_client *b, struct glog_reader *ga,
			struct glog_reader *gb)
{
	shm_hello(f, a);
	shm_hello(f, b);
	subscribe_glog(f, a, "open", ga);
	subscribe_glog(f, b, "open", gb);
}

/* Read a group log's messages in order from *next on; stops at nothing
 * new or at END (*ended). Publishes the position in the reader's slot. */
static unsigned read_glog(struct shm_client *sc, struct glog_reader *gr, uint64_t *next, bool *ended)
{
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	unsigned n = 0;

	*ended = false;
	while (pub_shmlog_next(&gr->r, &v) > 0) {
		pub_shmlog_consume(&gr->r, &v);
		if (v.type == PUB_SHMLOG_END) {
			*ended = true;
			break;
		}
		assert_int_equal(pub_deliverlog_decode(&v, &p), 0);
		assert_int_equal(p.seq, *next);
		assert_int_equal(p.data[0], (uint8_t)*next);
		++*next;
		n++;
	}
	atomic_store(pub_deliverlog_slot(sc->dmap, gr->slot), gr->r.pos);
	if (atomic_load(&gr->r.ctl->writer_waiting))
		ring(sc->dspace);
	return n;
}

/* Two readers of g's log, a and b; a reads, b never does. 60 KB messages
 * until the log ends (the 4 MiB log holds about 70, then a subscriber
 * queue's worth waits, then END). Returns how many were published; a has
 * read every one the log holds, up to its END. */
static uint64_t reader_and_stopper(struct fixture *f, struct pubd_group *g, struct shm_client *a, struct shm_client *b,
				   struct glog_reader *ga, struct glog_reader *gb, uint64_t *na)
{
	bool ended = false;
	uint64_t seq;

	two_readers(f, a, b, ga, gb);
	for (seq = 0; seq < 200 && !ended; seq++) {
		fan_out(f, g, seq, 60000);
		turn(f);
		read_glog(a, ga, na, &ended);
	}
	assert_true(ended);
	return seq;
}

/* fchmod fails while this is set: pubd then cannot make a group log (its
 * readers' read-only file needs the mode, shm.c). */
static bool fail_fchmod;

int fchmod(int fd, mode_t mode)
{
	if (fail_fchmod) {
		errno = EPERM;
		return -1;
	}
	return (int)syscall(SYS_fchmod, fd, mode);
}

/* How many of pubd's log lines in text say a group log could not be
 * made; the last one in *last. */
static unsigned make_failed_lines(char *text, size_t cap, const char **last)
{
	unsigned n = 0;
	char *p = text;

	*last = NULL;
	text[cap - 1] = 0;
	while ((p = strstr(p, "cannot make its group log"))) {
		*last = p;
		n++;
		p++;
	}
	return n;
}

/* A group log pubd cannot make: every SUBSCRIBE still succeeds and its
 * subscriber gets copies in its deliver log; the reason is logged once a
 * period, and how many more failed in it once it is over, not a line a
 * SUBSCRIBE (a client could otherwise fill the journal). */
static void a_group_log_pubd_cannot_make_is_logged_once_a_period(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	struct shm_client sc[4];
	char text[8192] = {0};
	const char *last;
	uint32_t code;
	int err = memfd_create("stderr", MFD_CLOEXEC), saved = dup(STDERR_FILENO);
	unsigned i;
	ssize_t n;

	assert_true(err >= 0 && saved >= 0);
	fail_fchmod = true;
	assert_int_equal(dup2(err, STDERR_FILENO), STDERR_FILENO);
	for (i = 0; i < 4; i++) {
		shm_hello(f, &sc[i]);
		/* The last one a period after the first line. */
		if (i == 3)
			f->srv.log_glog.opened_ns -= PUBD_LOG_LIMIT_PERIOD_NS;
		assert_int_equal(group_req(f, sc[i].fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
		assert_null(g->glog);
	}
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	fail_fchmod = false;
	n = pread(err, text, sizeof(text) - 1, 0);
	assert_true(n > 0);
	/* The first; the count of the two after it, once the period is over;
	 * the fourth, the first of a new period. */
	assert_int_equal(make_failed_lines(text, sizeof(text), &last), 2);
	assert_non_null(strstr(text, "group open: cannot make its group log (Operation not permitted)"));
	assert_non_null(strstr(text, "2 more group logs that could not be made in 10 s"));
	assert_true(strstr(text, "2 more group logs") < last);
	/* Each subscriber gets the group's messages in its own deliver log. */
	fan_out(f, g, 1, 100);
	for (i = 0; i < 4; i++) {
		struct pub_deliverlog_piece p;
		struct pub_shmlog_view v;

		assert_int_equal(pub_shmlog_next(&sc[i].r, &v), 1);
		assert_int_equal(pub_deliverlog_decode(&v, &p), 0);
		assert_int_equal(p.seq, 1);
		shm_close(&sc[i]);
	}
	close(saved);
	close(err);
}

/* Two subscribers on shared memory read one group log: each message is
 * written there once (not into their deliver logs), counted delivered to
 * both, and neither can write to it. */
static void a_group_log_is_written_once_for_all_its_readers(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	struct shm_client a, b;
	struct glog_reader ga, gb;
	struct pub_shmlog_view v;
	uint64_t na = 0, nb = 0, seq;
	bool ended;

	two_readers(f, &a, &b, &ga, &gb);
	assert_int_equal(g->glog_live, 2);
	for (seq = 0; seq < 50; seq++)
		fan_out(f, g, seq, 1000);
	assert_int_equal(g->delivered, 100);
	/* The same bytes for both: one memfd. */
	assert_int_equal(pub_shmlog_next(&ga.r, &v), 1);
	assert_int_equal(pub_shmlog_next(&gb.r, &v), 1);
	assert_int_equal(read_glog(&a, &ga, &na, &ended), 50);
	assert_false(ended);
	assert_int_equal(read_glog(&b, &gb, &nb, &ended), 50);
	/* Their own deliver logs stayed empty. */
	assert_int_equal(pub_shmlog_next(&a.r, &v), 0);
	assert_int_equal(pub_shmlog_next(&b.r, &v), 0);
	assert_int_equal(pubd_ipc_queued_for(g->subs[0]) + pubd_ipc_queued_for(g->subs[1]), 0);
	munmap(ga.map, ga.len);
	munmap(gb.map, gb.len);
	shm_close(&a);
	shm_close(&b);
}

/* A reader that stops reading holds the log: pubd writes nothing over what
 * it has not read (it reads all it was given, intact), messages wait a
 * subscriber queue's worth, then both readers are moved off the log (END)
 * to their own deliver logs: the one that reads gets every message, the
 * other its policy's share, and the accounts add up. */
static void a_slow_reader_moves_every_reader_off_the_group_log(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	struct shm_client a, b;
	struct glog_reader ga, gb;
	uint64_t na = 0, nb = 0, seq, total = 0;
	bool ended_a = false, ended_b = false;
	unsigned i;

	f->cfg.subscriber_queue = 16;
	seq = total = reader_and_stopper(f, g, &a, &b, &ga, &gb, &na);
	assert_int_equal(g->glog_live, 0);
	/* b never read: all it was given is there, in order, then END. */
	read_glog(&b, &gb, &nb, &ended_b);
	assert_true(ended_b);
	assert_true(nb >= 10); /* the 1 MiB log held that many of 60 KB */
	/* The rest comes by the deliver logs, each from where its log ended. */
	for (; seq < total + 20; seq++)
		fan_out(f, g, seq, 100);
	total = seq;
	for (i = 0; i < 200 && na < total; i++) {
		turn(f);
		read_log(&a, &na);
	}
	assert_int_equal(na, total);
	for (i = 0; i < 200 && pubd_ipc_queued_for(g->subs[1]); i++) {
		turn(f);
		read_log(&b, &nb);
	}
	/* Every message delivered to each, or counted as dropped for b. */
	assert_int_equal(g->delivered + pubd_drops_msg_total(&g->sub_drops), 2 * total);
	assert_int_equal(g->subs[0]->delivered, total);
	/* Both have read to the END: at the next tick each gets the log back,
	 * read from a mark in its deliver log on (behind what that log still
	 * holds of the group: nothing is lost or reordered). */
	munmap(ga.map, ga.len);
	munmap(gb.map, gb.len);
	pubd_ipc_tick(&f->srv, 0);
	assert_int_equal(g->glog_live, 2);
	assert_int_equal(g->glog_returns, 2);
	given_back(f, &a, &ga);
	assert_true(next_is_mark(&a, "open"));
	for (; seq < total + 10; seq++)
		fan_out(f, g, seq, 100);
	assert_int_equal(read_glog(&a, &ga, &na, &ended_a), 10);
	assert_int_equal(na, total + 10);
	munmap(ga.map, ga.len);
	shm_close(&a);
	shm_close(&b);
}

/* As a reload that changes g's subscribe ACL (to this uid: the test's
 * clients stay allowed) does: g's group log is retired. Returns the old
 * config, for the test to put back. */
static const struct pubd_group_config *acl_change(struct fixture *f, struct pubd_group *g)
{
	static struct pubd_acl_entry e;
	static struct pubd_group_config changed;
	const struct pubd_group_config *old = g->cfg;

	e = (struct pubd_acl_entry){.kind = PUBD_ACL_UID, .id = getuid()};
	changed = *old;
	changed.subscribe = (struct pubd_acl){.entries = &e, .n = 1, .present = true};
	g->cfg = &changed;
	pubd_ipc_acl_changed(&f->srv, g, old);
	return old;
}

/* A subscribe ACL that changes retires the log: those who had it read to
 * its END, and a later subscriber gets a new memfd, never written to by
 * the old one (a mapping cannot be taken back). */
static void a_changed_subscribe_acl_retires_the_group_log(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	const struct pubd_group_config *gc;
	struct shm_client a, b;
	struct glog_reader ga, gb;
	uint64_t na = 0, nb = 5, seq;
	bool ended;

	shm_hello(f, &a);
	subscribe_glog(f, &a, "open", &ga);
	for (seq = 0; seq < 5; seq++)
		fan_out(f, g, seq, 100);
	gc = acl_change(f, g);
	assert_int_equal(read_glog(&a, &ga, &na, &ended), 5);
	assert_true(ended);
	shm_hello(f, &b);
	subscribe_glog(f, &b, "open", &gb);
	for (; seq < 10; seq++)
		fan_out(f, g, seq, 100);
	assert_int_equal(read_glog(&b, &gb, &nb, &ended), 5);
	/* The old log saw none of it. a has them in its deliver log; read to
	 * the old log's END, it gets the new log at the next tick, from a mark
	 * behind them. */
	assert_int_equal(read_glog(&a, &ga, &na, &ended), 0);
	assert_int_equal(read_log(&a, &na), 5);
	munmap(ga.map, ga.len);
	pubd_ipc_tick(&f->srv, 0);
	given_back(f, &a, &ga);
	assert_true(next_is_mark(&a, "open"));
	for (; seq < 13; seq++)
		fan_out(f, g, seq, 100);
	assert_int_equal(read_glog(&a, &ga, &na, &ended), 3);
	assert_int_equal(read_glog(&b, &gb, &nb, &ended), 3);
	g->cfg = gc;
	munmap(ga.map, ga.len);
	munmap(gb.map, gb.len);
	shm_close(&a);
	shm_close(&b);
}

/* The reader takes message 1 where it lies (its slot stays behind it). */
static void hold_message_one(struct glog_reader *gr, struct pub_deliverlog_piece *p)
{
	struct pub_shmlog_view v;

	assert_int_equal(pub_shmlog_next(&gr->r, &v), 1);
	assert_int_equal(pub_deliverlog_decode(&v, p), 0);
	assert_int_equal(p->seq, 1);
}

/* a and b read g's log; 8 messages of 3000 bytes there; the subscribe ACL
 * changes (the log is retired); b holds message 1 where it lies (*p).
 * Returns the group's config before the change, for the test to put back. */
static const struct pubd_group_config *b_holds_in_a_retired_log(struct fixture *f, struct pubd_group *g,
								struct shm_client *a, struct shm_client *b,
								struct glog_reader *ga, struct glog_reader *gb,
								struct pub_deliverlog_piece *p)
{
	const struct pubd_group_config *gc;
	uint64_t seq;

	two_readers(f, a, b, ga, gb);
	for (seq = 1; seq <= 8; seq++)
		fan_out(f, g, seq, 3000);
	gc = acl_change(f, g);
	hold_message_one(gb, p);
	return gc;
}

/* A retired group log is given back once nobody may read it: its pages
 * go from every mapping (a client that keeps one pins nothing of pubd's:
 * otherwise each retirement would let it pin one more log). Not while a
 * client that unsubscribed before its END may still hold a message there:
 * that one keeps it, whole, until its connection closes. */
static void a_retired_group_log_is_given_back(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	const struct pubd_group_config *gc;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct shm_client a, b;
	struct glog_reader ga, gb, ga2;
	struct pub_deliverlog_piece p;
	uint64_t na = 1, seq = 9;
	uint32_t code;
	bool ended;

	/* b takes its first message where it lies, and unsubscribes. */
	gc = b_holds_in_a_retired_log(f, g, &a, &b, &ga, &gb, &p);
	assert_int_equal(group_req(f, b.fd, PUB_FRAME_UNSUBSCRIBE, "open", &code), PUB_FRAME_OK);
	/* a reads to the END and gets the new log at the next tick. */
	assert_int_equal(read_glog(&a, &ga, &na, &ended), 8);
	assert_true(ended);
	pubd_ipc_tick(&f->srv, 0);
	given_back(f, &a, &ga2);
	assert_true(next_is_mark(&a, "open"));
	/* b may still hold its message: the old log stays, whole. */
	assert_true(resident_pages(gb.map, gb.len) >= 8 * 3000 / page);
	assert_true(all_bytes(p.data, p.len, 1));
	/* b gone: nobody may read the old log now, and its pages are out of
	 * every mapping of it (a's and b's here, which they kept). */
	close(b.fd);
	b.fd = -1;
	while (f->srv.nclients > 1)
		turn(f);
	assert_int_equal(resident_pages(gb.map, gb.len), 0);
	assert_int_equal(resident_pages(ga.map, ga.len), 0);
	/* The group's new log is untouched. */
	fan_out(f, g, seq, 100);
	assert_int_equal(read_glog(&a, &ga2, &na, &ended), 1);
	g->cfg = gc;
	munmap(ga.map, ga.len);
	munmap(gb.map, gb.len);
	munmap(ga2.map, ga2.len);
	shm_close(&a);
	shm_close(&b);
}

/* A reader pubd ends before it hangs up may still hold a message where it
 * lies in the group log (libpub's stays valid until its next pub_recv,
 * whatever became of the connection). pubd does not write over it for the
 * others: the log is retired (they read to its END and get a new one) and
 * kept, unwritten, until that client hangs up; then its pages go. */
static void a_reader_pubd_ends_keeps_the_message_it_holds(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	struct shm_client a, b;
	struct glog_reader ga, gb, gb2;
	struct pub_deliverlog_piece p;
	uint64_t nb = 1, seq;
	bool ended;
	unsigned i;

	two_readers(f, &a, &b, &ga, &gb);
	for (seq = 1; seq <= 8; seq++)
		fan_out(f, g, seq, 3000);
	hold_message_one(&ga, &p); /* a's slot stays behind message 1 */
	assert_int_equal(read_glog(&b, &gb, &nb, &ended), 8);
	/* pubd ends a (a record no writer writes). */
	memcpy(a.pmap + PUB_SHMLOG_CTL_LEN, &(uint64_t){(uint64_t)7 << 32 | 48}, 8);
	ring(a.pdoor);
	while (f->srv.nclients > 1)
		turn(f);
	assert_int_equal(f->srv.nlingering, 1);
	assert_null(g->glog);
	/* b reads to the END and gets a new log; a log's worth and more of
	 * messages go there, read by b. */
	assert_int_equal(read_glog(&b, &gb, &nb, &ended), 0);
	assert_true(ended);
	pubd_ipc_tick(&f->srv, 0);
	given_back(f, &b, &gb2);
	assert_true(next_is_mark(&b, "open"));
	for (i = 0; i < 2 * gb.len / 60000 + 2; i++, seq++) {
		fan_out(f, g, seq, 60000);
		turn(f);
		assert_int_equal(read_glog(&b, &gb2, &nb, &ended), 1);
	}
	/* a's message is whole. Once a hangs up, the old log's pages go. */
	assert_true(all_bytes(p.data, p.len, 1));
	close(a.fd);
	a.fd = -1;
	while (f->srv.nlingering)
		turn(f);
	assert_int_equal(resident_pages(gb.map, gb.len), 0);
	munmap(ga.map, ga.len);
	munmap(gb.map, gb.len);
	munmap(gb2.map, gb2.len);
	shm_close(&a);
	shm_close(&b);
}

/* A reader of a log already retired (an ACL change) that pubd then ends
 * through a protocol error, before it read to the END, may still hold a
 * message there: the log is kept, whole, until that client hangs up (not
 * given back when pubd ends it), then its pages go. */
static void a_retired_log_stays_whole_for_a_reader_ended_by_an_error(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	const struct pubd_group_config *gc;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct shm_client a, b;
	struct glog_reader ga, gb, ga2;
	struct pub_deliverlog_piece p;
	uint64_t na = 1, seq;
	bool ended;

	gc = b_holds_in_a_retired_log(f, g, &a, &b, &ga, &gb, &p);
	/* pubd ends b (a record no writer writes). */
	memcpy(b.pmap + PUB_SHMLOG_CTL_LEN, &(uint64_t){(uint64_t)7 << 32 | 48}, 8);
	ring(b.pdoor);
	while (f->srv.nclients > 1)
		turn(f);
	assert_int_equal(f->srv.nlingering, 1);
	/* a reads to the END and goes on in the group's new log. */
	assert_int_equal(read_glog(&a, &ga, &na, &ended), 8);
	assert_true(ended);
	pubd_ipc_tick(&f->srv, 0);
	given_back(f, &a, &ga2);
	assert_true(next_is_mark(&a, "open"));
	for (seq = 9; seq <= 8 + 2 * gb.len / 60000 + 2; seq++) {
		fan_out(f, g, seq, 60000);
		turn(f);
		assert_int_equal(read_glog(&a, &ga2, &na, &ended), 1);
	}
	/* b's message is whole, and the old log too, until b hangs up. */
	assert_true(all_bytes(p.data, p.len, 1));
	assert_true(resident_pages(gb.map, gb.len) >= 8 * 3000 / page);
	close(b.fd);
	b.fd = -1;
	while (f->srv.nlingering)
		turn(f);
	assert_int_equal(resident_pages(gb.map, gb.len), 0);
	assert_int_equal(resident_pages(ga.map, ga.len), 0);
	g->cfg = gc;
	munmap(ga.map, ga.len);
	munmap(gb.map, gb.len);
	munmap(ga2.map, ga2.len);
	shm_close(&a);
	shm_close(&b);
}

/* What waits in group logs counts against each reader's subscriber queue:
 * one reader of two groups that never reads makes pubd hold one queue's
 * worth for it, not one per group. Past it the log ends, its reader goes
 * on from its own deliver log, and every message is delivered, dropped by
 * the policy or still queued. */
static void a_reader_of_two_group_logs_is_held_one_queue(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g[2] = {pubd_groups_by_name(&f->groups, "open", 4),
				   pubd_groups_by_name(&f->groups, "closed", 6)};
	const unsigned queue = 40, published = 100;
	const size_t len = 60000;
	struct glog_reader gr[2];
	struct pubd_group_log_info info;
	struct pubd_client_info ci;
	struct shm_client a;
	uint64_t next[2] = {0, 0};
	unsigned i, k, waiting, most = 0;
	bool ended;

	f->cfg.subscriber_queue = queue;
	shm_hello(f, &a);
	subscribe_glog(f, &a, "open", &gr[0]);
	subscribe_glog(f, &a, "closed", &gr[1]);
	for (i = 0; i < published; i++) {
		for (k = 0; k < 2; k++)
			fan_out(f, g[k], i, len);
		turn(f);
		for (waiting = 0, k = 0; k < 2; k++) {
			pubd_ipc_group_log_info(g[k], &info);
			waiting += info.waiting;
			/* What waits in the log counts as queued for its reader. */
			if (g[k]->glog_live)
				assert_true(pubd_ipc_queued_for(g[k]->subs[0]) >= info.waiting);
		}
		most = waiting > most ? waiting : most;
		/* pubctl clients: queued is the client's own queue and its waits. */
		pubd_ipc_client_info(g[0]->subs[0]->client, &ci);
		assert_int_equal(ci.queued, g[0]->subs[0]->client->out_delivers + waiting);
	}
	/* Without the per-client count: up to a queue (and one) in each. */
	assert_true(most <= queue + 2);
	for (k = 0; k < 2; k++) {
		assert_int_equal(g[k]->glog_ends, 1);
		assert_int_equal(g[k]->glog_live, 0);
		/* The log holds what it was given, whole and in order, then END. */
		read_glog(&a, &gr[k], &next[k], &ended);
		assert_true(ended);
		assert_true(next[k] >= 10);
		assert_int_equal(g[k]->delivered + pubd_drops_msg_total(&g[k]->sub_drops) +
					 pubd_ipc_queued_for(g[k]->subs[0]),
				 published);
		munmap(gr[k].map, gr[k].len);
	}
	shm_close(&a);
}

/* A reader moved off the log that does not read up to the END within
 * limits.group_log_drain_ms is given up on: the log is retired, the reader
 * that did read to the END gets a new one (a fresh memfd, from a mark), and
 * the stuck one's client none again, its messages coming in its deliver
 * log, all counted. Before, the stuck one kept every reader on copies for
 * as long as it stayed connected. */
static void a_stuck_reader_is_given_up_on(void **state)
{
	struct fixture *f = *state;
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);
	struct shm_client a, b, c;
	struct glog_reader ga, gb, ga2, gc;
	struct pubd_group_log_info info;
	uint64_t na = 0, nb = 0, nc, seq, total, t0;
	bool ended_a = false, ended_b = false;
	unsigned i;

	f->cfg.subscriber_queue = 16;
	f->cfg.group_log_drain_ms = 2000;
	seq = total = reader_and_stopper(f, g, &a, &b, &ga, &gb, &na);
	t0 = pubd_now_ns();
	/* a has read to the END; b has read nothing. Within the drain time
	 * nobody gets the log: b may still read what is there. */
	pubd_ipc_tick(&f->srv, t0 + 1000000000ull);
	pubd_ipc_group_log_info(g, &info);
	assert_int_equal(info.draining, 1);
	assert_int_equal(g->glog_live, 0);
	assert_int_equal(g->glog_abandoned, 0);
	/* Past it: given up on b; a gets a new log (after its deliver log's
	 * messages, from a mark), b's client none. */
	for (i = 0; i < 200 && na < total; i++) {
		turn(f);
		read_log(&a, &na);
	}
	assert_int_equal(na, total);
	pubd_ipc_tick(&f->srv, t0 + 2100000000ull);
	assert_int_equal(g->glog_abandoned, 1);
	assert_int_equal(g->glog_live, 1);
	assert_true(g->subs[0]->glog_live);
	assert_false(g->subs[1]->glog_live);
	given_back(f, &a, &ga2);
	assert_true(ga2.map != ga.map);
	assert_true(next_is_mark(&a, "open"));
	for (; seq < total + 10; seq++)
		fan_out(f, g, seq, 100);
	turn(f);
	assert_int_equal(read_glog(&a, &ga2, &na, &ended_a), 10);
	/* b, let go, reads the old log to its END (pubd wrote nothing more
	 * there) and finds the rest in its deliver log; no log for it again. */
	read_glog(&b, &gb, &nb, &ended_b);
	assert_true(ended_b);
	for (i = 0; i < 400 && pubd_ipc_queued_for(g->subs[1]); i++) {
		turn(f);
		read_log(&b, &nb);
	}
	pubd_ipc_tick(&f->srv, t0 + 3200000000ull);
	assert_false(g->subs[1]->glog_live);
	assert_int_equal(g->glog_live, 1);
	/* A newcomer gets the new log at once. */
	shm_hello(f, &c);
	subscribe_glog(f, &c, "open", &gc);
	nc = seq;
	fan_out(f, g, seq++, 100);
	assert_int_equal(read_glog(&c, &gc, &nc, &ended_b), 1);
	/* Every message delivered to a and b or counted as dropped for b. */
	assert_int_equal(g->subs[0]->delivered, total + 11);
	assert_int_equal(g->subs[1]->delivered + pubd_drops_msg_total(&g->subs[1]->drops) +
				 pubd_ipc_queued_for(g->subs[1]),
			 total + 11);
	munmap(ga.map, ga.len);
	munmap(gb.map, gb.len);
	munmap(ga2.map, ga2.len);
	munmap(gc.map, gc.len);
	shm_close(&a);
	shm_close(&b);
	shm_close(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(the_publish_log_carries_messages_checked, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_message_in_pieces_is_published_whole, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_reloaded_acl_reaches_the_next_record, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_bad_record_ends_only_its_client, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_hang_up_mid_record_costs_that_record_only, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_hung_up_writer_that_goes_on_is_not_read_for_ever, setup_own_logs,
						teardown),
		cmocka_unit_test_setup_teardown(unread_replies_pause_the_publish_log, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_delivery_goes_straight_into_the_log_unless_others_wait,
						setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(deliveries_go_through_the_deliver_log, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_message_of_a_quarter_of_the_log_is_one_record, setup_own_logs,
						teardown),
		cmocka_unit_test_setup_teardown(replies_pass_a_full_deliver_log, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_large_message_is_published_from_its_record, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_held_message_is_copied_when_the_turn_ends, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_client_gone_leaves_its_held_messages_whole, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_client_gone_leaves_nothing_pinned, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_pinned_message_waits_for_its_send, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_client_gone_keeps_its_log_for_a_pinned_send, setup_own_logs,
						teardown),
		cmocka_unit_test_setup_teardown(every_ring_wakes_pubd_without_a_read, setup, teardown),
		cmocka_unit_test_setup_teardown(a_polled_log_is_read_without_a_ring, setup_own_logs, teardown),
		cmocka_unit_test_setup_teardown(a_group_log_is_written_once_for_all_its_readers, setup, teardown),
		cmocka_unit_test_setup_teardown(a_group_log_pubd_cannot_make_is_logged_once_a_period, setup, teardown),
		cmocka_unit_test_setup_teardown(a_slow_reader_moves_every_reader_off_the_group_log, setup, teardown),
		cmocka_unit_test_setup_teardown(a_changed_subscribe_acl_retires_the_group_log, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_of_two_group_logs_is_held_one_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(a_retired_group_log_is_given_back, setup, teardown),
		cmocka_unit_test_setup_teardown(a_reader_pubd_ends_keeps_the_message_it_holds, setup, teardown),
		cmocka_unit_test_setup_teardown(a_retired_log_stays_whole_for_a_reader_ended_by_an_error, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_stuck_reader_is_given_up_on, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
