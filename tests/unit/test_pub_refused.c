/* SPDX-License-Identifier: MIT */
/*
 * libpub refused at the door, against a fake pubd in this process: it
 * accepts, says why in an ERROR (as pubd does out of fds or past
 * limits.max_clients) and closes at once. The client's HELLO races that
 * close: written before it, HELLO is answered by the ERROR; written after
 * it, the write fails (EPIPE, ECONNRESET) while the ERROR still waits to be
 * read. Either way pub_connect must report pubd's words. Before libpub read
 * what was left, the second order said "Broken pipe" (seen in CI and by the
 * operator audit, about one connection in ten): so the race is run many
 * times.
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

#include "proto.h"
#include "pub.h"

#define WHY    "pubd is out of file descriptors; try again later"
#define ROUNDS 300

struct door {
	int lfd;
	unsigned rounds;
};

/* pubd's refusal, ROUNDS times: accept, the ERROR, close. */
static void *refuse_all(void *arg)
{
	struct door *d = arg;
	uint8_t out[256];
	long n = pub_proto_enc_error(out, sizeof(out), 0, PUB_ERR_INTERNAL, WHY, strlen(WHY));

	for (unsigned i = 0; i < d->rounds; i++) {
		int fd = accept(d->lfd, NULL, NULL);

		if (fd < 0)
			return NULL;
		if (n <= 0 || write(fd, out, (size_t)n) != n) {
			close(fd);
			return NULL;
		}
		close(fd);
	}
	return d;
}

static void refused_connect_says_why(void **state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct pub_options o = {.flags = PUB_OPT_NO_RECONNECT};
	struct door d = {.rounds = ROUNDS};
	char dir[] = "/tmp/test_pub_refused.XXXXXX", path[96];
	pthread_t t;
	void *ok = NULL;
	unsigned i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	d.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(d.lfd >= 0);
	assert_int_equal(bind(d.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(d.lfd, 16), 0);
	assert_int_equal(pthread_create(&t, NULL, refuse_all, &d), 0);
	for (i = 0; i < ROUNDS; i++) {
		pub_client_t *c = NULL;
		int r = pub_connect(&c, path, &o);

		assert_true(r < 0);
		if (!strstr(pub_errmsg(NULL), WHY))
			fail_msg("connection %u of %u: \"%s\" (%s), not pubd's words", i + 1, ROUNDS, pub_errmsg(NULL),
				 pub_strerror(r));
	}
	assert_int_equal(pthread_join(t, &ok), 0);
	assert_non_null(ok);
	close(d.lfd);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(refused_connect_says_why),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
