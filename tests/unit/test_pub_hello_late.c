/* SPDX-License-Identifier: MIT */
/*
 * pub_connect when pubd ends the connection for want of a HELLO in time
 * (limits.hello_timeout_ms: a client stopped or starved between connect and
 * HELLO), against a fake pubd in this process: it is a timeout, tried again
 * within connect_timeout_ms, not a protocol error an application takes as
 * fatal. The fake answers the first HELLO with that ERROR and closes, and
 * the next with WELCOME.
 */
#include <errno.h>
#include <pthread.h>
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

#include "fake_pubd.h"
#include "proto.h"
#include "pub.h"

struct fake {
	char dir[64];
	char path[96];
	int lfd;
	unsigned late; /* connections answered "too late" before one is welcomed */
	unsigned accepted;
	pthread_t thread;
};

static void *fake_serve(void *arg)
{
	static const char why[] = "no HELLO within limits.hello_timeout_ms (2000 ms)";
	struct fake *f = arg;
	uint8_t out[512];
	long n;
	int fd;

	for (;;) {
		fd = accept(f->lfd, NULL, NULL);
		if (fd < 0 || fake_read_hello(fd) < 0)
			return NULL;
		f->accepted++;
		if (f->accepted <= f->late) {
			n = pub_proto_enc_error(out, sizeof(out), 0, PUB_ERR_HELLO_LATE, why, sizeof(why) - 1);
			if (n > 0 && write(fd, out, (size_t)n) != n)
				n = -1;
			close(fd);
			if (n <= 0)
				return NULL;
			continue;
		}
		if (fake_write_welcome(fd))
			return NULL;
		/* Held open until the client closes it. */
		while (read(fd, out, sizeof(out)) > 0)
			;
		close(fd);
		return f;
	}
}

static void fake_start(struct fake *f, unsigned late)
{
	memset(f, 0, sizeof(*f));
	f->late = late;
	f->lfd = fake_listen("test_pub_hello_late", f->dir, sizeof(f->dir), f->path, sizeof(f->path), 4);
	assert_true(f->lfd >= 0);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_serve, f), 0);
}

static void fake_stop(struct fake *f)
{
	shutdown(f->lfd, SHUT_RDWR); /* a thread still in accept returns */
	pthread_join(f->thread, NULL);
	close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
}

static void told_too_late_it_connects_again(void **state)
{
	struct pub_options o = PUB_OPTIONS_INIT;
	struct fake f;
	pub_client_t *c = NULL;

	(void)state;
	o.transport = PUB_TRANSPORT_SOCKET;
	o.connect_timeout_ms = 5000;
	fake_start(&f, 1);
	assert_int_equal(pub_connect(&c, f.path, &o), 0);
	assert_int_equal(f.accepted, 2);
	pub_close(c);
	fake_stop(&f);
}

static void with_one_attempt_it_is_a_timeout(void **state)
{
	struct pub_options o = PUB_OPTIONS_INIT;
	struct fake f;
	pub_client_t *c = NULL;
	int r;

	(void)state;
	o.transport = PUB_TRANSPORT_SOCKET;
	o.connect_timeout_ms = 0;
	fake_start(&f, 1);
	r = pub_connect(&c, f.path, &o);
	print_message("pub_connect: %d (%s)\n", r, pub_strerror(r));
	assert_int_equal(r, -ETIMEDOUT);
	assert_null(c);
	fake_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(told_too_late_it_connects_again),
		cmocka_unit_test(with_one_attempt_it_is_a_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
