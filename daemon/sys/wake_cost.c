/* SPDX-License-Identifier: MIT */
/* What a wakeup costs on this host: wake_cost.h. */
#include "wake_cost.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define WAKE_WARMUP    8	    /* round trips not counted: page faults, the child's first run */
#define WAKE_ROUNDS    64	    /* round trips counted */
#define WAKE_BUDGET_NS 250000000ull /* stop early past this (a host that is busy now) */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The other end, a child process: echo each byte until the socket is shut.
 * Only read, write and _exit: nothing of the daemon's state is touched. */
static void __attribute__((noreturn)) echo(int fd)
{
	char b;

	while (read(fd, &b, 1) == 1 && write(fd, &b, 1) == 1)
		;
	_exit(0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Round trips over sv[0] into rtt[]; how many were timed. */
static unsigned ping_pong(int fd, uint64_t *rtt)
{
	uint64_t began = mono_ns(), t;
	unsigned i, n = 0;
	char b = 0;

	for (i = 0; i < WAKE_WARMUP + WAKE_ROUNDS; i++) {
		t = mono_ns();
		if (write(fd, &b, 1) != 1 || read(fd, &b, 1) != 1)
			break;
		if (i >= WAKE_WARMUP)
			rtt[n++] = mono_ns() - t;
		if (mono_ns() - began > WAKE_BUDGET_NS)
			break;
	}
	return n;
}

uint64_t pubd_wake_cost_ns(void)
{
	uint64_t rtt[WAKE_ROUNDS], cost = 0;
	unsigned n;
	pid_t pid;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		log_warn("measuring a wakeup: socketpair: %m");
		return 0;
	}
	/* Another process, not a thread: a client's wakeup switches address
	 * spaces, which under emulation costs several times a thread switch
	 * (TCG flushes its TLB): 57 against 14 us in the Soft-RoCE VM. */
	pid = fork();
	if (pid < 0) {
		log_warn("measuring a wakeup: fork: %m");
		goto out;
	}
	if (pid == 0) {
		close(sv[0]);
		echo(sv[1]);
	}
	n = ping_pong(sv[0], rtt);
	shutdown(sv[0], SHUT_RDWR); /* the echo's read returns 0: it ends */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (n) {
		qsort(rtt, n, sizeof(rtt[0]), cmp_u64);
		cost = rtt[n / 2] / 2;
	}
out:
	close(sv[0]);
	close(sv[1]);
	return cost;
}
