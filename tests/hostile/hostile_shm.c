/* SPDX-License-Identifier: MIT */
/*
 * A hostile client of pubd's shared-memory logs (the hostile tier's tool):
 * it asks for the logs at HELLO as libpub does, then abuses them.
 *
 *   hostile_shm garbage  -s SOCK [--hold yes] a record no libpub writes, rung
 *                                          in (--hold: then stays until
 *                                          stdin ends, its socket open)
 *   hostile_shm midwrite -s SOCK -g G -n N N whole messages, then one begun
 *                                          and the process gone mid-record
 *   hostile_shm doorbell -s SOCK --seconds S  the doorbell rung nonstop
 *   hostile_shm truncate -s SOCK          ftruncate the log's memfd to 0
 *   hostile_shm rewrite  -s SOCK -g G -n N N messages of 4 KiB of 'A', each
 *                                          rewritten to 'Z' right after its
 *                                          commit (pubd publishes such a
 *                                          message from its record), then
 *                                          the process gone at once
 *   hostile_shm dlog     -s SOCK -g G --seconds S  subscribed to G, its
 *                                          deliver log's control page lied
 *                                          in for S seconds (see mode_dlog)
 *   hostile_shm glog     -s SOCK -g G --seconds S  subscribed to G, given
 *                                          its group log: tries to map it
 *                                          writable, then lies in its slot
 *                                          for S seconds (see mode_glog)
 *   hostile_shm hoard    -s SOCK -g G1,G2,... --seconds S  subscribed to
 *                                          every G, takes each group log
 *                                          and reads nothing for S seconds
 *   hostile_shm pin      -s SOCK -n N [-g G] connects N times, each time
 *                                          keeping both logs mapped after
 *                                          the connection is gone (with
 *                                          -g: subscribed to G, deliveries
 *                                          unread)
 *   hostile_shm retire   -s SOCK -g G -n N makes pubd retire N - 1 group
 *                                          logs of G, keeping each mapped
 *                                          (see mode_retire)
 *   hostile_shm hangon   -s SOCK -g G -n N --seconds S [--ready F]
 *                                          with N subscribers that never
 *                                          read, hangs up half a lap ahead
 *                                          of pubd and goes on committing
 *                                          records for S seconds (see
 *                                          mode_hangon)
 *   hostile_shm replies  -s SOCK --seconds S [--ready F] [--hold yes]
 *                                          commits records pubd answers
 *                                          with an ERROR, never reading its
 *                                          socket (--hold: then stays until
 *                                          stdin ends)
 *
 * Each prints one line saying what it did and what pubd answered.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
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
#include "proto.h"
#include "deliverlog_format.h"
#include "publog_format.h"
#include "shmlog.h"

struct shm {
	int sock, fds[6];
	uint8_t *map;
	size_t len;
	struct pub_shmlog_writer w;
	uint8_t rbuf[1 << 16]; /* what the socket said, not yet read (await_frame) */
	size_t have;
};

static void die(const char *what)
{
	fprintf(stderr, "hostile_shm: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* A log's memfd mapped read-write whole: its size as its control page says
 * (pubd made it). */
static uint8_t *map_log(int fd, size_t *len)
{
	uint8_t *map = mmap(NULL, PUB_SHMLOG_CTL_LEN, PROT_READ, MAP_SHARED, fd, 0);

	if (map == MAP_FAILED)
		die("mmap");
	*len = pub_shmlog_map_len(((struct pub_shmlog_ctl *)map)->capacity);
	munmap(map, PUB_SHMLOG_CTL_LEN);
	map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	return map;
}

/* Connect, HELLO asking for shared memory, the 6 fds, the publish log mapped. */
static void shm_open_logs(const char *path, struct shm *s)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint8_t hello[64], buf[1024];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	long n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	s->have = 0;
	s->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->sock < 0 || connect(s->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	n = pub_proto_enc_hello(hello, sizeof(hello), PUB_HELLO_F_SHM, "hostile-shm", 11);
	if (n <= 0 || write(s->sock, hello, (size_t)n) != n)
		die("hello");
	if (recvmsg(s->sock, &mh, 0) <= 0)
		die("welcome");
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(6 * sizeof(int))) {
		errno = EPROTO;
		die("no shared-memory logs offered");
	}
	memcpy(s->fds, CMSG_DATA(cm), sizeof(s->fds));
	s->map = map_log(s->fds[0], &s->len);
	if (pub_shmlog_writer_init(&s->w, s->map, s->len, false) < 0)
		die("publish log");
}

static void ring(const struct shm *s)
{
	uint64_t one = 1;

	if (write(s->fds[1], &one, sizeof(one)) != sizeof(one))
		die("doorbell");
}

/* What pubd says on the socket within ms: the first ERROR's code, and
 * whether the connection ended. */
static void answer(const struct shm *s, int ms, uint32_t *code, int *closed)
{
	uint8_t buf[4096];
	size_t have = 0;
	struct pollfd p = {.fd = s->sock, .events = POLLIN};
	const uint8_t *body;
	struct pub_msg_error e;
	uint32_t len;
	uint8_t type;
	ssize_t n;

	*code = 0;
	*closed = 0;
	while (poll(&p, 1, ms) > 0) {
		n = read(s->sock, buf + have, sizeof(buf) - have);
		if (n <= 0) {
			*closed = 1;
			break;
		}
		have += (size_t)n;
		while (pub_proto_frame_peek(buf, have, sizeof(buf), &type, &len, &body, NULL) == 1) {
			if (type == PUB_FRAME_ERROR && !*code && pub_proto_dec_error(body, len, &e) == 0)
				*code = e.code;
			memmove(buf, buf + PUB_PROTO_HDR_LEN + len, have - PUB_PROTO_HDR_LEN - len);
			have -= PUB_PROTO_HDR_LEN + len;
		}
		if (have == sizeof(buf))
			have = 0;
	}
}

/* ... and with `hold`, stays (its socket open, not read) until stdin ends. */
static int mode_garbage(struct shm *s, bool hold)
{
	uint64_t garbage = (uint64_t)9 << 32 | 64; /* a lap the log is not on */
	uint32_t code;
	int closed;

	memcpy(s->map + PUB_SHMLOG_CTL_LEN, &garbage, sizeof(garbage));
	s->map[PUB_SHMLOG_CTL_LEN + 8] = PUB_SHMLOG_MSG;
	ring(s);
	answer(s, 5000, &code, &closed);
	printf("garbage: pubd answered error %u (%s), connection %s\n", code, pub_proto_err_name(code),
	       closed ? "closed" : "open");
	fflush(stdout);
	while (hold && getchar() != EOF)
		;
	return code == PUB_ERR_PROTO && closed ? 0 : 1;
}

/* Room for a record: ring pubd, say we wait, sleep on the space eventfd. */
static void wait_room(struct shm *s, uint32_t len)
{
	struct pollfd p = {.fd = s->fds[2], .events = POLLIN};
	uint64_t v;

	if (pub_shmlog_wake_reader(&s->w))
		ring(s);
	if (pub_shmlog_writer_sleep(&s->w, len) && poll(&p, 1, 5000) > 0 && read(s->fds[2], &v, sizeof(v)) < 0)
		die("space eventfd");
}

static int mode_midwrite(struct shm *s, const char *group, unsigned n)
{
	uint8_t glen = (uint8_t)strlen(group), *b;
	unsigned i;

	for (i = 0; i <= n; i++) {
		while (!(b = pub_shmlog_claim(&s->w, PUB_SHMLOG_MSG, 0, 100, PUB_PUBLOG_HEAD + glen + 100)))
			wait_room(s, PUB_PUBLOG_HEAD + glen + 100);
		memset(b + pub_publog_put_head(b, 0, group, glen), 'm', 100);
		if (i == n)
			break; /* the last one is begun and never committed */
		pub_shmlog_commit(&s->w);
		if (pub_shmlog_wake_reader(&s->w))
			ring(s);
	}
	printf("midwrite: %u messages committed, then one begun and the process gone\n", n);
	fflush(stdout);
	_exit(0); /* mid-record, as a crash would */
}

/* pubd lends a message of 1 KiB or more its record: what the writer
 * changes there after the commit changes only its own message. */
static int mode_rewrite(struct shm *s, const char *group, unsigned n)
{
	uint8_t glen = (uint8_t)strlen(group), *b, *payload;
	const uint32_t len = 4096;
	unsigned i;

	for (i = 0; i < n; i++) {
		while (!(b = pub_shmlog_claim(&s->w, PUB_SHMLOG_MSG, 0, len, PUB_PUBLOG_HEAD + glen + len)))
			wait_room(s, PUB_PUBLOG_HEAD + glen + len);
		payload = b + pub_publog_put_head(b, 0, group, glen);
		memset(payload, 'A', len);
		pub_shmlog_commit(&s->w);
		if (pub_shmlog_wake_reader(&s->w))
			ring(s);
		memset(payload, 'Z', len); /* while pubd may be sending it */
	}
	printf("rewrite: %u messages of %u bytes committed and rewritten after the commit\n", n, len);
	fflush(stdout);
	_exit(0); /* gone with whatever pubd still holds of its log */
}

/* SUBSCRIBE or UNSUBSCRIBE group on the socket (the answer is not waited for). */
static void group_frame(const struct shm *s, uint8_t type, const char *group)
{
	uint8_t f[300];
	long n = pub_proto_enc_group_req(f, sizeof(f), type, 1, group, strlen(group));

	if (n <= 0 || write(s->sock, f, (size_t)n) != n)
		die(type == PUB_FRAME_SUBSCRIBE ? "subscribe" : "unsubscribe");
}

static void subscribe(const struct shm *s, const char *group)
{
	group_frame(s, PUB_FRAME_SUBSCRIBE, group);
}

/* Drain an eventfd that may not have been written (non-blocking, as pubd made it). */
static void drain(int fd)
{
	uint64_t v;

	(void)!read(fd, &v, sizeof(v));
}

/*
 * The deliver log is the client's to read, and its control page the
 * client's to write: whatever pubd finds there is a lie. Subscribed to
 * group, for `seconds`, a lie a turn: its read position ahead of what pubd
 * wrote, at 2^64 - 1, at 0 (behind a ring that has wrapped); pubd's own
 * fields (magic, capacity, tail, claim) and both flags overwritten; one turn
 * in 1024 the truth (all consumed) with the ring scribbled over; the space
 * eventfd rung after each. pubd must neither write outside the ring nor trust a word of
 * it, and the subscription costs pubd no more than its bounded queue.
 */
static int mode_dlog(struct shm *s, const char *group, double seconds)
{
	struct timespec t0, t, pause = {.tv_nsec = 100000};
	unsigned long long turns = 0;
	struct pub_shmlog_ctl *ctl;
	uint64_t one = 1, tail;
	uint32_t cap;
	uint8_t *map;
	size_t len;

	subscribe(s, group);
	map = mmap(NULL, PUB_SHMLOG_CTL_LEN, PROT_READ, MAP_SHARED, s->fds[3], 0);
	if (map == MAP_FAILED)
		die("mmap deliver log");
	cap = ((struct pub_shmlog_ctl *)map)->capacity;
	munmap(map, PUB_SHMLOG_CTL_LEN);
	len = pub_shmlog_map_len(cap);
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fds[3], 0);
	if (map == MAP_FAILED)
		die("mmap deliver log");
	ctl = (struct pub_shmlog_ctl *)map;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		tail = atomic_load(&ctl->tail);
		/* True one turn in 1024 (about every 100 ms): room now and
		 * then, but mostly lies. */
		switch (turns % 1024 == 1023 ? 3 : turns % 4 == 3 ? 4 : turns % 4) {
		case 0:
			atomic_store(&ctl->head, tail + (uint64_t)cap * 4 + 16);
			break;
		case 1:
			atomic_store(&ctl->head, UINT64_MAX);
			break;
		case 2:
			atomic_store(&ctl->head, 0);
			break;
		case 3:
			atomic_store(&ctl->head, tail);
			memset(map + PUB_SHMLOG_CTL_LEN, 0xa5, cap);
			break;
		default:
			ctl->magic = 0;
			ctl->capacity = UINT32_MAX;
			ctl->max_record = UINT32_MAX;
			atomic_store(&ctl->tail, UINT64_MAX - tail);
			atomic_store(&ctl->claim, tail * 7);
			atomic_store(&ctl->writer_waiting, UINT32_MAX);
			atomic_store(&ctl->reader_sleeping, 1);
			break;
		}
		(void)!write(s->fds[5], &one, sizeof(one));
		drain(s->fds[4]);
		turns++;
		nanosleep(&pause, NULL); /* pace the lies, so pubd writes between them */
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("dlog: subscribed to %s, lied in the deliver log's control page %llu times in %.1f s\n", group, turns,
	       seconds);
	return 0;
}

/*
 * Read the socket up to the next frame of type `until` (an OK: the answer
 * to a SUBSCRIBE; an SHM frame: a group log handed over, at SUBSCRIBE or
 * given back later), for at most ms between reads; returns the group logs
 * handed over up to it (SHM frames with an fd), or -1. The last one's frame
 * and fd go to *m and *fd when not NULL.
 */
static int await_frame(struct shm *s, uint8_t until, int ms, struct pub_msg_shm *m, int *fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct pollfd p = {.fd = s->sock, .events = POLLIN};
	struct pub_msg_shm shm;
	int logs = 0, got = -1;

	for (;;) {
		const uint8_t *body;
		uint32_t len;
		uint8_t type;
		size_t off = 0;
		bool done = false;

		while (!done && pub_proto_frame_peek(s->rbuf + off, s->have - off, sizeof(s->rbuf), &type, &len, &body,
						     NULL) == 1) {
			if (type == PUB_FRAME_SHM && pub_proto_dec_shm(body, len, &shm) == 0 &&
			    shm.kind == PUB_SHM_GROUP_LOG) {
				logs++;
				if (m)
					*m = shm;
				if (fd)
					*fd = got;
			}
			done = type == until;
			off += PUB_PROTO_HDR_LEN + len;
		}
		memmove(s->rbuf, s->rbuf + off, s->have - off);
		s->have -= off;
		if (done)
			return logs;
		if (poll(&p, 1, ms) != 1)
			return -1;
		struct iovec iov = {.iov_base = s->rbuf + s->have, .iov_len = sizeof(s->rbuf) - s->have};
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl)};
		ssize_t r = recvmsg(s->sock, &mh, 0);

		if (r <= 0)
			return -1;
		/* An fd comes with the first byte of the SHM frame it belongs to. */
		if (CMSG_FIRSTHDR(&mh))
			memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(got));
		s->have += (size_t)r;
	}
}

static int await_ok(struct shm *s, struct pub_msg_shm *m, int *fd)
{
	return await_frame(s, PUB_FRAME_OK, 5000, m, fd);
}

/* The group log a SUBSCRIBE was answered with: its frame in *m, its fd. */
static int group_log_fd(struct shm *s, struct pub_msg_shm *m)
{
	int fd = -1, logs = await_ok(s, m, &fd);

	if (logs < 0)
		die("no group log");
	if (!logs || fd < 0) {
		errno = ENOENT;
		die("subscribed without a group log");
	}
	return fd;
}

/*
 * A group log is pubd's to write and every reader's to read: this reader
 * first tries to make it writable (a mapping that writes, mprotect, a
 * write), then lies in its slot for `seconds`, where it says how far it has
 * read: ahead of what pubd wrote, 2^64 - 1, 0, a position inside a record;
 * one turn in 1024 the truth (pubd's tail). Then it says it stands inside
 * the last record and unsubscribes, still connected: pubd counts what it
 * left unread from where it stands (a walk of the log from a liar's
 * position). pubd must neither write over what an honest reader has not
 * read nor count anything twice or not at all.
 */
static int mode_glog(struct shm *s, const char *group, double seconds)
{
	struct timespec t0, t, pause = {.tv_nsec = 100000};
	unsigned long long turns = 0;
	const struct pub_shmlog_ctl *gctl;
	_Atomic uint64_t *slot;
	struct pub_msg_shm m;
	uint8_t *dmap, *gmap, *w;
	uint64_t one = 1, tail;
	size_t glen;
	int fd, writable = 0;

	subscribe(s, group);
	fd = group_log_fd(s, &m);
	glen = pub_shmlog_map_len(m.capacity);
	w = mmap(NULL, glen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	writable += w != MAP_FAILED;
	gmap = mmap(NULL, glen, PROT_READ, MAP_SHARED, fd, 0);
	if (gmap == MAP_FAILED)
		die("mmap group log");
	writable += mprotect(gmap, glen, PROT_READ | PROT_WRITE) == 0;
	writable += write(fd, "x", 1) == 1;
	gctl = (const struct pub_shmlog_ctl *)gmap;
	dmap = mmap(NULL, PUB_SHMLOG_CTL_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, s->fds[3], 0);
	if (dmap == MAP_FAILED || m.slot >= (PUB_SHMLOG_CTL_LEN - 1024) / 8)
		die("slot");
	slot = (_Atomic uint64_t *)(dmap + 1024) + m.slot;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		tail = atomic_load(&gctl->tail);
		switch (turns % 1024 == 1023 ? 4 : turns % 4) {
		case 0:
			atomic_store(slot, tail + (uint64_t)m.capacity * 4 + 16);
			break;
		case 1:
			atomic_store(slot, UINT64_MAX);
			break;
		case 2:
			atomic_store(slot, 0);
			break;
		case 3:
			atomic_store(slot, tail - 8);
			break;
		default:
			atomic_store(slot, tail);
			break;
		}
		(void)!write(s->fds[5], &one, sizeof(one));
		drain(s->fds[4]);
		turns++;
		nanosleep(&pause, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	tail = atomic_load(&gctl->tail);
	atomic_store(slot, tail > 16 ? tail - 16 : tail);
	group_frame(s, PUB_FRAME_UNSUBSCRIBE, group);
	if (await_frame(s, PUB_FRAME_OK, 5000, NULL, NULL) < 0) /* taken while it is connected */
		die("unsubscribe: no answer");
	printf("glog: subscribed to %s, %s; lied in its slot %llu times in %.1f s\n", group,
	       writable ? "MADE THE GROUP LOG WRITABLE"
			: "the group log stayed read-only (mmap, mprotect, write refused)",
	       turns, seconds);
	return 0;
}

static int mode_doorbell(struct shm *s, double seconds)
{
	struct timespec t0, t;
	unsigned long long rings = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		ring(s);
		rings++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("doorbell: rung %llu times in %.1f s with nothing in the log\n", rings, seconds);
	return 0;
}

static int mode_truncate(struct shm *s)
{
	int r = ftruncate(s->fds[0], 0), err = errno;

	printf("truncate: ftruncate of the publish log's memfd %s (%s)\n", r == 0 ? "succeeded" : "refused",
	       r == 0 ? "not sealed" : strerror(err));
	return r == 0 ? 1 : 0;
}

/*
 * A reader of many groups that never reads: subscribed (on shared memory)
 * to every group in the comma-separated list, one after the other, it
 * takes each group log and sits on it for `seconds`, reading neither its
 * logs nor its socket. What waits for it in the group logs must stay within
 * one subscriber queue.
 */
static int mode_hoard(struct shm *s, const char *groups, double seconds)
{
	char list[1024], *g, *save = NULL;
	struct timespec pause;
	unsigned n = 0, logs = 0;
	int k;

	snprintf(list, sizeof(list), "%s", groups);
	for (g = strtok_r(list, ",", &save); g; g = strtok_r(NULL, ",", &save), n++) {
		subscribe(s, g);
		if ((k = await_ok(s, NULL, NULL)) < 0)
			die("subscribing");
		logs += (unsigned)k;
	}
	printf("hoard: subscribed to %u groups, given %u group logs; reads nothing for %.1f s\n", n, logs, seconds);
	fflush(stdout);
	pause.tv_sec = (time_t)seconds;
	pause.tv_nsec = (long)((seconds - (double)pause.tv_sec) * 1e9);
	nanosleep(&pause, NULL);
	return logs == n ? 0 : 1;
}

/* Pages of [p, p + len) that are in memory (mincore: the memfd's pages). */
static size_t resident(uint8_t *p, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page, i, in = 0;
	unsigned char *vec = malloc(n);

	if (!vec || mincore(p, len, vec) < 0)
		die("mincore");
	for (i = 0; i < n; i++)
		in += vec[i] & 1;
	free(vec);
	return in;
}

/*
 * A client that keeps what pubd gave it after it is gone: connects n times
 * and each time maps both logs (with a group: subscribes to it and lets
 * deliveries wait there unread), closes every fd, half-closes the socket (or,
 * every other time, writes a bad record so that pubd ends the connection)
 * and reads it to its end (so pubd has let go of the connection before the
 * next), keeping the mappings. Whatever pubd wrote into them and did not
 * give back stays pinned for as long as they stay mapped. Prints how much
 * of them is still in memory at the end.
 */
/* Subscribed to group, until pubd has written at least `bytes` into the
 * deliver log (mapped at dlog), for at most 10 s. */
static void await_deliveries(struct shm *s, const char *group, const uint8_t *dlog, uint64_t bytes)
{
	const struct pub_shmlog_ctl *ctl = (const struct pub_shmlog_ctl *)dlog;
	struct timespec pause = {.tv_nsec = 1000000};
	unsigned i;

	subscribe(s, group);
	if (await_ok(s, NULL, NULL) < 0)
		die("subscribing");
	for (i = 0; i < 10000 && atomic_load(&ctl->tail) < bytes; i++)
		nanosleep(&pause, NULL);
}

static int mode_pin(struct shm *s, const char *path, const char *group, unsigned n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), live = 0, kept = 0, nmaps = 0;
	struct {
		uint8_t *p;
		size_t len;
	} *maps = calloc(2 * (size_t)n, sizeof(*maps));
	uint8_t buf[4096];
	unsigned i, k;

	if (!maps)
		die("calloc");
	for (i = 0; i < n; i++) {
		if (i)
			shm_open_logs(path, s);
		maps[nmaps].p = s->map;
		maps[nmaps++].len = s->len;
		maps[nmaps].p = map_log(s->fds[3], &maps[nmaps].len);
		nmaps++;
		if (group) /* deliveries it never reads */
			await_deliveries(s, group, maps[nmaps - 1].p, 16384);
		live = resident(maps[nmaps - 2].p, maps[nmaps - 2].len) +
		       resident(maps[nmaps - 1].p, maps[nmaps - 1].len);
		if (i % 2) {
			/* pubd ends this one (a record no writer writes), not we */
			uint64_t garbage = (uint64_t)7 << 32 | 48;

			memcpy(s->map + PUB_SHMLOG_CTL_LEN, &garbage, sizeof(garbage));
			ring(s);
		} else if (shutdown(s->sock, SHUT_WR) < 0) {
			die("shutdown");
		}
		for (k = 0; k < 6; k++)
			close(s->fds[k]);
		while (read(s->sock, buf, sizeof(buf)) > 0)
			;
		close(s->sock);
	}
	/* The last connection's end reaches pubd after our close (one pubd
	 * ended lingers until it sees us hang up): give pubd up to 5 s to let
	 * go of its logs, looking every millisecond, before counting. The
	 * others had the next connection's time. */
	for (k = 0; k < 5000 && nmaps && resident(maps[nmaps - 1].p, maps[nmaps - 1].len); k++)
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	for (k = 0; k < nmaps; k++) {
		kept += resident(maps[k].p, maps[k].len);
		munmap(maps[k].p, maps[k].len);
	}
	free(maps);
	printf("pin: %u connections gone, their %zu logs still mapped here: %zu KiB of them in memory (%zu KiB "
	       "for one while connected)\n",
	       n, nmaps, kept * page / 1024, live * page / 1024);
	return 0;
}

/* Let go of a connection: its fds, its publish log's mapping, the socket. */
static void shm_close_all(struct shm *s)
{
	int k;

	for (k = 0; k < 6; k++)
		close(s->fds[k]);
	munmap(s->map, s->len);
	close(s->sock);
}

/*
 * A reader that makes pubd retire group logs, one after the other, and
 * keeps each: n times it connects and subscribes to group until pubd hands
 * it a group log with the SUBSCRIBE, and a new one (another memfd: the
 * last one retired),
 * maps it read-only and reads nothing, then closes its previous connection
 * (keeping that one's mapping). With traffic in the group its log fills,
 * ends, and past limits.group_log_drain_ms pubd gives up on it and retires
 * the log; the next connection gets the new one. Every log but the last is
 * a retired one that the client still maps: prints how much of them is
 * still in memory at the end.
 */
static int mode_retire(struct shm *s, const char *path, const char *group, unsigned n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), kept = 0, most = 0;
	struct shm *prev = NULL, *cur = s, *spare = malloc(sizeof(*spare));
	struct {
		uint8_t *p;
		size_t len;
	} *maps = calloc(n, sizeof(*maps));
	struct timespec pause = {.tv_nsec = 20000000};
	struct pub_msg_shm m;
	struct stat st;
	ino_t ino = 0;
	unsigned i, tries;
	int fd;

	if (!maps || !spare)
		die("calloc");
	for (i = 0; i < n; i++) {
		/* While the last log drains, a SUBSCRIBE gets none: try again. */
		for (tries = 0;; tries++) {
			if (i || tries)
				shm_open_logs(path, cur);
			subscribe(cur, group);
			fd = -1;
			if (await_ok(cur, &m, &fd) == 1 && fd >= 0 && fstat(fd, &st) == 0 && (!i || st.st_ino != ino))
				break;
			if (fd >= 0)
				close(fd);
			shm_close_all(cur);
			if (tries == 1500)
				die("no group log within 30 s");
			nanosleep(&pause, NULL);
		}
		maps[i].len = pub_shmlog_map_len(m.capacity);
		maps[i].p = mmap(NULL, maps[i].len, PROT_READ, MAP_SHARED, fd, 0);
		if (maps[i].p == MAP_FAILED)
			die("mmap group log");
		close(fd);
		ino = st.st_ino;
		if (prev) {
			size_t in = resident(maps[i - 1].p, maps[i - 1].len);

			most = in > most ? in : most;
			shm_close_all(prev);
		}
		prev = cur;
		cur = cur == s ? spare : s;
	}
	/* Every log before the last was retired, and its reader is gone (pubd
	 * sees the last one go a moment later: look again for up to 3 s). */
	for (tries = 0; tries < 300; tries++) {
		for (kept = 0, i = 0; i + 1 < n; i++)
			kept += resident(maps[i].p, maps[i].len);
		if (!kept)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	}
	printf("retire: %u group logs taken on %u connections and kept mapped; the %u retired: %zu KiB of them "
	       "in memory (one held %zu KiB while read)\n",
	       n, n, n - 1, kept * page / 1024, most * page / 1024);
	shm_close_all(prev);
	free(spare);
	free(maps);
	return 0;
}

/* The publish-log position of the last record pubd delivered to the
 * observer (its payload), and how many. */
struct observer {
	struct shm c;
	uint8_t *gmap;
	size_t glen;
	struct pub_shmlog_reader gr;
	_Atomic uint64_t *slot;
	_Atomic uint64_t seen, delivered;
	_Atomic bool stop;
};

/* A reader of the group's group log: learns from the deliveries pubd
 * writes there, as pubd writes them, how far pubd has read the writer's
 * log (as an attacker would). */
static void *observe(void *arg)
{
	struct observer *o = arg;
	struct pub_deliverlog_piece p;
	struct pub_shmlog_view v;
	uint64_t pos;
	int r;

	while (!atomic_load(&o->stop)) {
		r = pub_shmlog_next(&o->gr, &v);
		if (r < 0) {
			errno = EPROTO;
			die("observer: group log");
		}
		if (r == 0) {
			sched_yield();
			continue;
		}
		if (pub_deliverlog_decode(&v, &p) == 0 && !p.move && p.len >= sizeof(pos)) {
			memcpy(&pos, p.data, sizeof(pos));
			atomic_store(&o->seen, pos);
			atomic_fetch_add(&o->delivered, 1);
		}
		pub_shmlog_consume(&o->gr, &v);
		atomic_store_explicit(o->slot, o->gr.pos, memory_order_release);
	}
	return NULL;
}

/* A connection on its socket alone (no shared memory), subscribed to
 * group and answered; it reads nothing more. */
static void plain_subscriber(const char *path, const char *group)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint8_t f[300];
	struct shm s = {.sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
	long k;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (s.sock < 0 || connect(s.sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	k = pub_proto_enc_hello(f, sizeof(f), 0, "silent", 6);
	if (k <= 0 || write(s.sock, f, (size_t)k) != k)
		die("hello");
	subscribe(&s, group);
	if (await_ok(&s, NULL, NULL) < 0)
		die("subscribing");
}

/* A second connection, subscribed to group on its group log. */
static void observer_open(struct observer *o, const char *path, const char *group)
{
	struct pub_msg_shm m;
	int fd;

	shm_open_logs(path, &o->c);
	subscribe(&o->c, group);
	fd = group_log_fd(&o->c, &m);
	o->glen = pub_shmlog_map_len(m.capacity);
	o->gmap = mmap(NULL, o->glen, PROT_READ, MAP_SHARED, fd, 0);
	if (o->gmap == MAP_FAILED)
		die("mmap group log");
	close(fd);
	if (pub_shmlog_reader_init(&o->gr, o->gmap, o->glen, m.capacity, m.max_record, m.start) < 0)
		die("group log reader");
	o->slot = pub_deliverlog_slot(map_log(o->c.fds[3], &(size_t){0}), m.slot);
}

/*
 * A writer that goes on after it hung up (a thread of the client, or a
 * process that shares the mapping): 1000 records rung in, then its socket
 * shut for writing, and on committing records for `seconds`, half a lap
 * ahead of what pubd has read (it learns that from a second connection
 * subscribed to group: each record's payload is its own position), giving
 * itself the room pubd has not given back. pubd must read what it left
 * within bounds, not for as long as the writer goes on.
 */
static int mode_hangon(struct shm *s, const char *path, const char *group, unsigned nsubs, double seconds,
		       const char *ready_path)
{
	static struct observer o;
	uint8_t glen = (uint8_t)strlen(group), *b;
	const uint32_t rec = PUB_PUBLOG_HEAD + glen + sizeof(uint64_t);
	double t0 = now_s(), thung = 0;
	uint64_t n = 0, pos, seen, lead = s->w.cap / 2;
	pthread_t th;

	/* nsubs subscribers on their sockets that never read: each record
	 * costs pubd a fan-out to every one, so the writer keeps ahead. */
	for (unsigned i = 0; i < nsubs; i++)
		plain_subscriber(path, group);
	observer_open(&o, path, group);
	if (pthread_create(&th, NULL, observe, &o) != 0)
		die("pthread_create");
	while (now_s() - t0 < seconds) {
		seen = atomic_load(&o.seen);
		if (s->w.tail > seen + lead) {
			sched_yield(); /* pubd is behind, or gave up reading */
			continue;
		}
		/* What pubd delivered it has read: that room is the writer's
		 * (pubd's own head does not move while it reads on). */
		atomic_store(&s->w.ctl->head, seen);
		s->w.head_seen = seen;
		pos = s->w.tail;
		b = pub_shmlog_claim(&s->w, PUB_SHMLOG_MSG, 0, sizeof(pos), rec);
		if (!b)
			continue;
		memcpy(b + pub_publog_put_head(b, 0, group, glen), &pos, sizeof(pos));
		pub_shmlog_commit(&s->w);
		n++;
		/* pubd is rung for the first 1000 only; the writer then gets
		 * half a lap ahead, and hangs up there, so that pubd has that
		 * much to read when it sees the hang-up. */
		if (n <= 1000)
			ring(s);
		else if (!thung && s->w.tail + 64 > seen + lead) {
			if (shutdown(s->sock, SHUT_WR) < 0)
				die("shutdown");
			thung = now_s();
			ready(ready_path);
		}
	}
	atomic_store(&o.stop, true);
	pthread_join(th, NULL);
	printf("hangon: hung up half a lap ahead and went on %.1f s: %llu records committed, %llu delivered\n",
	       thung ? now_s() - thung : 0.0, (unsigned long long)n, (unsigned long long)atomic_load(&o.delivered));
	return thung ? 0 : 1;
}

/*
 * Records pubd refuses with an answer (a req_id; a group of 200 bytes'
 * name that does not exist), committed for `seconds` as fast as the log
 * takes them, the socket never read: each answer is an ERROR queued for
 * the client. Its unread replies must stop pubd reading its log, as they
 * stop pubd reading its socket.
 */
static int mode_replies(struct shm *s, double seconds, const char *ready_path, bool hold)
{
	const uint32_t rec = PUB_PUBLOG_HEAD + 200 + 1;
	double t0 = now_s();
	char name[201];
	uint64_t n = 0;
	uint32_t req = 0;
	uint8_t *b;

	memset(name, 'u', 200);
	name[200] = '\0';
	ready(ready_path);
	while (now_s() - t0 < seconds) {
		b = pub_shmlog_claim(&s->w, PUB_SHMLOG_MSG, 0, 1, rec);
		if (!b) {
			/* pubd stopped reading (or is behind): wait for room,
			 * 100 ms at most, and try again until the time is up. */
			struct pollfd p = {.fd = s->fds[2], .events = POLLIN};

			if (pub_shmlog_wake_reader(&s->w))
				ring(s);
			if (pub_shmlog_writer_sleep(&s->w, rec) && poll(&p, 1, 100) > 0)
				drain(s->fds[2]);
			continue;
		}
		if (!++req)
			req = 1;
		b[pub_publog_put_head(b, req, name, 200)] = 'x';
		pub_shmlog_commit(&s->w);
		if (pub_shmlog_wake_reader(&s->w))
			ring(s);
		n++;
	}
	printf("replies: %llu records answered with an ERROR each committed in %.1f s, socket never read\n",
	       (unsigned long long)n, seconds);
	fflush(stdout);
	while (hold && getchar() != EOF)
		; /* ...and stays, its replies unread, until stdin ends */
	return 0;
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *group = "h", *ready_path = NULL;
	bool group_given = false, hold = false;
	double seconds = 3;
	unsigned n = 50;
	struct shm s;
	int i;

	if (argc < 2)
		goto usage;
	for (i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-s"))
			sock = argv[i + 1];
		else if (!strcmp(argv[i], "-g"))
			group = argv[i + 1], group_given = true;
		else if (!strcmp(argv[i], "-n"))
			n = (unsigned)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--hold"))
			hold = !strcmp(argv[i + 1], "yes");
		else if (!strcmp(argv[i], "--seconds"))
			seconds = strtod(argv[i + 1], NULL);
		else if (!strcmp(argv[i], "--ready"))
			ready_path = argv[i + 1];
		else
			goto usage;
	}
	if (!sock)
		goto usage;
	shm_open_logs(sock, &s);
	if (!strcmp(argv[1], "garbage"))
		return mode_garbage(&s, hold);
	if (!strcmp(argv[1], "midwrite"))
		return mode_midwrite(&s, group, n);
	if (!strcmp(argv[1], "doorbell"))
		return mode_doorbell(&s, seconds);
	if (!strcmp(argv[1], "truncate"))
		return mode_truncate(&s);
	if (!strcmp(argv[1], "rewrite"))
		return mode_rewrite(&s, group, n);
	if (!strcmp(argv[1], "dlog"))
		return mode_dlog(&s, group, seconds);
	if (!strcmp(argv[1], "glog"))
		return mode_glog(&s, group, seconds);
	if (!strcmp(argv[1], "hoard"))
		return mode_hoard(&s, group, seconds);
	if (!strcmp(argv[1], "pin"))
		return mode_pin(&s, sock, group_given ? group : NULL, n);
	if (!strcmp(argv[1], "retire"))
		return mode_retire(&s, sock, group, n);
	if (!strcmp(argv[1], "hangon"))
		return mode_hangon(&s, sock, group, n, seconds, ready_path);
	if (!strcmp(argv[1], "replies"))
		return mode_replies(&s, seconds, ready_path, hold);
usage:
	fprintf(stderr, "usage: hostile_shm "
			"garbage|midwrite|doorbell|truncate|rewrite|dlog|glog|hoard|pin|retire|hangon|replies\n"
			"       -s SOCK [-g G[,G...]] [-n N] [--seconds S] [--ready FILE]\n");
	return 2;
}
