/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"
#include "test_daemon_harness.h"

/* Daemons started and not stopped, for hd_teardown. */
#define MAX_LIVE 8
static struct hd *live[MAX_LIVE];

static void track(struct hd *h, bool on)
{
	unsigned i;

	for (i = 0; i < MAX_LIVE; i++) {
		if (on && !live[i]) {
			live[i] = h;
			return;
		}
		if (!on && live[i] == h)
			live[i] = NULL;
	}
}

int hd_teardown(void **state)
{
	unsigned i;

	(void)state;
	for (i = 0; i < MAX_LIVE; i++)
		if (live[i])
			hd_stop(live[i]);
	return 0;
}

uint64_t hd_deadline(int ms)
{
	return pubd_now_ns() + (uint64_t)ms * 1000000ull;
}

bool hd_past(uint64_t deadline)
{
	return pubd_now_ns() >= deadline;
}

static int write_config(struct hd *h, const char *fabric_extra, const char *body)
{
	FILE *f = fopen(h->cfg_path, "w");

	if (!f)
		return -errno;
	fprintf(f,
		"daemon:\n  socket: %s\n  log_level: err\n"
		"fabric:\n  type: udp\n  heartbeat_ms: 10\n%s"
		"%s",
		h->sock_path, fabric_extra ? fabric_extra : "", body ? body : "");
	fclose(f);
	return 0;
}

int hd_start(struct hd *h, const char *fabric_extra, const char *body)
{
	struct pubd_init_opts opts = {.fabric = &pubd_fabric_fake_ops};
	int err;

	/* As main.c does: a client gone mid-write must not end the process. */
	signal(SIGPIPE, SIG_IGN);
	memset(h, 0, sizeof(*h));
	/* tmpfs where there is one: fuzzers rewrite the config for reloads
	 * thousands of times a second, and a disk file pays for writeback. */
	snprintf(h->dir, sizeof(h->dir), "%s/fake-hd-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(h->dir))
		return -errno;
	snprintf(h->cfg_path, sizeof(h->cfg_path), "%s/pubd.yaml", h->dir);
	snprintf(h->sock_path, sizeof(h->sock_path), "%s/pubd.sock", h->dir);
	err = write_config(h, fabric_extra, body);
	if (err < 0)
		return err;
	err = pubd_init_with(&h->d, h->cfg_path, &opts);
	h->up = true;
	track(h, true);
	if (err < 0) {
		hd_stop(h);
		return err;
	}
	h->fk = pubd_fake_of(h->d.fabric);
	hd_settle(h, 20); /* join events */
	return 0;
}

int hd_reload(struct hd *h, const char *fabric_extra, const char *body)
{
	int err = write_config(h, fabric_extra, body);

	if (err < 0)
		return err;
	err = pubd_reload(&h->d, NULL, 0);
	hd_settle(h, 20);
	return err;
}

void hd_stop(struct hd *h)
{
	if (h->up)
		pubd_close(&h->d);
	h->up = false;
	track(h, false);
	unlink(h->cfg_path);
	unlink(h->sock_path);
	rmdir(h->dir);
}

int hd_turn(struct hd *h, int timeout_ms)
{
	return pubd_loop_run_once(h->d.loop, timeout_ms);
}

void hd_settle(struct hd *h, int max)
{
	while (max-- > 0 && hd_turn(h, 0) > 0) {
	}
}

struct pubd_group *hd_group(struct hd *h, const char *name)
{
	return pubd_groups_by_name(&h->d.groups, name, strlen(name));
}

static int connect_socket(struct hd *h, struct hc *c, int rcvbuf)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int err;

	memset(c, 0, sizeof(*c));
	c->h = h;
	c->next_req = 1;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (rcvbuf > 0)
		setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h->sock_path);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(c->fd);
		c->fd = -1;
		return err;
	}
	fcntl(c->fd, F_SETFL, O_NONBLOCK);
	return 0;
}

int hc_connect_nowait(struct hd *h, struct hc *c)
{
	return connect_socket(h, c, 0);
}

int hc_connect(struct hd *h, struct hc *c, int rcvbuf)
{
	/* Accepted, not connected now: the daemon may close an earlier
	 * client in the same turn (nclients would not change). */
	uint64_t before = h->d.counters[PUBD_CTR_CLIENTS_ACCEPTED];
	uint64_t dl = hd_deadline(2000);
	int err = connect_socket(h, c, rcvbuf);

	if (err < 0)
		return err;
	while (h->d.counters[PUBD_CTR_CLIENTS_ACCEPTED] == before && !hd_past(dl))
		hd_turn(h, 10);
	return h->d.counters[PUBD_CTR_CLIENTS_ACCEPTED] > before ? 0 : -ETIMEDOUT;
}

void hc_close(struct hc *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

long hc_try_write(struct hc *c, const void *p, size_t n)
{
	ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);

	if (w < 0)
		return errno == EAGAIN ? 0 : -1;
	return (long)w;
}

int hc_write(struct hc *c, const void *p, size_t n, int deadline_ms)
{
	const uint8_t *b = p;
	uint64_t dl = hd_deadline(deadline_ms);
	long w;

	while (n) {
		w = hc_try_write(c, b, n);
		if (w < 0)
			return -1;
		b += w;
		n -= (size_t)w;
		if (n) {
			if (hd_past(dl))
				return -1;
			hd_turn(c->h, 1);
		}
	}
	return 0;
}

/* Read what the socket has; 1 something, 0 nothing, -1 EOF/error. */
static int fill(struct hc *c)
{
	ssize_t r;

	if (c->cap - c->len < 65536) {
		size_t cap = c->cap ? c->cap * 2 : 131072;
		uint8_t *v = realloc(c->buf, cap);

		if (!v)
			return -1;
		c->buf = v;
		c->cap = cap;
	}
	r = read(c->fd, c->buf + c->len, c->cap - c->len);
	if (r > 0) {
		c->len += (size_t)r;
		return 1;
	}
	if (r == 0)
		return -1;
	return errno == EAGAIN ? 0 : -1;
}

int hc_next(struct hc *c, uint8_t *type, const uint8_t **body, uint32_t *len, int deadline_ms)
{
	uint64_t dl = hd_deadline(deadline_ms);
	size_t need;
	int r;

	for (;;) {
		r = c->len ? pub_proto_frame_peek(c->buf, c->len, 1u << 30, type, len, body, &need) : 0;
		if (r == 1)
			return 1;
		if (r < 0)
			return -1;
		r = fill(c);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		if (hd_past(dl))
			return 0;
		hd_turn(c->h, 1);
	}
}

void hc_pop(struct hc *c)
{
	uint8_t type;
	uint32_t len;
	const uint8_t *body;
	size_t need, n;

	if (pub_proto_frame_peek(c->buf, c->len, 1u << 30, &type, &len, &body, &need) != 1)
		return;
	n = PUB_PROTO_HDR_LEN + len;
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

int hc_hello(struct hc *c, const char *name)
{
	uint8_t buf[512], type;
	const uint8_t *body;
	uint32_t len;
	long n = pub_proto_enc_hello(buf, sizeof(buf), 0, name, strlen(name));

	if (n <= 0 || hc_write(c, buf, (size_t)n, 2000) < 0)
		return -1;
	if (hc_next(c, &type, &body, &len, 2000) != 1)
		return -1;
	hc_pop(c);
	return type == PUB_FRAME_WELCOME ? 0 : -1;
}

int hc_group_req(struct hc *c, uint8_t type, const char *group, uint64_t *delivers)
{
	uint8_t buf[512], t;
	const uint8_t *body;
	uint32_t len, req = c->next_req++;
	long n = pub_proto_enc_group_req(buf, sizeof(buf), type, req, group, strlen(group));
	struct pub_msg_ok ok;

	if (n <= 0 || hc_write(c, buf, (size_t)n, 2000) < 0)
		return -1;
	for (;;) {
		if (hc_next(c, &t, &body, &len, 2000) != 1)
			return -1;
		if (t == PUB_FRAME_DELIVER) {
			if (delivers)
				++*delivers;
			hc_pop(c);
			continue;
		}
		if (t == PUB_FRAME_OK && pub_proto_dec_ok(body, len, &ok) == 0 && ok.req_id == req) {
			hc_pop(c);
			return 0;
		}
		hc_pop(c);
		return -1;
	}
}

size_t hc_enc_publish(uint8_t *out, size_t cap, const char *group, const void *payload, size_t len)
{
	long n = pub_proto_enc_publish_head(out, cap, 0, group, strlen(group), len);

	if (n <= 0 || (size_t)n + len > cap)
		return 0;
	if (len) /* payload may be NULL for an empty message, or already lie in out */
		memmove(out + n, payload, len);
	return (size_t)n + len;
}
