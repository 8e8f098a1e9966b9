/* SPDX-License-Identifier: MIT */
/*
 * A hostile client of the direct path (common/directlog.h; the hostile
 * tier's tool): it says HELLO with PUB_HELLO_F_SHM | PUB_HELLO_F_DIRECT as
 * libpub does, takes its seven fds (publish log, deliver log, wake page),
 * and then abuses what the direct path hands it.
 *
 *   hostile_direct garbage   -s SOCK -g G --kind K [--other G2] [--ready F
 *                            --go F]  a direct log of G, one record no
 *                              libpub writes (K: len, lap, group (a message
 *                              of G2), reqid, piece), pubd and every reader
 *                              rung (with --ready: once the file --go
 *                              names exists); K firstpiece: a message's
 *                              first piece, then the writer gone
 *   hostile_direct stall     -s SOCK -g G --seconds S --ready F --go F
 *                            [--stop F]  a direct log of G, a message,
 *                              then a record that only the readers are
 *                              rung for, kept S seconds or until the file
 *                              --stop names exists (see mode_stall)
 *   hostile_direct scribble  -s SOCK -g G --seconds S [--ready F --go F]
 *                              direct logs of G, one after the other, each
 *                              one's ring or control page scribbled over
 *                              in its own way, S seconds in all (see
 *                              mode_scribble)
 *   hostile_direct readonly  -s SOCK -g G [--seconds S]
 *                              subscribed to G, waits up to S seconds for
 *                              a publisher's DIRECT_READ file, then tries
 *                              every way it knows to write through it
 *   hostile_direct wakelies  -s SOCK -g G --seconds S [--ready F] [--stop F]
 *                              subscribed to G, lies in its wake page for
 *                              S seconds, or until the file --stop names
 *                              exists (see mode_wakelies)
 *   hostile_direct revoked   -s SOCK -g G --seconds S [--ready F] [--stop F]
 *                              subscribed to G, keeps every direct log it
 *                              is given and reads it for S seconds (or
 *                              until the file --stop names exists), after
 *                              its subscription is ended too (see
 *                              mode_revoked)
 *   hostile_direct slots     -s SOCK -g G --kind keep|release --seconds S
 *                            [--ready F] [--stop F]  subscribed to G, prints
 *                              the slot of each direct log it is given and
 *                              never reads one; with release, it lets a log
 *                              go (PUB_DIRECT_SLOT_RELEASED in its slot's
 *                              word) once pubd says it is gone (see
 *                              mode_slots)
 *   hostile_direct unheeding -s SOCK -g G --seconds S --after N [--ready F]
 *                            [--kind flood|pieces] [--go F]  a direct log of
 *                              G, written on and rung for up to S seconds,
 *                              and N more messages after pubd said it is
 *                              gone (see mode_unheeding)
 *   hostile_direct deaf      -s SOCK -g G --go F [--ready F]  a direct log
 *                              of G, its socket unread until F exists
 *                              (and wakers_seen faked); then prints the
 *                              fds that came meanwhile (see mode_deaf)
 *   hostile_direct churn     -s SOCK -g G --after N  subscribes to G and
 *                              unsubscribes, N times
 *   hostile_direct deafsub   -s SOCK -g G --go F [--ready F]  subscribed
 *                              to G, its socket unread until F exists;
 *                              then prints the fds that came meanwhile
 *   hostile_direct writers   -s SOCK -g G --after N  N connections one
 *                              after the other, each opening a direct log
 *                              of G and hanging up
 *
 * Each prints what it did and what pubd answered, in lines the hostile
 * cases (cases_direct.sh) read.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hostile_util.h"
#include "deliverlog_format.h"
#include "directlog.h"
#include "proto.h"
#include "shmlog.h"

#define FDQ	   512
#define MAX_LOGS   32
#define MAX_WAKERS 64

/* A direct log handed to us: to write (DIRECT_LOG) or to read (DIRECT_READ). */
struct dlog {
	uint32_t id, cap, max_record, slot;
	uint64_t source, start;
	int fd, doorbell, space; /* the last two: a writer's only */
	uint8_t *map;
	size_t len;
	bool gone; /* PUB_SHM_DIRECT_GONE said so */
};

/* A reader of our direct log that pubd told us to wake. */
struct waker {
	uint32_t peer;
	int page_fd, bell;
};

struct conn {
	int sock;
	uint8_t rbuf[1 << 17];
	size_t have, consume;
	int fdq[FDQ];
	unsigned fdh, fdt;
	struct pub_msg_welcome welcome;
	int plog[3], dlog[3], wake_fd;
	uint8_t *wake;
	uint32_t next_req;
	/* What pubd said, as frames came. */
	struct dlog w; /* our direct log (one group) */
	bool have_w;
	struct dlog r[MAX_LOGS]; /* logs we read */
	unsigned nr;
	struct waker wakers[MAX_WAKERS];
	unsigned nwakers;
	uint32_t errors, last_error, first_error;
	double first_error_at, closed_at;
	bool closed;
};

static void die(const char *what)
{
	fprintf(stderr, "hostile_direct: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Wait (up to 30 s) for the file `go` names to exist: the case's word. */
static void await_go(const char *go)
{
	for (int i = 0; go && i < 3000 && access(go, F_OK) != 0; i++)
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
}

static void ring_fd(int fd)
{
	uint64_t one = 1;

	(void)!write(fd, &one, sizeof(one));
}

static void drain_fd(int fd)
{
	uint64_t v;

	(void)!read(fd, &v, sizeof(v));
}

/* ---- frames ---- */

static unsigned fds_of(uint32_t kind)
{
	switch (kind) {
	case PUB_SHM_PUBLISH_LOG:
	case PUB_SHM_DELIVER_LOG:
	case PUB_SHM_DIRECT_LOG:
		return 3;
	case PUB_SHM_GROUP_LOG:
	case PUB_SHM_WAKE_PAGE:
	case PUB_SHM_DIRECT_READ:
		return 1;
	case PUB_SHM_WAKER:
		return 2;
	default:
		return 0;
	}
}

static int fd_pop(struct conn *c)
{
	if (c->fdh == c->fdt)
		return -1;
	return c->fdq[c->fdh++ % FDQ];
}

/* Take what the socket has (waiting up to ms for it): 1, 0 on timeout, -1
 * at its end. The fds that came with it queue up, in order: each SHM frame
 * takes its own from the front (they come with its first byte, or before). */
static int take_in(struct conn *c, int ms)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 16)];
	} ctl;
	struct pollfd p = {.fd = c->sock, .events = POLLIN};
	struct iovec iov = {.iov_base = c->rbuf + c->have, .iov_len = sizeof(c->rbuf) - c->have};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	ssize_t n;

	if (c->closed)
		return -1;
	if (poll(&p, 1, ms) != 1)
		return 0;
	n = recvmsg(c->sock, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0) {
		c->closed = true;
		c->closed_at = now_s();
		return -1;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
			memcpy(&c->fdq[c->fdt++ % FDQ], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	c->have += (size_t)n;
	return 1;
}

struct frame {
	uint8_t type;
	uint32_t len;
	const uint8_t *body;
	struct pub_msg_shm shm; /* SHM frames: decoded; shm.group points at group */
	char group[PUB_PROTO_NAME_MAX + 1];
	int fds[3];
	struct pub_msg_error err;
	uint32_t ok_req;
};

/* The next whole frame: 1 (valid until the next call), 0 when none came
 * within ms, -1 when the connection ended. */
static int next_frame(struct conn *c, int ms, struct frame *f)
{
	uint8_t type;
	uint32_t len;
	const uint8_t *body;
	int r;

	if (c->consume) {
		memmove(c->rbuf, c->rbuf + c->consume, c->have - c->consume);
		c->have -= c->consume;
		c->consume = 0;
	}
	for (;;) {
		r = pub_proto_frame_peek(c->rbuf, c->have, sizeof(c->rbuf) - PUB_PROTO_HDR_LEN, &type, &len, &body,
					 NULL);
		if (r < 0) {
			errno = EPROTO;
			die("a frame from pubd this tool cannot read");
		}
		if (r == 1)
			break;
		r = take_in(c, ms);
		if (r <= 0)
			return r;
	}
	memset(f, 0, sizeof(*f));
	f->type = type;
	f->len = len;
	f->body = body;
	f->fds[0] = f->fds[1] = f->fds[2] = -1;
	c->consume = PUB_PROTO_HDR_LEN + len;
	if (type == PUB_FRAME_SHM) {
		if (pub_proto_dec_shm(body, len, &f->shm) < 0) {
			/* Not this tool's protocol (a pubd of another tree): its
			 * fds could not be told apart. */
			errno = EPROTO;
			die("an SHM frame this tool cannot decode");
		}
		if (f->shm.group.len)
			memcpy(f->group, f->shm.group.ptr, f->shm.group.len);
		f->shm.group.ptr = f->group;
		for (unsigned i = 0; i < fds_of(f->shm.kind); i++)
			f->fds[i] = fd_pop(c);

	} else if (type == PUB_FRAME_ERROR && pub_proto_dec_error(body, len, &f->err) == 0) {
		if (!c->errors++) {
			c->first_error = f->err.code;
			c->first_error_at = now_s();
		}
		c->last_error = f->err.code;
	} else if (type == PUB_FRAME_OK) {
		struct pub_msg_ok ok;

		if (pub_proto_dec_ok(body, len, &ok) == 0)
			f->ok_req = ok.req_id;
	}
	return 1;
}

static struct dlog *find_r(struct conn *c, uint32_t id)
{
	for (unsigned i = 0; i < c->nr; i++)
		if (c->r[i].id == id)
			return &c->r[i];
	return NULL;
}

static void close_fds(const struct frame *f)
{
	for (unsigned i = 0; i < 3; i++)
		if (f->fds[i] >= 0)
			close(f->fds[i]);
}

/* What a frame of the direct path tells us, kept in c. */
static void note(struct conn *c, const struct frame *f)
{
	struct dlog *d;

	if (f->type != PUB_FRAME_SHM)
		return;
	switch (f->shm.kind) {
	case PUB_SHM_DIRECT_LOG:
		if (c->have_w) {
			close_fds(f);
			return;
		}
		c->w = (struct dlog){.id = f->shm.log_id,
				     .cap = f->shm.capacity,
				     .max_record = f->shm.max_record,
				     .source = f->shm.source,
				     .fd = f->fds[0],
				     .doorbell = f->fds[1],
				     .space = f->fds[2]};
		c->have_w = true;
		return;
	case PUB_SHM_WAKER:
		if (c->nwakers == MAX_WAKERS) {
			close_fds(f);
			return;
		}
		c->wakers[c->nwakers++] = (struct waker){.peer = f->shm.peer, .page_fd = f->fds[0], .bell = f->fds[1]};
		return;
	case PUB_SHM_DIRECT_READ:
		if (c->nr == MAX_LOGS || find_r(c, f->shm.log_id)) {
			close_fds(f);
			return;
		}
		c->r[c->nr++] = (struct dlog){.id = f->shm.log_id,
					      .cap = f->shm.capacity,
					      .max_record = f->shm.max_record,
					      .slot = f->shm.slot,
					      .start = f->shm.start,
					      .source = f->shm.source,
					      .fd = f->fds[0],
					      .doorbell = -1,
					      .space = -1};
		return;
	case PUB_SHM_DIRECT_GONE:
		if ((d = find_r(c, f->shm.log_id)))
			d->gone = true;
		if (c->have_w && c->w.id == f->shm.log_id)
			c->w.gone = true;
		return;
	default:
		close_fds(f);
		return;
	}
}

/* Read frames, noting them, for up to ms in all; stop at the OK or ERROR
 * of req (0: at none). Returns the OK's 1, the ERROR's -code, 0 at the
 * deadline, -1000 at the connection's end. */
static int pump(struct conn *c, uint32_t req, int ms)
{
	double end = now_s() + ms / 1000.0;
	struct frame f;
	int r, left;

	for (;;) {
		left = (int)((end - now_s()) * 1000);
		r = next_frame(c, left > 0 ? left : 0, &f);
		if (r < 0)
			return -1000;
		if (r == 0)
			return 0;
		note(c, &f);
		if (req && f.type == PUB_FRAME_OK && f.ok_req == req)
			return 1;
		if (req && f.type == PUB_FRAME_ERROR && f.err.req_id == req)
			return -(int)f.err.code;
	}
}

static void send_all(struct conn *c, const void *p, size_t n)
{
	if (send(c->sock, p, n, MSG_NOSIGNAL) != (ssize_t)n)
		die("send");
}

static uint32_t group_req(struct conn *c, uint8_t type, const char *group)
{
	uint8_t f[PUB_PROTO_HDR_LEN + 4 + 1 + PUB_PROTO_NAME_MAX];
	uint32_t req = ++c->next_req;
	long n = pub_proto_enc_group_req(f, sizeof(f), type, req, group, strlen(group));

	if (n <= 0)
		die("encoding a request");
	send_all(c, f, (size_t)n);
	return req;
}

/* Connect and say HELLO as libpub does with the direct path on: WELCOME,
 * then the publish log's, the deliver log's and the wake page's frames. */
static void conn_open(struct conn *c, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint8_t hello[64];
	struct frame f;
	unsigned got = 0;
	long n;

	memset(c, 0, sizeof(*c));
	c->wake_fd = -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->sock < 0 || connect(c->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	n = pub_proto_enc_hello(hello, sizeof(hello), PUB_HELLO_F_SHM | PUB_HELLO_F_DIRECT, "hostile-direct", 14);
	if (n <= 0)
		die("hello");
	send_all(c, hello, (size_t)n);
	while (got < 4) {
		if (next_frame(c, 5000, &f) != 1)
			die("no WELCOME and logs");
		if (f.type == PUB_FRAME_WELCOME) {
			if (pub_proto_dec_welcome(f.body, f.len, &c->welcome) < 0 ||
			    !(c->welcome.flags & PUB_WELCOME_F_DIRECT)) {
				errno = ENOTSUP;
				die("pubd offered no direct path");
			}
			got++;
			continue;
		}
		if (f.type != PUB_FRAME_SHM)
			continue;
		if (f.shm.kind == PUB_SHM_PUBLISH_LOG)
			memcpy(c->plog, f.fds, sizeof(c->plog));
		else if (f.shm.kind == PUB_SHM_DELIVER_LOG)
			memcpy(c->dlog, f.fds, sizeof(c->dlog));
		else if (f.shm.kind == PUB_SHM_WAKE_PAGE)
			c->wake_fd = f.fds[0];
		else
			continue;
		got++;
	}
	c->wake = mmap(NULL, PUB_WAKE_PAGE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, c->wake_fd, 0);
	if (c->wake == MAP_FAILED)
		die("mapping the wake page");
}

/* Ask for a direct log of group: pubd's answer (1: OK), the log mapped
 * read-write (and its wakers noted). */
static int open_direct(struct conn *c, const char *group)
{
	int r = pump(c, group_req(c, PUB_FRAME_DIRECT, group), 5000);

	if (r != 1 || !c->have_w)
		return r == 1 ? -1 : r;
	c->w.len = pub_shmlog_map_len(c->w.cap);
	c->w.map = mmap(NULL, c->w.len, PROT_READ | PROT_WRITE, MAP_SHARED, c->w.fd, 0);
	if (c->w.map == MAP_FAILED)
		die("mapping the direct log");
	return 1;
}

/* open_direct, and a writer on the log (overwrite: it never waits for
 * pubd; else as libpub's). False, said on stdout as who's, without one. */
static bool open_writer(struct conn *c, const char *group, const char *who, bool waits, struct pub_shmlog_writer *w)
{
	int r = open_direct(c, group);

	if (r != 1) {
		printf("%s: pubd gave no direct log of %s (%d)\n", who, group, r);
		return false;
	}
	if (pub_shmlog_writer_init(w, c->w.map, c->w.len, waits) < 0)
		die("the direct log");
	return true;
}

static unsigned long inode_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/* Wake every reader pubd named and pubd itself, whatever they said. */
static void ring_all(const struct conn *c)
{
	for (unsigned i = 0; i < c->nwakers; i++)
		ring_fd(c->wakers[i].bell);
	ring_fd(c->w.doorbell);
}

/* Commit one message record of group at the writer's tail, as libpub does. */
static bool put_message(struct pub_shmlog_writer *w, const char *group, uint64_t source, uint64_t seq, const void *data,
			uint32_t len)
{
	uint8_t glen = (uint8_t)strlen(group);
	uint8_t *b = pub_shmlog_claim(w, PUB_SHMLOG_MSG, 0, len, PUB_DELIVERLOG_HEAD + glen + len);

	if (!b)
		return false;
	memcpy(b + pub_deliverlog_put_head(b, source, seq, group, glen), data, len);
	pub_shmlog_commit(w);
	return true;
}

/* One message of total bytes in pieces, as libpub writes one too large for
 * a record (its seq in the first 8 bytes, the rest zeros); the ring must
 * have room for all of it. False when it has not. */
static bool put_pieces(struct pub_shmlog_writer *w, const char *group, uint64_t seq, uint32_t total)
{
	uint8_t glen = (uint8_t)strlen(group);
	uint32_t per = pub_shmlog_max_body(w) - PUB_DELIVERLOG_HEAD - glen, off = 0;

	/* Each piece's header and alignment, and a pad at the wrap (as libpub
	 * counts a message's bytes before it writes one). */
	if (pub_shmlog_room(w) <
	    (uint64_t)(total / per + 1) * (PUB_SHMLOG_HDR_LEN + PUB_DELIVERLOG_HEAD + PUB_SHMLOG_ALIGN) + total + glen +
		    w->max_record + PUB_SHMLOG_ALIGN)
		return false;
	while (off < total) {
		uint32_t n = total - off < per ? total - off : per;
		uint8_t g = off ? 0 : glen;
		uint8_t *b = pub_shmlog_claim(w, PUB_SHMLOG_MSG, off + n < total ? PUB_SHMLOG_F_MORE : 0, total,
					      PUB_DELIVERLOG_HEAD + g + n);
		uint32_t h;

		if (!b)
			die("no room for a piece");
		h = pub_deliverlog_put_head(b, 0, seq, group, g);
		memset(b + h, 0, n);
		if (!off)
			memcpy(b + h, &seq, sizeof(seq));
		pub_shmlog_commit(w);
		off += n;
	}
	return true;
}

/* What pubd says within ms: its first ERROR's code, and whether it hung up
 * (after that ERROR, within ms again). */
static void answer(struct conn *c, int ms, uint32_t *code, bool *closed)
{
	uint32_t before = c->errors;
	double end = now_s() + ms / 1000.0;

	*code = 0;
	while (!c->closed && c->errors == before && now_s() < end)
		pump(c, 0, 10);
	if (c->errors != before) {
		*code = c->last_error;
		end = now_s() + ms / 1000.0;
	}
	while (!c->closed && now_s() < end)
		pump(c, 0, 10);
	*closed = c->closed;
}

/* ---- garbage ---- */

/*
 * One record no libpub writes, committed at the log's start, then pubd and
 * every reader rung: a length above max_record (len), a lap the log is not
 * on (lap), a message of another group (group), a PUB_SYNC req_id above
 * 32 bits in the source field (reqid), a message's later piece with no
 * first (piece). pubd must end this client (a protocol error) and no other.
 * Or (firstpiece) a well-formed first piece of a message in pieces, after
 * which the writer is gone, as one that crashes mid-message.
 */
static int mode_garbage(struct conn *c, const char *group, const char *kind, const char *other, const char *ready_path,
			const char *go)
{
	struct pub_shmlog_writer w;
	struct pub_shmlog_rec *rec;
	const uint8_t payload[8] = "GGGGGGGG";
	bool closed, ok = true;
	char who[64];
	uint32_t code;
	uint8_t *b;

	snprintf(who, sizeof(who), "garbage %s", kind);
	if (!open_writer(c, group, who, false, &w))
		return 1;
	if (ready_path) {
		/* The case looks at the readers first. */
		printf("garbage %s: direct log inode %lu\n", kind, inode_of(c->w.fd));
		ready(ready_path);
		await_go(go);
	}
	rec = (struct pub_shmlog_rec *)(c->w.map + PUB_SHMLOG_CTL_LEN);
	if (!strcmp(kind, "len")) {
		rec->type = PUB_SHMLOG_MSG;
		atomic_store(&rec->commit, (uint64_t)1 << 32 | (w.max_record + 16));
	} else if (!strcmp(kind, "lap")) {
		rec->type = PUB_SHMLOG_MSG;
		atomic_store(&rec->commit, (uint64_t)9 << 32 | 64);
	} else if (!strcmp(kind, "group")) {
		ok = put_message(&w, other, 0, 0, payload, sizeof(payload));
	} else if (!strcmp(kind, "reqid")) {
		ok = put_message(&w, group, UINT64_C(1) << 40, 0, payload, sizeof(payload));
	} else if (!strcmp(kind, "firstpiece")) {
		/* Well-formed, but its rest never comes: pubd waits for it. */
		uint8_t glen = (uint8_t)strlen(group);

		b = pub_shmlog_claim(&w, PUB_SHMLOG_MSG, PUB_SHMLOG_F_MORE, 100000,
				     PUB_DELIVERLOG_HEAD + glen + sizeof(payload));
		ok = b != NULL;
		if (b) {
			memcpy(b + pub_deliverlog_put_head(b, 0, 0, group, glen), payload, sizeof(payload));
			pub_shmlog_commit(&w);
		}
	} else if (!strcmp(kind, "piece")) {
		b = pub_shmlog_claim(&w, PUB_SHMLOG_MSG, 0, 1000, PUB_DELIVERLOG_HEAD + sizeof(payload));
		ok = b != NULL;
		if (b) {
			memcpy(b + pub_deliverlog_put_head(b, 0, 0, NULL, 0), payload, sizeof(payload));
			pub_shmlog_commit(&w);
		}
	} else {
		fprintf(stderr, "hostile_direct: no such kind: %s\n", kind);
		return 2;
	}
	if (!ok)
		die("no room for the record");
	ring_all(c);
	if (!strcmp(kind, "firstpiece")) {
		/* ...and gone mid-message, as a writer that crashes. */
		pump(c, 0, 200);
		printf("garbage %s: direct log inode %lu, %u readers rung; gone mid-message\n", kind, inode_of(c->w.fd),
		       c->nwakers);
		return 0;
	}
	answer(c, 5000, &code, &closed);
	printf("garbage %s: direct log inode %lu, %u readers rung; pubd answered error %u (%s), connection %s\n", kind,
	       inode_of(c->w.fd), c->nwakers, code, pub_proto_err_name(code), closed ? "closed" : "open");
	return code == PUB_ERR_PROTO && closed ? 0 : 1;
}

/* ---- stall ---- */

/*
 * A record only the readers are rung for: one message (pubd and the
 * readers rung, each takes it), then, once the file `go` names exists, a
 * record with a bad lap right after it, the claim a lap and 16 bytes past
 * the message the readers took (so not past where they stand), and only
 * the readers rung. Kept so, our socket quiet, for `seconds` or until the
 * file `stop` names exists; then pubd is rung too, and must end us. A
 * reader must drop the log at once, not loop on it.
 */
static int mode_stall(struct conn *c, const char *group, double seconds, const char *ready_path, const char *go,
		      const char *stop)
{
	const uint8_t payload[8] = "SSSSSSSS";
	struct pub_shmlog_writer w;
	struct pub_shmlog_rec *rec;
	uint64_t taken;
	uint32_t code;
	bool closed;
	double t0;

	if (!open_writer(c, group, "stall", false, &w))
		return 1;
	taken = w.tail;
	if (!put_message(&w, group, 0, 0, payload, sizeof(payload)))
		die("no room for the message");
	ring_all(c);
	printf("stall: direct log inode %lu of %s, %u readers, a message at %llu\n", inode_of(c->w.fd), group,
	       c->nwakers, (unsigned long long)taken);
	ready(ready_path);
	await_go(go);
	rec = (struct pub_shmlog_rec *)(c->w.map + PUB_SHMLOG_CTL_LEN + (w.tail & (w.cap - 1)));
	t0 = now_s();
	while (now_s() - t0 < seconds && !(stop && access(stop, F_OK) == 0) && !c->closed) {
		rec->type = PUB_SHMLOG_MSG;
		atomic_store(&rec->commit, (uint64_t)(w.tail / w.cap + 9) << 32 | 64);
		atomic_store(&w.ctl->claim, taken + w.cap + 16);
		if (now_s() - t0 < 0.02)
			for (unsigned i = 0; i < c->nwakers; i++)
				ring_fd(c->wakers[i].bell);
		pump(c, 0, 10);
	}
	printf("stall: a bad lap at %llu, the claim at %llu, kept %.1f s; pubd's first error %u (%s)\n",
	       (unsigned long long)w.tail, (unsigned long long)(taken + w.cap + 16), now_s() - t0, c->first_error,
	       pub_proto_err_name(c->first_error));
	/* Now pubd too. */
	ring_fd(c->w.doorbell);
	answer(c, 5000, &code, &closed);
	printf("stall: pubd rung: it answered error %u (%s), connection %s\n", c->errors ? c->first_error : code,
	       pub_proto_err_name(c->errors ? c->first_error : code), closed ? "closed" : "open");
	return 0;
}

/* ---- scribble ---- */

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* What a round of scribbling lies in (one kind a round, on a fresh log). */
enum lie {
	LIE_CLAIM_AHEAD,   /* claim and latest far ahead: a lap, it seems */
	LIE_LATEST_INSIDE, /* latest inside the last record, claim just past it */
	LIE_LATEST_BEHIND, /* latest behind, claim a lap ahead of it */
	LIE_READER_LINE,   /* pubd's line: head, lazy, retired, wakers_gen, reader_sleeping */
	LIE_WRITER_LINE,   /* tail, wakers_seen, writer_waiting, closed */
	LIE_HEADER,	   /* magic, version, capacity, max_record */
	LIE_BAD_LAP,	   /* a record of another lap at the tail */
	LIE_HALF_MESSAGE,  /* a first piece whose rest never comes */
	LIE_RANDOM,	   /* random bytes over a stretch of the ring */
	LIE__COUNT
};

static const char *const lie_names[LIE__COUNT] = {
	"claim-ahead", "latest-inside", "latest-behind", "reader-line", "writer-line",
	"header",      "bad-lap",	"half-message",	 "random",
};

static void lie(struct pub_shmlog_writer *w, enum lie k, uint64_t *x, const char *group, uint64_t *seq)
{
	struct pub_shmlog_ctl *ctl = w->ctl;
	uint8_t *ring = w->ring, glen = (uint8_t)strlen(group), *b;
	struct pub_shmlog_rec *rec = (struct pub_shmlog_rec *)(ring + (w->tail & (w->cap - 1)));
	const uint8_t payload[16] = "scribble-scribbl";
	uint64_t v = xs(x);

	switch (k) {
	case LIE_CLAIM_AHEAD:
		atomic_store(&ctl->claim, w->tail + w->cap * (1 + (v & 3)) + 16);
		atomic_store(&ctl->latest, (w->tail + w->cap * (1 + (v & 3))) & ~UINT64_C(15));
		break;
	case LIE_LATEST_INSIDE:
		atomic_store(&ctl->latest, w->tail - 8 - (v & 0x70));
		atomic_store(&ctl->claim, w->tail + 8);
		break;
	case LIE_LATEST_BEHIND:
		atomic_store(&ctl->latest, v % (w->tail + 1) & ~UINT64_C(15));
		atomic_store(&ctl->claim, w->tail + w->cap + 16);
		break;
	case LIE_READER_LINE:
		atomic_store(&ctl->head, v);
		atomic_store(&ctl->lazy, (uint32_t)v);
		atomic_store(&ctl->retired, (uint32_t)(v >> 32));
		atomic_store(&ctl->wakers_gen, (uint32_t)(v >> 16));
		atomic_store(&ctl->reader_sleeping, (uint32_t)(v >> 8));
		break;
	case LIE_WRITER_LINE:
		atomic_store(&ctl->tail, v);
		atomic_store(&ctl->wakers_seen, (uint32_t)v);
		atomic_store(&ctl->writer_waiting, 1);
		atomic_store(&ctl->closed, (uint32_t)(v >> 40));
		break;
	case LIE_HEADER:
		ctl->magic = v;
		ctl->version = (uint32_t)(v >> 32);
		ctl->capacity = (uint32_t)v;
		ctl->max_record = UINT32_MAX;
		break;
	case LIE_BAD_LAP:
		rec->type = PUB_SHMLOG_MSG;
		atomic_store(&rec->commit, (uint64_t)(w->tail / w->cap + 7 + (v & 7)) << 32 | 64);
		break;
	case LIE_HALF_MESSAGE:
		b = pub_shmlog_claim(w, PUB_SHMLOG_MSG, PUB_SHMLOG_F_MORE, 100000,
				     PUB_DELIVERLOG_HEAD + glen + sizeof(payload));
		if (b) {
			memcpy(b + pub_deliverlog_put_head(b, 0, (*seq)++, group, glen), payload, sizeof(payload));
			pub_shmlog_commit(w);
		}
		break;
	default: {
		uint32_t off = (uint32_t)(v % w->cap);

		for (uint32_t i = 0; i < 256 && off + i < w->cap; i++)
			ring[off + i] = (uint8_t)xs(x);
		break;
	}
	}
}

/*
 * Everything in a direct log is its writer's to write. One round per kind
 * of lie (enum lie), each on a log of its own (a new connection), while
 * its readers read it: for seconds / LIE__COUNT, a turn at a time, four
 * well-formed messages (as an overwrite writer: we never wait for pubd)
 * and one lie, every reader, pubd and the space eventfd rung; each round
 * begins once the file `go` names (".N" after it) exists, after its log's
 * inode went to stdout and its --ready file (".N" too) was made. pubd and
 * every reader must cope: pubd may end us, a reader drops the log.
 */
static int mode_scribble(struct conn *c, const char *path, const char *group, double seconds, const char *ready_path,
			 const char *go)
{
	struct timespec pause = {.tv_nsec = 100000};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char rp[4096], gp[4096];
	uint8_t payload[64];

	memset(payload, 'S', sizeof(payload));
	for (int k = 0; k < LIE__COUNT; k++) {
		struct pub_shmlog_writer w;
		uint64_t seq = 0, turns = 0, msgs = 0;
		char who[64];
		double t0;

		if (k)
			conn_open(c, path);
		snprintf(who, sizeof(who), "scribble %s", lie_names[k]);
		if (!open_writer(c, group, who, true, &w))
			return 1;
		printf("scribble %s: direct log inode %lu of %s, %u readers\n", lie_names[k], inode_of(c->w.fd), group,
		       c->nwakers);
		fflush(stdout);
		snprintf(rp, sizeof(rp), "%s.%d", ready_path ? ready_path : "", k);
		snprintf(gp, sizeof(gp), "%s.%d", go ? go : "", k);
		ready(ready_path ? rp : NULL);
		await_go(go ? gp : NULL);
		t0 = now_s();
		while (now_s() - t0 < seconds / LIE__COUNT) {
			if (turns % 5 == 4)
				lie(&w, (enum lie)k, &x, group, &seq);
			else
				msgs += put_message(&w, group, 0, seq++, payload, sizeof(payload));
			ring_all(c);
			ring_fd(c->w.space);
			pump(c, 0, 0);
			turns++;
			nanosleep(&pause, NULL); /* pace the turns, so the others run between them */
		}
		pump(c, 0, 50);
		printf("scribble %s: %llu turns in %.2f s, %llu messages; pubd's first error %u (%s) after %.3f s, "
		       "the connection %s\n",
		       lie_names[k], (unsigned long long)turns, now_s() - t0, (unsigned long long)msgs, c->first_error,
		       pub_proto_err_name(c->first_error), c->errors ? c->first_error_at - t0 : -1.0,
		       c->closed ? "closed" : "open");
		fflush(stdout);
		/* Gone, with what it wrote. */
		for (unsigned i = 0; i < c->nwakers; i++) {
			close(c->wakers[i].page_fd);
			close(c->wakers[i].bell);
		}
		munmap(c->w.map, c->w.len);
		close(c->w.fd);
		close(c->w.doorbell);
		close(c->w.space);
		for (int i = 0; i < 3; i++) {
			close(c->plog[i]);
			close(c->dlog[i]);
		}
		munmap(c->wake, PUB_WAKE_PAGE_LEN);
		close(c->wake_fd);
		close(c->sock);
	}
	return 0;
}

/* ---- readonly ---- */

static int subscribe(struct conn *c, const char *group)
{
	return pump(c, group_req(c, PUB_FRAME_SUBSCRIBE, group), 5000);
}

/* Wait up to ms for a DIRECT_READ frame: the first log given, or NULL. */
static struct dlog *await_read(struct conn *c, int ms)
{
	double end = now_s() + ms / 1000.0;

	while (!c->nr && now_s() < end && pump(c, 0, 50) != -1000)
		;
	return c->nr ? &c->r[0] : NULL;
}

static unsigned tried, refused;

static void attempt(const char *what, bool worked, int err)
{
	tried++;
	refused += !worked;
	if (worked)
		printf("readonly: %s: WORKED\n", what);
	else
		printf("readonly: %s: refused (%s)\n", what, strerror(err));
}

/*
 * A reader's file of a direct log is read-only: every way this tool knows
 * to write through it, or to a file of it, or to take pages from under the
 * other readers, must fail. A private mapping may be written (copy on
 * write), but the log must not change.
 */
static int mode_readonly(struct conn *c, const char *group, double seconds)
{
	struct dlog *d;
	uint8_t *rw, *ro, *priv;
	uint64_t magic;
	char path[64];
	int r, fd, memfd;

	r = subscribe(c, group);
	if (r != 1) {
		printf("readonly: subscribing to %s: %d\n", group, r);
		return 1;
	}
	d = await_read(c, (int)(seconds * 1000));
	if (!d) {
		printf("readonly: no direct log to read within %.1f s\n", seconds);
		return 1;
	}
	d->len = pub_shmlog_map_len(d->cap);
	printf("readonly: given log %u (inode %lu, %zu bytes) to read, as uid %u\n", d->id, inode_of(d->fd), d->len,
	       (unsigned)getuid());
	ro = mmap(NULL, d->len, PROT_READ, MAP_SHARED, d->fd, 0);
	if (ro == MAP_FAILED)
		die("mapping the log read-only");
	memcpy(&magic, ro, sizeof(magic));
	printf("readonly: the log maps read-only, magic %s\n", magic == PUB_SHMLOG_MAGIC ? "right" : "WRONG");

	rw = mmap(NULL, d->len, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, 0);
	attempt("mmap(PROT_WRITE, MAP_SHARED)", rw != MAP_FAILED, errno);
	r = mprotect(ro, d->len, PROT_READ | PROT_WRITE);
	attempt("mprotect(PROT_WRITE) of the read-only mapping", r == 0, errno);
	r = (int)write(d->fd, "x", 1);
	attempt("write()", r == 1, errno);
	r = (int)pwrite(d->fd, "x", 1, PUB_SHMLOG_CTL_LEN);
	attempt("pwrite() into the ring", r == 1, errno);
	r = ftruncate(d->fd, 0);
	attempt("ftruncate(0)", r == 0, errno);
	r = ftruncate(d->fd, (off_t)d->len * 2);
	attempt("ftruncate(2 x size)", r == 0, errno);
	r = fallocate(d->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)d->len);
	attempt("fallocate(PUNCH_HOLE)", r == 0, errno);
	r = madvise(ro, d->len, MADV_REMOVE);
	attempt("madvise(MADV_REMOVE) of the mapping", r == 0, errno);
	r = fcntl(d->fd, F_ADD_SEALS, F_SEAL_WRITE);
	attempt("fcntl(F_ADD_SEALS, F_SEAL_WRITE)", r == 0, errno);
	r = fchmod(d->fd, 0666);
	attempt("fchmod(0666)", r == 0, errno);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", d->fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	attempt("open(/proc/self/fd/N, O_RDWR)", fd >= 0, errno);
	if (fd >= 0)
		close(fd);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	attempt("open(/proc/self/fd/N, O_WRONLY)", fd >= 0, errno);
	if (fd >= 0)
		close(fd);
	/* Through /proc/self/mem, as a debugger writes a read-only mapping. */
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	r = fd >= 0 ? (int)pwrite(fd, "x", 1, (off_t)(uintptr_t)(ro + PUB_SHMLOG_CTL_LEN)) : -1;
	attempt("pwrite(/proc/self/mem) at the read-only mapping", r == 1, errno);
	if (fd >= 0)
		close(fd);
	/* The writer's memfd is not ours: nothing in our fd table is it. */
	memfd = -1;
	for (int i = 0; i < 1024; i++) {
		if (i != d->fd && inode_of(i) == inode_of(d->fd) && (fcntl(i, F_GETFL) & O_ACCMODE) != O_RDONLY)
			memfd = i;
	}
	attempt("a writable fd of the log among ours", memfd >= 0, EBADF);
	/* A private mapping may be written: its own copy. */
	priv = mmap(NULL, d->len, PROT_READ | PROT_WRITE, MAP_PRIVATE, d->fd, 0);
	if (priv != MAP_FAILED) {
		uint8_t before[64];

		memcpy(before, ro, sizeof(before));
		memset(priv, 0xa5, sizeof(before));
		attempt("a private mapping's writes reaching the log", memcmp(ro, before, sizeof(before)) != 0, EPERM);
		munmap(priv, d->len);
	}
	printf("readonly: %u of %u attempts refused\n", refused, tried);
	return refused == tried ? 0 : 1;
}

/* ---- wakelies ---- */

/* The position word a liar writes in slot s: at seq 0 of the log it was
 * handed there (as far behind as can be), or, turn about, garbage. */
static uint64_t lie_at(const struct conn *c, uint32_t s, uint64_t turn)
{
	for (unsigned i = 0; i < c->nr; i++)
		if (c->r[i].slot == s && turn % 2)
			return pub_wake_at_word(c->r[i].id, 0);
	return (turn * UINT64_C(0x9e3779b97f4a7c15)) ^ s;
}

/*
 * A subscriber's wake page is its own to write, and the writers and pubd
 * read it: for `seconds`, sleep_seq moved on nonstop (every writer rings
 * us once per odd value: as often as it commits), every lost-count slot of
 * the page set higher and higher (pubd takes what it grew by as
 * sub_overflow drops of ours), and every position word saying we are at
 * the start of our logs, or garbage (pubd counts what the writer lapped
 * us past from there). We read nothing. A writer must not stall, and pubd
 * must take no more lost than it read of the log for us.
 */
static int mode_wakelies(struct conn *c, const char *group, double seconds, const char *ready_path, const char *stop)
{
	struct pub_wake_page *page = (struct pub_wake_page *)c->wake;
	uint64_t flips = 0, seq = atomic_load(&page->sleep_seq), big = UINT64_C(1) << 40;
	double t0;
	int r;

	r = subscribe(c, group);
	if (r != 1) {
		printf("wakelies: subscribing to %s: %d\n", group, r);
		return 1;
	}
	printf("wakelies: subscribed to %s, given %u direct logs\n", group, c->nr);
	fflush(stdout);
	ready(ready_path);
	t0 = now_s();
	while (stop ? access(stop, F_OK) != 0 && now_s() - t0 < 60 : now_s() - t0 < seconds) {
		atomic_store(&page->sleep_seq, ++seq);
		flips++;
		if (flips % 64 == 0) {
			big += UINT64_C(1) << 40;
			for (uint32_t s = 0; s < PUB_DELIVERLOG_NSLOTS; s++) {
				atomic_store(pub_wake_at(c->wake, s), lie_at(c, s, flips / 64));
				atomic_store(pub_wake_lost(c->wake, s), big + s);
			}
			pump(c, 0, 0);
			drain_fd(c->dlog[1]);
		}
	}
	/* The largest lie last: what pubd looks at from now on. */
	for (uint32_t s = 0; s < PUB_DELIVERLOG_NSLOTS; s++) {
		atomic_store(pub_wake_at(c->wake, s), lie_at(c, s, 1));
		atomic_store(pub_wake_lost(c->wake, s), UINT64_MAX - 1);
	}
	printf("wakelies: %llu flips of sleep_seq in %.1f s; lost counts up to %llu in all %u slots; given %u "
	       "direct logs\n",
	       (unsigned long long)flips, now_s() - t0, (unsigned long long)(UINT64_MAX - 1), PUB_DELIVERLOG_NSLOTS,
	       c->nr);
	fflush(stdout);
	return 0;
}

/* ---- revoked ---- */

struct rstate {
	struct pub_direct_reader d;
	bool init;
	uint64_t nread, max_idx, scan_max;
	bool any;
	/* When we learnt we may read no more (the log retired, GONE, or our
	 * subscription ended): the writer's tail then, and what came after. */
	bool cut;
	uint64_t cut_tail, after, after_max;
};

/* The payload's index (itest_client pub's: its first 8 bytes). */
static uint64_t index_of(const uint8_t *p, uint32_t len)
{
	uint64_t idx = 0;

	for (unsigned i = 0; i < 8 && i < len; i++)
		idx |= (uint64_t)p[i] << (8 * i);
	return idx;
}

/* Every whole message record anywhere in the ring (a lap or not): the
 * largest index among them. */
static void scan(const struct dlog *d, struct rstate *s, const char *group)
{
	const uint8_t *ring = d->map + PUB_SHMLOG_CTL_LEN;
	uint8_t glen = (uint8_t)strlen(group);

	for (uint32_t off = 0; off + PUB_SHMLOG_HDR_LEN <= d->cap; off += PUB_SHMLOG_ALIGN) {
		const struct pub_shmlog_rec *rec = (const struct pub_shmlog_rec *)(ring + off);
		uint64_t cw = atomic_load_explicit(&((struct pub_shmlog_rec *)rec)->commit, memory_order_acquire);
		uint32_t len = (uint32_t)cw;
		const uint8_t *body = (const uint8_t *)(rec + 1);

		if (!cw || rec->type != PUB_SHMLOG_MSG || len < PUB_SHMLOG_HDR_LEN + PUB_DELIVERLOG_HEAD + glen + 8 ||
		    len > d->max_record || off + len > d->cap || body[16] != glen ||
		    memcmp(body + PUB_DELIVERLOG_HEAD, group, glen))
			continue;
		uint64_t idx = index_of(body + PUB_DELIVERLOG_HEAD + glen, 8);

		if (!s->any || idx > s->scan_max)
			s->scan_max = idx;
		s->any = true;
	}
}

/*
 * A subscriber the operator takes off the group's subscribe ACL: it keeps
 * every direct log it was given, mapped, and reads each on (as libpub
 * would, and also by scanning the whole ring now and then) for `seconds`
 * or until the file `stop` exists, past the reload that ends its
 * subscription. No message the publisher writes after that may reach it:
 * pubd retires the log, and an honest writer writes it no more.
 */
static int mode_revoked(struct conn *c, const char *group, double seconds, const char *ready_path, const char *stop)
{
	static struct rstate st[MAX_LOGS];
	static uint8_t buf[1 << 20];
	double t0, last_scan = 0;
	uint32_t sub_error = 0;
	int r;

	r = subscribe(c, group);
	if (r != 1) {
		printf("revoked: subscribing to %s: %d\n", group, r);
		return 1;
	}
	ready(ready_path);
	t0 = now_s();
	while (now_s() - t0 < seconds && !(stop && access(stop, F_OK) == 0)) {
		uint32_t errs = c->errors;
		bool told;

		pump(c, 0, 1);
		if (c->errors != errs && !sub_error)
			sub_error = c->last_error;
		for (unsigned i = 0; i < c->nr; i++) {
			struct dlog *d = &c->r[i];
			struct rstate *s = &st[i];
			struct pub_direct_msg m;
			size_t need;

			if (!s->init) {
				d->len = pub_shmlog_map_len(d->cap);
				d->map = mmap(NULL, d->len, PROT_READ, MAP_SHARED, d->fd, 0);
				if (d->map == MAP_FAILED)
					die("mapping a direct log");
				if (pub_direct_reader_init(&s->d, d->map, d->len, d->cap, d->max_record, d->start,
							   group, (uint8_t)strlen(group)) < 0)
					die("a direct log's reader");
				s->init = true;
			}
			told = d->gone || sub_error || atomic_load(&((struct pub_shmlog_ctl *)d->map)->retired) != 0;
			if (told && !s->cut) {
				s->cut = true;
				s->cut_tail = atomic_load(&((struct pub_shmlog_ctl *)d->map)->tail);
			}
			for (;;) {
				uint64_t pos = s->d.r.pos;

				r = pub_direct_next(&s->d, buf, sizeof(buf), sizeof(buf), &m, &need);
				if (r != 1)
					break;
				uint64_t idx = index_of(buf, m.len);

				s->nread++;
				if (idx > s->max_idx || s->nread == 1)
					s->max_idx = idx;
				if (s->cut && pos >= s->cut_tail) {
					s->after++;
					if (idx > s->after_max || s->after == 1)
						s->after_max = idx;
				}
			}
			if (r < 0 && r != -ENOSPC) {
				/* a record we cannot read: start over at the writer's latest */
				s->d.r.pos = atomic_load(&((struct pub_shmlog_ctl *)d->map)->latest) & ~UINT64_C(15);
			}
		}
		if (now_s() - last_scan > 0.02) {
			for (unsigned i = 0; i < c->nr; i++)
				if (st[i].init)
					scan(&c->r[i], &st[i], group);
			last_scan = now_s();
		}
		nanosleep(&(struct timespec){.tv_nsec = 200000}, NULL); /* a reader's pace */
	}
	for (unsigned i = 0; i < c->nr; i++) {
		struct rstate *s = &st[i];

		if (s->init)
			scan(&c->r[i], s, group);
		printf("revoked: log %u source %016" PRIx64 ": read %llu messages, the last index %llu, the ring's "
		       "largest %lld; %s; after it %llu messages (largest index %lld)\n",
		       c->r[i].id, c->r[i].source, (unsigned long long)s->nread, (unsigned long long)s->max_idx,
		       s->any ? (long long)s->scan_max : -1LL,
		       s->cut ? "told it is over (retired, gone or unsubscribed)" : "NEVER TOLD IT IS OVER",
		       (unsigned long long)s->after, s->after ? (long long)s->after_max : -1LL);
	}
	printf("revoked: given %u direct logs; the subscription ended with error %u (%s)\n", c->nr, sub_error,
	       pub_proto_err_name(sub_error));
	return 0;
}

/* ---- unheeding ---- */

/*
 * A writer that heeds nothing pubd says: a few messages of 64 bytes a
 * millisecond into its direct log of group (seq 0, 1, ..., the seq in the
 * first 8 bytes), or (flood) as fast as the ring takes them, so pubd, which
 * reads them to the fabric, always stands behind it; pubd and every reader
 * rung; with pieces, once the file go exists, one message of a MiB in
 * pieces among them. Once pubd said the log is gone (a reload took our right to
 * publish, or changed who may read), it writes on in bursts, as fast as the
 * ring takes them, until it wrote `after` more or seconds passed. Its
 * readers must read none of those: pubd set where the log ends in each
 * one's deliver log (directlog.h).
 */
static int mode_unheeding(struct conn *c, const char *group, double seconds, uint64_t after, const char *ready_path,
			  const char *kind, const char *go)
{
	uint8_t payload[64] = {0};
	struct pub_shmlog_writer w;
	uint64_t seq = 0, gone_seq = 0, written_after = 0, full = 0;
	double t0, full_since = 0;
	bool flood = !strcmp(kind, "flood"), pieces = !strcmp(kind, "pieces");

	if (!open_writer(c, group, "unheeding", false, &w))
		return 1;
	printf("unheeding: log %u source %016" PRIx64 " of %s\n", c->w.id, c->w.source, group);
	t0 = now_s();
	while (now_s() - t0 < seconds && written_after < after) {
		unsigned burst = c->w.gone || flood ? 256 : 4;

		/* Once go exists, one message of a MiB in pieces, then on. */
		if (pieces && go && !c->w.gone && access(go, F_OK) == 0 && put_pieces(&w, group, seq, 1u << 20)) {
			printf("unheeding: a message of 1048576 bytes in pieces, seq %llu\n", (unsigned long long)seq);
			seq++;
			pieces = false;
		}

		for (unsigned i = 0; i < burst && written_after < after; i++) {
			memcpy(payload, &seq, sizeof(seq));
			/* No room: pubd holds us back (as it reads the log to
			 * its end at a retire), or has stopped reading it. */
			if (!put_message(&w, group, 0, seq, payload, sizeof(payload))) {
				full++;
				if (!full_since)
					full_since = now_s();
				break;
			}
			full_since = 0;
			if (c->w.gone && !written_after++)
				gone_seq = seq;
			seq++;
		}
		/* Gone, and full for half a second: pubd reads it no more, and
		 * the lap past its end is written (a flood may have written it
		 * before it heard). */
		if (c->w.gone && full_since && now_s() - full_since > 0.5)
			break;
		ring_all(c);
		if (seq >= 1000)
			ready(ready_path);
		pump(c, 0, 1);
	}
	printf("unheeding: wrote %llu messages, %llu of them after pubd said the log is gone (from seq %llu), found "
	       "the ring full %llu times; pubd's first error %u (%s), connection %s\n",
	       (unsigned long long)seq, (unsigned long long)written_after, (unsigned long long)gone_seq,
	       (unsigned long long)full, c->first_error, pub_proto_err_name(c->first_error),
	       c->closed ? "closed" : "open");
	return 0;
}

/*
 * A subscriber that reads none of the direct logs it is given: pubd must
 * not give a slot whose reader has not let its log go to another log (the
 * word there still says where the old log ends, to a reader that may be
 * behind on it). With `release` it lets each log go as an honest reader
 * does once told the log is gone: then the slot is pubd's to give again.
 */
static int mode_slots(struct conn *c, const char *group, const char *kind, double seconds, const char *ready_path,
		      const char *stop)
{
	bool release = !strcmp(kind, "release"), seen[PUB_DELIVERLOG_NSLOTS] = {false}, let_go[MAX_LOGS] = {false};
	unsigned shown = 0, slots = 0;
	uint8_t *ctl;
	double t0;
	int r;

	ctl = mmap(NULL, PUB_SHMLOG_CTL_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, c->dlog[0], 0);
	if (ctl == MAP_FAILED)
		die("mapping the deliver log's control page");
	r = subscribe(c, group);
	if (r != 1) {
		printf("slots: subscribing to %s: %d\n", group, r);
		return 1;
	}
	ready(ready_path);
	t0 = now_s();
	while (now_s() - t0 < seconds && !(stop && access(stop, F_OK) == 0)) {
		if (pump(c, 0, 20) == -1000)
			break;
		for (; shown < c->nr; shown++) {
			uint32_t slot = c->r[shown].slot;

			if (slot >= PUB_DELIVERLOG_NSLOTS)
				continue;
			slots += !seen[slot];
			seen[slot] = true;
			printf("slots: log %u slot %u\n", c->r[shown].id, slot);
		}
		for (unsigned i = 0; release && i < c->nr; i++) {
			if (!c->r[i].gone || let_go[i] || c->r[i].slot >= PUB_DELIVERLOG_NSLOTS)
				continue;
			atomic_store(pub_deliverlog_slot(ctl, c->r[i].slot), PUB_DIRECT_SLOT_RELEASED);
			let_go[i] = true;
		}
	}
	printf("slots: %u logs in %u slots\n", c->nr, slots);
	return 0;
}

/*
 * deaf: a direct log of G, and then its socket goes unread until the file
 * --go names exists, while a reader (churn) comes and goes. It says it took
 * in every WAKER (wakers_seen kept at wakers_gen), which pubd must not take
 * on its word alone. Then it reads what came meanwhile and prints how many
 * fds pubd had in flight to it: each counted against pubd's RLIMIT_NOFILE
 * until read.
 */
static int mode_deaf(struct conn *c, const char *group, const char *ready_path, const char *go)
{
	struct pub_shmlog_ctl *ctl;
	unsigned fds0, wakers0;
	double t0;

	if (open_direct(c, group) != 1) {
		printf("deaf: pubd gave no direct log of %s\n", group);
		return 1;
	}
	ctl = (struct pub_shmlog_ctl *)c->w.map;
	fds0 = c->fdt;
	wakers0 = c->nwakers;
	ready(ready_path);
	t0 = now_s();
	while (access(go, F_OK) != 0 && now_s() - t0 < 60) {
		atomic_store(&ctl->wakers_seen, atomic_load(&ctl->wakers_gen));
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	}
	pump(c, 0, 1000); /* all that waited, and what pubd sends once it is read */
	printf("deaf: %u fds came while it did not read (%u wakers)\n", c->fdt - fds0, c->nwakers - wakers0);
	return 0;
}

/*
 * deafsub: subscribes to G, and then its socket goes unread until the file
 * --go names exists, while writers come and go (writers), each handing it
 * a direct log. Then it reads what came meanwhile and prints the fds.
 */
static int mode_deafsub(struct conn *c, const char *group, const char *ready_path, const char *go)
{
	unsigned fds0;
	double t0;

	if (subscribe(c, group) != 1) {
		printf("deafsub: could not subscribe to %s\n", group);
		return 1;
	}
	fds0 = c->fdt;
	ready(ready_path);
	t0 = now_s();
	while (access(go, F_OK) != 0 && now_s() - t0 < 60)
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	pump(c, 0, 1000);
	printf("deafsub: %u fds came while it did not read\n", c->fdt - fds0);
	return 0;
}

/* writers: N connections (--after N) one after the other, each opening a
 * direct log of G and hanging up. */
static int mode_writers(struct conn *c, const char *path, const char *group, uint64_t rounds)
{
	uint64_t i, opened = 0;
	int r, last = 0;

	for (i = 0; i < rounds; i++) {
		if (i)
			conn_open(c, path);
		r = open_direct(c, group);
		opened += r == 1;
		if (r != 1)
			last = r; /* refused: pubd's bounds on direct logs (said below) */
		close(c->sock);
		for (int fd = 3; fd < 1024; fd++) /* every fd pubd gave it; nothing else is open */
			if (fd != STDIN_FILENO && fd != STDOUT_FILENO && fd != STDERR_FILENO)
				close(fd);
		munmap(c->wake, PUB_WAKE_PAGE_LEN);
		if (r == 1)
			munmap(c->w.map, c->w.len);
	}
	printf("writers: %llu rounds, %llu direct logs opened (the last refusal: %d)\n", (unsigned long long)rounds,
	       (unsigned long long)opened, last);
	return 0;
}

/* churn: subscribes to G and unsubscribes, N times (--after N), each
 * answered before the next. */
static int mode_churn(struct conn *c, const char *group, uint64_t rounds)
{
	uint64_t i;
	int r;

	for (i = 0; i < rounds; i++) {
		r = subscribe(c, group);
		if (r == 1)
			r = pump(c, group_req(c, PUB_FRAME_UNSUBSCRIBE, group), 5000);
		if (r != 1) {
			printf("churn: round %llu: %d\n", (unsigned long long)i, r);
			return 1;
		}
	}
	printf("churn: %llu rounds\n", (unsigned long long)rounds);
	return 0;
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *group = "h", *ready_path = NULL, *kind = "len", *other = "h2", *stop = NULL,
		   *go = NULL;
	double seconds = 3;
	uint64_t after = 0;
	static struct conn c;
	int i;

	if (argc < 2)
		goto usage;
	for (i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-s"))
			sock = argv[i + 1];
		else if (!strcmp(argv[i], "-g"))
			group = argv[i + 1];
		else if (!strcmp(argv[i], "--kind"))
			kind = argv[i + 1];
		else if (!strcmp(argv[i], "--other"))
			other = argv[i + 1];
		else if (!strcmp(argv[i], "--seconds"))
			seconds = strtod(argv[i + 1], NULL);
		else if (!strcmp(argv[i], "--ready"))
			ready_path = argv[i + 1];
		else if (!strcmp(argv[i], "--stop"))
			stop = argv[i + 1];
		else if (!strcmp(argv[i], "--go"))
			go = argv[i + 1];
		else if (!strcmp(argv[i], "--after"))
			after = strtoull(argv[i + 1], NULL, 10);
		else
			goto usage;
	}
	if (!sock || i != argc)
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
	conn_open(&c, sock);
	if (!strcmp(argv[1], "garbage"))
		return mode_garbage(&c, group, kind, other, ready_path, go);
	if (!strcmp(argv[1], "stall"))
		return mode_stall(&c, group, seconds, ready_path, go, stop);
	if (!strcmp(argv[1], "scribble"))
		return mode_scribble(&c, sock, group, seconds, ready_path, go);
	if (!strcmp(argv[1], "readonly"))
		return mode_readonly(&c, group, seconds);
	if (!strcmp(argv[1], "wakelies"))
		return mode_wakelies(&c, group, seconds, ready_path, stop);
	if (!strcmp(argv[1], "slots"))
		return mode_slots(&c, group, kind, seconds, ready_path, stop);
	if (!strcmp(argv[1], "revoked"))
		return mode_revoked(&c, group, seconds, ready_path, stop);
	if (!strcmp(argv[1], "unheeding"))
		return mode_unheeding(&c, group, seconds, after, ready_path, kind, go);
	if (!strcmp(argv[1], "deaf") && go)
		return mode_deaf(&c, group, ready_path, go);
	if (!strcmp(argv[1], "churn"))
		return mode_churn(&c, group, after);
	if (!strcmp(argv[1], "deafsub") && go)
		return mode_deafsub(&c, group, ready_path, go);
	if (!strcmp(argv[1], "writers"))
		return mode_writers(&c, sock, group, after);
usage:
	fprintf(stderr,
		"usage: hostile_direct "
		"garbage|stall|scribble|readonly|wakelies|revoked|slots|unheeding|deaf|churn|deafsub|writers\n"
		"       -s SOCK [-g G] [--kind len|lap|group|reqid|piece|firstpiece|keep|release] [--other G2]\n"
		"       [--seconds S]\n"
		"       [--ready FILE] [--go FILE] [--stop FILE] [--after N]\n");
	return 2;
}
