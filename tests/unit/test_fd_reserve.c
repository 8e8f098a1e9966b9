/* SPDX-License-Identifier: MIT */
/*
 * The reserve fd a listener gives up when out of fds (sys/fd_reserve.h):
 * at the fd limit, the waiting connection is refused and the reserve is
 * back afterwards, so the next time works the same. In a child process,
 * whose fd limit the test lowers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fd_reserve.h"

static int refused;

static void refuse(void *ctx, int fd)
{
	(void)ctx;
	refused++;
	close(fd);
}

/* In the child: exit 0 when every step holds, else the step that failed. */
static int at_the_fd_limit(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct rlimit rl;
	int lfd, reserve, c, round;

	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa_family_t)) < 0 || listen(lfd, 16) < 0)
		return 10; /* autobind: an abstract address of the kernel's choosing */
	socklen_t len = sizeof(sa);
	if (getsockname(lfd, (struct sockaddr *)&sa, &len) < 0)
		return 11;
	reserve = pubd_fd_reserve_open();
	if (reserve < 0)
		return 12;
	for (round = 0; round < 3; round++) {
		/* A client, then every other fd number taken. */
		c = socket(AF_UNIX, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&sa, len) < 0)
			return 13;
		rl.rlim_cur = rl.rlim_max = (rlim_t)c + 1;
		if (round == 0 && setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return 14;
		while (dup(0) >= 0)
			;
		if (accept4(lfd, NULL, NULL, SOCK_CLOEXEC) >= 0 || errno != EMFILE)
			return 15;
		/* Refused, and the reserve back for the next time. */
		if (!pubd_fd_reserve_refuse(lfd, &reserve, refuse, NULL) || reserve < 0 || refused != round + 1)
			return 16 + round;
		close(c);
	}
	return 0;
}

static void the_reserve_is_back_after_each_refusal(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(at_the_fd_limit());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_reserve_is_back_after_each_refusal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
