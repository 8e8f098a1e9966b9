/* SPDX-License-Identifier: MIT */
/*
 * The IPC server on its own: no engine, no fabric. It is built from
 * pubd_server (core and sys below it) and talks up only through the ops
 * table, so a table that records its calls is the whole engine here. Each
 * test drives a real client on the real socket and checks which op the
 * server called, with what, and what the client was answered.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_harness.h"

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

/* The fabric is still becoming a full member (subscribers_changed answers
 * 1): the SUBSCRIBE is answered when the engine says it receives, or when
 * the subscription ends first, never before. */
static void subscribe_waits_for_the_fabric(void **state)
{
	struct fixture *f = *state;
	uint8_t frame[300], buf[64];
	uint32_t code;
	int fd = hello(f);
	struct pubd_group *g = pubd_groups_by_name(&f->groups, "open", 4);

	f->calls.changed_ret = 1;
	send_frame(fd, frame, pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_SUBSCRIBE, 7, "open", 4));
	for (int i = 0; i < 20; i++)
		turn(f);
	assert_int_equal(f->calls.changed, 1);
	assert_int_equal(g->nsubs, 1);
	assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), -1); /* no answer yet */
	pubd_ipc_group_listening(&f->srv, g);
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_OK);
	pubd_ipc_group_listening(&f->srv, g); /* answered once */
	assert_int_equal(group_req(f, fd, PUB_FRAME_UNSUBSCRIBE, "open", &code), PUB_FRAME_OK);

	/* Ended while waiting: its OK comes first, then the UNSUBSCRIBE's. */
	send_frame(fd, frame, pub_proto_enc_group_req(frame, sizeof(frame), PUB_FRAME_SUBSCRIBE, 8, "open", 4));
	for (int i = 0; i < 20; i++)
		turn(f);
	assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(group_req(f, fd, PUB_FRAME_UNSUBSCRIBE, "open", &code), PUB_FRAME_OK);
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_OK);
	assert_int_equal(g->nsubs, 0);
	f->calls.changed_ret = 0;
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

/* ---- limits.hello_timeout_ms ---- */

static uint64_t ms_since(uint64_t t0)
{
	return (pubd_now_ns() - t0) / 1000000;
}

/* Turn the server until n connections were closed for want of a HELLO,
 * or 3 s passed. */
static void wait_hello_timeouts(struct fixture *f, uint64_t n)
{
	uint64_t t0 = pubd_now_ns();

	while (f->counters[PUBD_CTR_CLIENTS_HELLO_TIMEOUT] < n && ms_since(t0) < 3000)
		turn(f);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_HELLO_TIMEOUT], n);
}

/* Told why (an ERROR), then the end of the connection. */
static void assert_closed_with_error(struct fixture *f, int fd, uint32_t want)
{
	uint32_t code;
	char c;

	assert_int_equal(reply(f, fd, &code), PUB_FRAME_ERROR);
	assert_int_equal(code, want);
	assert_int_equal(read(fd, &c, 1), 0);
	close(fd);
}

/* A connection that says nothing and one that sends half a HELLO and stops
 * are closed once limits.hello_timeout_ms has passed since they were
 * accepted, not before, and counted; one that said HELLO stays, however
 * long it idles. */
static void connections_without_hello_are_closed_at_the_deadline(void **state)
{
	struct fixture *f = *state;
	uint64_t t0 = pubd_now_ns();
	uint8_t frame[300];
	long n = pub_proto_enc_hello(frame, sizeof(frame), 0, "half", 4);
	uint32_t code;
	int silent, half, known;

	f->cfg.hello_timeout_ms = 200;
	silent = client(f);
	half = client(f);
	send_frame(half, frame, n / 2);
	known = hello(f);
	turn(f);
	assert_int_equal(f->srv.nclients, 3);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_HELLO_TIMEOUT], 0);
	wait_hello_timeouts(f, 2);
	assert_true(ms_since(t0) >= 200);
	assert_closed_with_error(f, silent, PUB_ERR_HELLO_LATE);
	assert_closed_with_error(f, half, PUB_ERR_HELLO_LATE);
	assert_int_equal(f->srv.nclients, 1);
	/* Five deadlines later the client that said HELLO is still served. */
	while (ms_since(t0) < 1000)
		turn(f);
	pubd_ipc_tick(&f->srv, pubd_now_ns());
	assert_int_equal(group_req(f, known, PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
	assert_int_equal(f->srv.nclients, 1);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_HELLO_TIMEOUT], 2);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_REJECTED], 0);
	close(known);
}

/* Silent connections hold every slot (max_clients and, as this test runs
 * as the server's own user, the operator's reserve): the next client is
 * refused, and once their deadline has passed a client gets in. */
static void silent_connections_filling_max_clients_give_way(void **state)
{
	struct fixture *f = *state;
	uint64_t t0;
	uint32_t code;
	int fds[16], i, n = 0, fd;

	f->cfg.hello_timeout_ms = 300;
	f->cfg.max_clients = 2;
	t0 = pubd_now_ns();
	/* Connect until the server refuses one. */
	for (;;) {
		assert_true(n < 16);
		fd = client(f);
		turn(f);
		if (f->counters[PUBD_CTR_CLIENTS_REFUSED])
			break;
		fds[n++] = fd;
	}
	assert_true(ms_since(t0) < 300); /* all of them before the first deadline */
	assert_int_equal(f->srv.nclients, n);
	assert_true(n > 2);
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_ERROR);
	assert_int_equal(code, PUB_ERR_BUSY);
	close(fd);
	wait_hello_timeouts(f, (uint64_t)n);
	for (i = 0; i < n; i++)
		assert_closed_with_error(f, fds[i], PUB_ERR_HELLO_LATE);
	fd = hello(f);
	assert_int_equal(f->srv.nclients, 1);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_REFUSED], 1);
	close(fd);
}

/* A reload that shortens limits.hello_timeout_ms applies to a connection
 * already waiting (at the next tick at the latest). */
static void a_shorter_hello_timeout_applies_to_waiting_connections(void **state)
{
	struct fixture *f = *state;
	uint64_t t0 = pubd_now_ns();
	int fd;

	f->cfg.hello_timeout_ms = 600000;
	fd = client(f);
	while (ms_since(t0) < 150)
		turn(f);
	assert_int_equal(f->srv.nclients, 1);
	f->cfg.hello_timeout_ms = 100; /* as a reload does: the config in place */
	pubd_ipc_tick(&f->srv, pubd_now_ns());
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_HELLO_TIMEOUT], 1);
	assert_closed_with_error(f, fd, PUB_ERR_HELLO_LATE);
	assert_int_equal(f->srv.nclients, 0);
}

/* A HELLO sent in time but not read yet when the deadline is swept (the
 * loop was busy: a flood of connections kept it accepting) is read then,
 * and the client served. Ended unread, root's pubctl failed under a
 * connect-and-close flood (hostile c_connect_flood). */
static void a_hello_unread_at_the_deadline_is_read_first(void **state)
{
	struct fixture *f = *state;
	uint64_t t0 = pubd_now_ns();
	uint8_t frame[300];
	long n = pub_proto_enc_hello(frame, sizeof(frame), 0, "late", 4);
	uint32_t code;
	int fd;

	f->cfg.hello_timeout_ms = 100;
	fd = client(f);
	turn(f);
	assert_int_equal(f->srv.nclients, 1);
	send_frame(fd, frame, n);
	/* The deadline passes with the HELLO in the socket, the loop not
	 * turned; then the sweep comes before the client's read. */
	while (ms_since(t0) < 150)
		poll(NULL, 0, 10);
	pubd_ipc_tick(&f->srv, pubd_now_ns());
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_HELLO_TIMEOUT], 0);
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_WELCOME);
	assert_int_equal(f->srv.nclients, 1);
	close(fd);
}

/* A turn accepts a batch of the connections waiting, not all of them: a
 * flood of connections must leave the loop to the clients already in. */
static void a_turn_accepts_a_batch(void **state)
{
	struct fixture *f = *state;
	int fds[300], i;

	for (i = 0; i < 300; i++)
		fds[i] = client(f);
	turn(f);
	print_message("one turn took %u of 300 waiting connections\n", f->srv.nclients);
	assert_true(f->srv.nclients > 0 && f->srv.nclients < 300);
	for (i = 0; i < 20 && f->srv.nclients < 300; i++)
		turn(f);
	assert_int_equal(f->srv.nclients, 300);
	for (i = 0; i < 300; i++)
		close(fds[i]);
}

/* ---- limits.max_clients_per_uid ---- */

/* Two uids no one else uses, for the test's connections. */
#define UID_A 60601
#define UID_B 60602

/* Connections as other uids: the test (as root) takes the uid as its
 * effective one for the connect, which is what SO_PEERCRED reports, and
 * lets them at the socket. Without root there is no other uid to be. */
static bool may_be_others(struct fixture *f)
{
	if (geteuid() != 0)
		return false;
	assert_int_equal(chmod(f->dir, 0711), 0);
	assert_int_equal(chmod(f->path, 0666), 0);
	return true;
}

static int client_as(struct fixture *f, uid_t uid)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), rc;

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	assert_int_equal(seteuid(uid), 0);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	assert_int_equal(seteuid(0), 0);
	assert_int_equal(rc, 0);
	return fd;
}

static int hello_as(struct fixture *f, uid_t uid)
{
	uint8_t frame[300];
	uint32_t code;
	int fd = client_as(f, uid);

	send_frame(fd, frame, pub_proto_enc_hello(frame, sizeof(frame), 0, "t", 1));
	assert_int_equal(reply(f, fd, &code), PUB_FRAME_WELCOME);
	return fd;
}

/* A uid holding limits.max_clients_per_uid connections (one of them silent:
 * before HELLO it counts too) has its next one refused as a full server
 * refuses (BUSY), counted apart, while another uid gets in and root is not
 * held to it; one of the uid's closing lets a new one in. */
static void a_uid_at_its_cap_is_refused_and_others_get_in(void **state)
{
	struct fixture *f = *state;
	int a[3], root[4], b, fd, i;

	if (!may_be_others(f))
		skip();
	f->cfg.max_clients = 16;
	f->cfg.max_clients_per_uid = 3; /* as a reload sets it */
	a[0] = hello_as(f, UID_A);
	a[1] = hello_as(f, UID_A);
	a[2] = client_as(f, UID_A);
	turn(f);
	assert_int_equal(f->srv.nclients, 3);
	fd = client_as(f, UID_A);
	assert_closed_with_error(f, fd, PUB_ERR_BUSY);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_REFUSED_PER_UID], 1);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_REFUSED], 0);
	assert_int_equal(f->srv.nclients, 3);
	b = hello_as(f, UID_B);
	for (i = 0; i < 4; i++)
		root[i] = hello_as(f, 0);
	assert_int_equal(f->srv.nclients, 8);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_REFUSED_PER_UID], 1);

	close(a[0]);
	while (f->srv.nclients > 7)
		turn(f);
	a[0] = hello_as(f, UID_A);
	fd = client_as(f, UID_A);
	assert_closed_with_error(f, fd, PUB_ERR_BUSY);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_REFUSED_PER_UID], 2);
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_REFUSED], 0);

	for (i = 0; i < 3; i++)
		close(a[i]);
	for (i = 0; i < 4; i++)
		close(root[i]);
	close(b);
	while (f->srv.nclients)
		turn(f);
	assert_int_equal(pubd_uid_count_get(&f->srv.per_uid, UID_A), 0);
	assert_int_equal(f->srv.per_uid.n, 0);
}

/* A reload that lowers the cap leaves the connections made: they are
 * served, and only the next is refused. */
static void a_lower_cap_keeps_connections_made(void **state)
{
	struct fixture *f = *state;
	uint32_t code;
	int a[3], fd, i;

	if (!may_be_others(f))
		skip();
	for (i = 0; i < 3; i++)
		a[i] = hello_as(f, UID_A);
	f->cfg.max_clients_per_uid = 1;
	fd = client_as(f, UID_A);
	assert_closed_with_error(f, fd, PUB_ERR_BUSY);
	for (i = 0; i < 3; i++) {
		assert_int_equal(group_req(f, a[i], PUB_FRAME_SUBSCRIBE, "open", &code), PUB_FRAME_OK);
		close(a[i]);
	}
	assert_int_equal(f->counters[PUBD_CTR_CLIENTS_REFUSED_PER_UID], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(subscriptions_reach_the_engine, setup, teardown),
		cmocka_unit_test_setup_teardown(subscribe_waits_for_the_fabric, setup, teardown),
		cmocka_unit_test_setup_teardown(publishes_reach_the_engine_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(reload_is_a_command_and_queries_go_to_the_query_op, setup, teardown),
		cmocka_unit_test_setup_teardown(clients_are_read_through_the_iterator, setup, teardown),
		cmocka_unit_test_setup_teardown(connections_without_hello_are_closed_at_the_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(silent_connections_filling_max_clients_give_way, setup, teardown),
		cmocka_unit_test_setup_teardown(a_hello_unread_at_the_deadline_is_read_first, setup, teardown),
		cmocka_unit_test_setup_teardown(a_turn_accepts_a_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(a_shorter_hello_timeout_applies_to_waiting_connections, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_uid_at_its_cap_is_refused_and_others_get_in, setup, teardown),
		cmocka_unit_test_setup_teardown(a_lower_cap_keeps_connections_made, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
