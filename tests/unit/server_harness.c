/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "msgbuf.h"
#include "server_harness.h"

static const char yaml[] = "groups:\n"
			   "  - name: open\n"
			   "    address: 239.81.0.1\n"
			   "  - name: closed\n"
			   "    address: 239.81.0.2\n"
			   "    publish: []\n";

static bool op_publish(void *ctx, struct pubd_client *origin, struct pubd_group *g, struct pubd_msgbuf *msg)
{
	struct calls *k = ctx;

	(void)origin;
	k->publish++;
	k->group = g;
	k->len = msg->len;
	if (k->hold && k->nheld < HELD_MAX)
		k->held[k->nheld++] = pubd_msgbuf_get(msg);
	return true; /* queued for the fabric: the server counts it pending */
}

static void op_publish_local(void *ctx, struct pubd_group *g, const uint8_t *data, size_t len)
{
	struct calls *k = ctx;

	(void)data;
	k->publish_local++;
	k->group = g;
	k->len = len;
}

static int op_changed(void *ctx, struct pubd_group *g)
{
	struct calls *k = ctx;

	k->changed++;
	k->group = g;
	return k->changed_ret;
}

static void op_closed(void *ctx, struct pubd_client *c, uint32_t tx_pending)
{
	struct calls *k = ctx;

	(void)c;
	k->closed++;
	k->closed_pending = tx_pending;
}

static int op_query(void *ctx, struct pub_table_builder *b, uint32_t req_id, uint8_t kind, const char *arg,
		    size_t arglen, char *err, size_t errcap)
{
	struct calls *k = ctx;

	(void)b, (void)req_id, (void)arg, (void)arglen, (void)err, (void)errcap;
	k->query++;
	k->kind = kind;
	return 0;
}

static int op_reload(void *ctx, char *err, size_t errcap)
{
	struct calls *k = ctx;

	k->reload++;
	if (!k->reload_fails)
		return 0;
	snprintf(err, errcap, "test.yaml:1:1: not today");
	return -EINVAL;
}

static const struct pubd_ipc_ops ops = {
	.publish = op_publish,
	.publish_local = op_publish_local,
	.subscribers_changed = op_changed,
	.client_closed = op_closed,
	.query = op_query,
	.reload = op_reload,
};

int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct pubd_config_errors errs = {0};
	struct pubd_ipc_env env;
	size_t i;

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/pubd-test-server.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/s.sock", f->dir);
	assert_int_equal(pubd_config_parse(&f->cfg, "test.yaml", yaml, strlen(yaml), NULL, &errs), 0);
	free(f->cfg.socket_path);
	f->cfg.socket_path = strdup(f->path);
	for (i = 0; i < f->cfg.ngroups; i++)
		assert_non_null(pubd_groups_add(&f->groups, &f->cfg.groups[i]));
	f->loop = pubd_loop_create();
	assert_non_null(f->loop);
	env = (struct pubd_ipc_env){.loop = f->loop,
				    .cfg = &f->cfg,
				    .groups = &f->groups,
				    .counters = f->counters,
				    .drops = &f->drops,
				    .ops = &ops,
				    .ctx = &f->calls};
	assert_int_equal(pubd_ipc_init(&f->srv, &env), 0);
	pubd_ipc_set_fabric(&f->srv, 1024, 0x5e4e, "none");
	*state = f;
	return 0;
}

int teardown(void **state)
{
	struct fixture *f = *state;

	pubd_ipc_close(&f->srv);
	while (f->calls.nheld) /* after the logs they may be lent from are gone */
		pubd_msgbuf_put(f->calls.held[--f->calls.nheld]);
	pubd_loop_destroy(f->loop);
	pubd_groups_free(&f->groups);
	pubd_config_free(&f->cfg);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* One loop turn and the server's flush, as the engine's idle pass does. */
void turn(struct fixture *f)
{
	pubd_loop_run_once(f->loop, 5);
	pubd_ipc_flush_all(&f->srv);
	pubd_ipc_settle(&f->srv);
}

int client(struct fixture *f)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

void send_frame(int fd, const void *p, long n)
{
	assert_true(n > 0);
	assert_int_equal(write(fd, p, (size_t)n), n);
}

/* The next frame from the server (turning it while none is there): its
 * type, and for OK/ERROR the code (0 for OK). */
uint8_t reply(struct fixture *f, int fd, uint32_t *code)
{
	static uint8_t buf[65536];
	static size_t have;
	static int last_fd = -1;
	const uint8_t *body;
	uint32_t len;
	uint8_t type;
	size_t need;
	int tries;

	if (fd != last_fd)
		have = 0; /* a new client: nothing buffered is its */
	last_fd = fd;
	for (tries = 0; tries < 400; tries++) {
		ssize_t n;

		if (pub_proto_frame_peek(buf, have, sizeof(buf), &type, &len, &body, &need) == 1) {
			struct pub_msg_error e;

			*code = 0;
			if (type == PUB_FRAME_ERROR && pub_proto_dec_error(body, len, &e) == 0)
				*code = e.code;
			memmove(buf, buf + PUB_PROTO_HDR_LEN + len, have - PUB_PROTO_HDR_LEN - len);
			have -= PUB_PROTO_HDR_LEN + len;
			return type;
		}
		turn(f);
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n > 0)
			have += (size_t)n;
	}
	fail_msg("no reply from the server");
	return 0;
}

int hello(struct fixture *f)
{
	uint8_t frame[300];
	uint32_t code;
	int fd = client(f);

	send_frame(fd, frame, pub_proto_enc_hello(frame, sizeof(frame), 0, "t", 1));
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_WELCOME);
	return fd;
}

uint8_t group_req(struct fixture *f, int fd, uint8_t type, const char *g, uint32_t *code)
{
	uint8_t frame[300];

	send_frame(fd, frame, pub_proto_enc_group_req(frame, sizeof(frame), type, 7, g, strlen(g)));
	return reply(f, fd, code);
}

void publish(int fd, uint32_t req_id, const char *g, size_t len)
{
	static uint8_t frame[PUB_PROTO_MAX_HEAD + 4096];
	long n = pub_proto_enc_publish_head(frame, sizeof(frame), req_id, g, strlen(g), len);

	assert_true(n > 0 && (size_t)n + len <= sizeof(frame));
	memset(frame + n, 'x', len);
	send_frame(fd, frame, n + (long)len);
}
