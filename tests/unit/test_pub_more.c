/* SPDX-License-Identifier: MIT */
/*
 * libpub's PUB_MORE against a fake pubd in this process: a listening Unix
 * socket that answers HELLO with WELCOME and then only reads. It checks what
 * reaches the socket and when: held messages are not written until a publish
 * without PUB_MORE, pub_flush() or 64 KiB gathered; they arrive whole and in
 * order; and if the connection drops while some are held, the next call says
 * how many were lost.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake_pubd.h"
#include "proto.h"
#include "pub.h"

struct fake {
	char dir[64];
	char path[96];
	int lfd, cfd;
	pthread_t thread;
	uint8_t buf[1 << 20];
	size_t len; /* bytes read from the client and not yet taken */
};

/* Accept one client and do pubd's half of the handshake. */
static void *fake_accept(void *arg)
{
	struct fake *f = arg;

	f->cfd = accept(f->lfd, NULL, NULL);
	if (f->cfd < 0 || fake_read_hello(f->cfd) || fake_write_welcome(f->cfd))
		return NULL;
	return f;
}

static pub_client_t *fake_start(struct fake *f)
{
	struct pub_options o = {.flags = PUB_OPT_NO_RECONNECT};
	pub_client_t *c = NULL;
	void *ok = NULL;

	f->lfd = fake_listen("test_pub_more", f->dir, sizeof(f->dir), f->path, sizeof(f->path), 1);
	assert_true(f->lfd >= 0);
	f->cfd = -1;
	f->len = 0;
	assert_int_equal(pthread_create(&f->thread, NULL, fake_accept, f), 0);
	assert_int_equal(pub_connect(&c, f->path, &o), 0);
	assert_int_equal(pthread_join(f->thread, &ok), 0);
	assert_non_null(ok);
	return c;
}

static void fake_stop(struct fake *f, pub_client_t *c)
{
	pub_close(c);
	if (f->cfd >= 0)
		close(f->cfd);
	close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
}

/* Whether the client wrote anything, waiting at most ms. */
static bool fake_readable(struct fake *f, int ms)
{
	struct pollfd p = {.fd = f->cfd, .events = POLLIN};

	return poll(&p, 1, ms) == 1;
}

/* Read until `want` PUBLISH frames are in; check each is to `group` and
 * carries a 4-byte index, in order from `first`. */
static void fake_expect(struct fake *f, const char *group, unsigned want, uint32_t first, size_t size)
{
	unsigned got = 0;

	while (got < want) {
		uint8_t type;
		uint32_t blen;
		const uint8_t *body;
		size_t need = 0;
		int r = pub_proto_frame_peek(f->buf, f->len, sizeof(f->buf), &type, &blen, &body, &need);

		assert_true(r >= 0);
		if (r == 0) {
			ssize_t n;

			assert_true(fake_readable(f, 5000));
			n = read(f->cfd, f->buf + f->len, sizeof(f->buf) - f->len);
			assert_true(n > 0);
			f->len += (size_t)n;
			continue;
		}
		struct pub_msg_publish m;
		uint32_t idx;

		assert_int_equal(type, PUB_FRAME_PUBLISH);
		assert_int_equal(pub_proto_dec_publish(body, blen, &m), 0);
		assert_int_equal(m.req_id, 0);
		assert_int_equal(m.group.len, strlen(group));
		assert_memory_equal(m.group.ptr, group, m.group.len);
		assert_int_equal(m.payload_len, size);
		memcpy(&idx, m.payload, sizeof(idx));
		assert_int_equal(idx, first + got);
		got++;
		size_t flen = PUB_PROTO_HDR_LEN + blen;
		memmove(f->buf, f->buf + flen, f->len - flen);
		f->len -= flen;
	}
}

static int publish_index(pub_client_t *c, const char *group, uint32_t idx, size_t size, int flags)
{
	uint8_t payload[8192] = {0};

	memcpy(payload, &idx, sizeof(idx));
	return pub_publish(c, group, payload, size, flags);
}

static void held_until_a_publish_without_more(void **state)
{
	struct fake *f = *state;
	pub_client_t *c = fake_start(f);

	for (uint32_t i = 0; i < 10; i++)
		assert_int_equal(publish_index(c, "g", i, 100, PUB_MORE), 0);
	/* Nothing written yet, and pub_fd says there is something to write. */
	assert_false(fake_readable(f, 0));
	struct pollfd p = {.fd = pub_fd(c), .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_int_equal(publish_index(c, "g", 10, 100, 0), 0);
	fake_expect(f, "g", 11, 0, 100);
	assert_false(fake_readable(f, 0));
	fake_stop(f, c);
}

static void held_until_pub_flush(void **state)
{
	struct fake *f = *state;
	pub_client_t *c = fake_start(f);

	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(publish_index(c, "other", i, 8, PUB_MORE | PUB_NONBLOCK), 0);
	assert_false(fake_readable(f, 0));
	assert_int_equal(pub_flush(c, -1), 0);
	fake_expect(f, "other", 5, 0, 8);
	fake_stop(f, c);
}

static void written_once_64k_gather(void **state)
{
	struct fake *f = *state;
	pub_client_t *c = fake_start(f);
	uint32_t i = 0;

	/* 1 KiB messages: the 64th or so fills 64 KiB and goes out. */
	while (!fake_readable(f, 0)) {
		assert_true(i < 80);
		assert_int_equal(publish_index(c, "g", i++, 1024, PUB_MORE), 0);
	}
	assert_true(i >= 60);
	fake_expect(f, "g", i, 0, 1024);
	assert_false(fake_readable(f, 0));
	fake_stop(f, c);
}

static void large_messages_are_not_held(void **state)
{
	struct fake *f = *state;
	pub_client_t *c = fake_start(f);

	assert_int_equal(publish_index(c, "g", 0, 100, PUB_MORE), 0);
	assert_int_equal(publish_index(c, "g", 1, 8192, PUB_MORE), 0); /* the limit: held */
	assert_false(fake_readable(f, 0));
	static uint8_t big[8193];
	uint32_t idx = 2;
	memcpy(big, &idx, sizeof(idx));
	assert_int_equal(pub_publish(c, "g", big, sizeof(big), PUB_MORE), 0); /* written, the held first */
	fake_expect(f, "g", 1, 0, 100);
	fake_expect(f, "g", 1, 1, 8192);
	fake_expect(f, "g", 1, 2, sizeof(big));
	fake_stop(f, c);
}

static void lost_with_the_connection_is_reported(void **state)
{
	struct fake *f = *state;
	pub_client_t *c = fake_start(f);
	int r;

	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(publish_index(c, "g", i, 100, PUB_MORE), 0);
	/* pubd goes away with the three still in the handle. */
	shutdown(f->cfd, SHUT_RDWR);
	close(f->cfd);
	f->cfd = -1;
	r = pub_flush(c, -1);
	assert_int_equal(r, -ENOTCONN);
	assert_non_null(strstr(pub_errmsg(c), "3 messages held by PUB_MORE not sent"));
	fake_stop(f, c);
}

/* A publish's errors name it and its group (made only when one happens). */
static void a_publish_error_names_the_group(void **state)
{
	struct fake *f = *state;
	pub_client_t *c = fake_start(f);
	size_t len = (16 << 20) + 1; /* past the fake pubd's max_message */
	void *big = calloc(1, len);

	assert_non_null(big);
	assert_int_equal(pub_publish(c, "prices.eu", big, len, 0), -PUB_ETOOLARGE);
	if (strncmp(pub_errmsg(c), "publish 'prices.eu': message of ", 32))
		fail_msg("errmsg \"%s\"", pub_errmsg(c));
	free(big);
	fake_stop(f, c);
}

static int setup(void **state)
{
	*state = calloc(1, sizeof(struct fake));
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(held_until_a_publish_without_more, setup, teardown),
		cmocka_unit_test_setup_teardown(held_until_pub_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(written_once_64k_gather, setup, teardown),
		cmocka_unit_test_setup_teardown(large_messages_are_not_held, setup, teardown),
		cmocka_unit_test_setup_teardown(lost_with_the_connection_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(a_publish_error_names_the_group, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
