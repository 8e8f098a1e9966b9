/* SPDX-License-Identifier: MIT */
/*
 * The IPC server on its own: no engine, no fabric. It is built from
 * pubd_server (core and sys below it) and talks up only through the ops
 * table, so a table that records its calls is the whole engine here. Each
 * test drives a real client on the real socket and checks which op the
 * server called, with what, and what the client was answered.
 */
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

#include "config.h"
#include "groups.h"
#include "ipc.h"
#include "loop.h"
#include "proto.h"
#include "stats.h"

static const char yaml[] = "groups:\n"
			   "  - name: open\n"
			   "    address: 239.81.0.1\n"
			   "  - name: closed\n"
			   "    address: 239.81.0.2\n"
			   "    publish: []\n";

/* What the server asked of its engine. */
struct calls {
	unsigned publish, changed, closed, query, reload;
	struct pubd_group *group;
	size_t len;
	uint32_t closed_pending;
	uint8_t kind;
	bool reload_fails;
};

struct fixture {
	char dir[64], path[96];
	struct pubd_config cfg;
	struct pubd_groups groups;
	struct pubd_loop *loop;
	uint64_t counters[PUBD_CTR__COUNT];
	struct pubd_drops drops;
	struct pubd_ipc srv;
	struct calls calls;
};

static bool op_publish(void *ctx, struct pubd_client *origin, struct pubd_group *g, struct pubd_msgbuf *msg)
{
	struct calls *k = ctx;

	(void)origin;
	k->publish++;
	k->group = g;
	k->len = msg->len;
	return true; /* queued for the fabric: the server counts it pending */
}

static int op_changed(void *ctx, struct pubd_group *g)
{
	struct calls *k = ctx;

	k->changed++;
	k->group = g;
	return 0;
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
	.subscribers_changed = op_changed,
	.client_closed = op_closed,
	.query = op_query,
	.reload = op_reload,
};

static int setup(void **state)
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

static int teardown(void **state)
{
	struct fixture *f = *state;

	pubd_ipc_close(&f->srv);
	pubd_loop_destroy(f->loop);
	pubd_groups_free(&f->groups);
	pubd_config_free(&f->cfg);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* One loop turn and the server's flush, as the engine's idle pass does. */
static void turn(struct fixture *f)
{
	pubd_loop_run_once(f->loop, 5);
	pubd_ipc_flush_all(&f->srv);
}

static int client(struct fixture *f)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void send_frame(int fd, const void *p, long n)
{
	assert_true(n > 0);
	assert_int_equal(write(fd, p, (size_t)n), n);
}

/* The next frame from the server (turning it while none is there): its
 * type, and for OK/ERROR the code (0 for OK). */
static uint8_t reply(struct fixture *f, int fd, uint32_t *code)
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

static int hello(struct fixture *f)
{
	uint8_t frame[300];
	uint32_t code;
	int fd = client(f);

	send_frame(fd, frame, pub_proto_enc_hello(frame, sizeof(frame), 0, "t", 1));
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_WELCOME);
	return fd;
}

static uint8_t group_req(struct fixture *f, int fd, uint8_t type, const char *g, uint32_t *code)
{
	uint8_t frame[300];

	send_frame(fd, frame, pub_proto_enc_group_req(frame, sizeof(frame), type, 7, g, strlen(g)));
	return reply(f, fd, code);
}

static void publish(int fd, uint32_t req_id, const char *g, size_t len)
{
	static uint8_t frame[PUB_PROTO_MAX_HEAD + 4096];
	long n = pub_proto_enc_publish_head(frame, sizeof(frame), req_id, g, strlen(g), len);

	assert_true(n > 0 && (size_t)n + len <= sizeof(frame));
	memset(frame + n, 'x', len);
	send_frame(fd, frame, n + (long)len);
}

/* The first subscriber and the last one's leaving are what the engine
 * hears of subscriptions; a second subscribe is answered without it. */
static void subscriptions_reach_the_engine(void **state)
{
	struct fixture *f = *state;
	uint32_t code;
	int fd = hello(f);

	assert_int_equal(group_req(f, fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.changed, 1);
	assert_ptr_equal(f->calls.group, pubd_groups_by_name(&f->groups, "open", 4));
	assert_int_equal(f->calls.group->nsubs, 1);
	assert_int_equal(group_req(f, fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.changed, 1);
	assert_int_equal(group_req(f, fd, PUB_FRAME_SUBSCRIBE, "nosuch", &code), PUB_FRAME_ERROR);
	assert_int_equal(code, PUB_ERR_NO_GROUP);
	assert_int_equal(group_req(f, fd, PUB_FRAME_UNSUBSCRIBE, "open", &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.changed, 2);
	assert_int_equal(f->calls.group->nsubs, 0);
	close(fd);
}

/* A publish that passes the server's checks goes to the engine whole;
 * refused ones never do, and are counted. The engine's "queued" is what
 * the server holds the client's closing to (client_closed's pending). */
static void publishes_reach_the_engine_checked(void **state)
{
	struct fixture *f = *state;
	uint32_t code;
	int fd = hello(f);

	publish(fd, 1, "open", 100);
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.publish, 1);
	assert_int_equal(f->calls.len, 100);
	publish(fd, 2, "closed", 10); /* publish: [] */
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_ERROR);
	assert_int_equal(code, PUB_ERR_ACL);
	publish(fd, 3, "nosuch", 10);
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_ERROR);
	assert_int_equal(code, PUB_ERR_NO_GROUP);
	assert_int_equal(f->calls.publish, 1);
	assert_int_equal(f->counters[PUBD_CTR_MSG_DROPPED], 2);
	assert_int_equal(f->drops.by_reason[PUB_DROP_NO_GROUP], 1);
	close(fd);
	while (f->srv.nclients)
		turn(f);
	assert_int_equal(f->calls.closed, 1);
	assert_int_equal(f->calls.closed_pending, 1);
}

/* RELOAD is a command (the reload op), not a query; its errors go back to
 * the client. Queries go to the query op with their kind. */
static void reload_is_a_command_and_queries_go_to_the_query_op(void **state)
{
	struct fixture *f = *state;
	uint8_t frame[300];
	uint32_t code;
	int fd = hello(f);

	send_frame(fd, frame, pub_proto_enc_query(frame, sizeof(frame), 9, PUB_QUERY_RELOAD, "", 0));
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.reload, 1);
	assert_int_equal(f->calls.query, 0);
	f->calls.reload_fails = true;
	send_frame(fd, frame, pub_proto_enc_query(frame, sizeof(frame), 10, PUB_QUERY_RELOAD, "", 0));
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_ERROR);
	assert_int_equal(code, PUB_ERR_CONFIG);
	send_frame(fd, frame, pub_proto_enc_query(frame, sizeof(frame), 11, PUB_QUERY_GROUPS, "", 0));
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_OK);
	assert_int_equal(f->calls.query, 1);
	assert_int_equal(f->calls.kind, PUB_QUERY_GROUPS);
	assert_int_equal(f->calls.reload, 2);
	close(fd);
}

/* The clients as queries see them: through the iterator, not the struct. */
static void clients_are_read_through_the_iterator(void **state)
{
	struct fixture *f = *state;
	struct pubd_client_info ci;
	const struct pubd_client *c;
	uint32_t code;
	int fd = hello(f), n = 0;

	assert_int_equal(group_req(f, fd, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	for (c = pubd_ipc_clients_first(&f->srv); c; c = pubd_ipc_clients_next(c)) {
		pubd_ipc_client_info(c, &ci);
		assert_string_equal(ci.name, "t");
		assert_int_equal(ci.uid, getuid());
		assert_int_equal(ci.nsubs, 1);
		assert_string_equal(ci.subs[0]->group->name, "open");
		assert_int_equal(pubd_ipc_queued_for(ci.subs[0]), 0);
		n++;
	}
	assert_int_equal(n, 1);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(subscriptions_reach_the_engine, setup, teardown),
		cmocka_unit_test_setup_teardown(publishes_reach_the_engine_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(reload_is_a_command_and_queries_go_to_the_query_op, setup, teardown),
		cmocka_unit_test_setup_teardown(clients_are_read_through_the_iterator, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
