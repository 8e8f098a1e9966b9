/* SPDX-License-Identifier: MIT */
/*
 * sd_check: pubd's systemd integration seen from outside, without systemd.
 *
 *   sd_check notify   --pubd PATH
 *   sd_check activate --pubd PATH [--activate PATH-TO-systemd-socket-activate]
 *
 * notify: plays the service manager. Binds an AF_UNIX datagram socket, starts
 * pubd with NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID pointing at it and
 * checks what arrives: READY=1 only after every group logged "joined" and the
 * socket listens (and a client is served at once), WATCHDOG=1 at half of
 * WATCHDOG_USEC, STATUS= kept current, RELOADING=1 then READY=1 on SIGHUP,
 * STOPPING=1 on SIGTERM, exit status 0, every message sent by pubd's own pid
 * (what NotifyAccess=main accepts), every log line with a "<N>" priority.
 *
 * activate: systemd-socket-activate listens, a client connects and sends
 * HELLO while the process is still systemd-socket-activate (pubd not yet
 * exec'd), and must get WELCOME and a STATUS query answered by the pubd that
 * the connection started, on the passed socket rather than its configured one.
 *
 * Both use the udp fabric on loopback and a private temp dir. Every wait is
 * for an event (a datagram, a log line, a reply, an exit) with a deadline.
 * Output: "PASS name" / "FAIL name: why" lines; exit 0 when all passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "sd_client.h"

#define MS		  ((uint64_t)1000000)
#define WATCHDOG_USEC	  1000000ull /* pings expected every 500 ms */
#define START_DEADLINE_MS 20000
#define STEP_DEADLINE_MS  10000
#define MAX_EVENTS	  4096

enum ev_kind { EV_NOTIFY, EV_LOG };

/* Everything pubd said, in arrival order, stamped on CLOCK_MONOTONIC. */
struct event {
	enum ev_kind kind;
	uint64_t t;
	pid_t sender; /* EV_NOTIFY: SCM_CREDENTIALS pid */
	char *text;
};

static struct {
	/* Socket paths must fit sun_path (108 bytes): a short temp dir. */
	char dir[64];
	char conf[108];
	char sock[108];
	char notify[108];
	char act[108];
	int notify_fd;
	int log_fd; /* read end of pubd's stderr */
	int pidfd;  /* readable once pubd exits */
	char logbuf[8192];
	size_t loglen;
	pid_t pid;
	bool exited;
	int status;
	struct event ev[MAX_EVENTS];
	unsigned nev;
	unsigned failed, passed;
} t = {.notify_fd = -1, .log_fd = -1, .pidfd = -1, .pid = -1};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pass(const char *name)
{
	printf("PASS %s\n", name);
	fflush(stdout);
	t.passed++;
}

static void __attribute__((format(printf, 2, 3))) fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	t.failed++;
}

static void record(enum ev_kind kind, pid_t sender, const char *text, size_t len)
{
	struct event *e;

	if (t.nev == MAX_EVENTS)
		return;
	e = &t.ev[t.nev++];
	e->kind = kind;
	e->t = now_ns();
	e->sender = sender;
	e->text = strndup(text, len);
	if (kind == EV_LOG)
		fprintf(stderr, "  pubd: %s\n", e->text);
	else
		fprintf(stderr, "  notify: %s\n", e->text);
}

static void read_notify(void)
{
	char buf[4096], cbuf[CMSG_SPACE(sizeof(struct ucred))];
	struct iovec iov = {buf, sizeof(buf) - 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf};
	struct cmsghdr *c;
	pid_t sender;
	ssize_t n;
	char *line, *save;

	for (;;) {
		mh.msg_controllen = sizeof(cbuf);
		n = recvmsg(t.notify_fd, &mh, MSG_DONTWAIT);
		if (n < 0)
			return;
		buf[n] = 0;
		sender = -1;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
				struct ucred cred;

				memcpy(&cred, CMSG_DATA(c), sizeof(cred));
				sender = cred.pid;
			}
		}
		/* One datagram may carry several assignments ("READY=1\nSTATUS=..."):
		 * one event each, like systemd parses them. */
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			record(EV_NOTIFY, sender, line, strlen(line));
	}
}

static void read_log(void)
{
	ssize_t n;
	char *nl;

	for (;;) {
		n = read(t.log_fd, t.logbuf + t.loglen, sizeof(t.logbuf) - t.loglen);
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(t.log_fd);
				t.log_fd = -1;
			}
			break;
		}
		t.loglen += (size_t)n;
		while ((nl = memchr(t.logbuf, '\n', t.loglen))) {
			size_t len = (size_t)(nl - t.logbuf);

			record(EV_LOG, 0, t.logbuf, len);
			memmove(t.logbuf, nl + 1, t.loglen - len - 1);
			t.loglen -= len + 1;
		}
		if (t.loglen == sizeof(t.logbuf)) { /* a line longer than the buffer */
			record(EV_LOG, 0, t.logbuf, t.loglen);
			t.loglen = 0;
		}
	}
}

static void reap(void)
{
	if (t.pid > 0 && !t.exited && waitpid(t.pid, &t.status, WNOHANG) == t.pid)
		t.exited = true;
}

/*
 * Take in whatever pubd has sent, in pubd's own order. pubd writes a log
 * line before it sends the notification that follows it, so a line written
 * before READY=1 is in the pipe by the time READY=1 can be read. But pubd
 * may write that line and send READY=1 between our read of the pipe and our
 * read of the socket: so after notifications came, the pipe is read again
 * and what it had goes before them (a line pubd wrote just after READY=1,
 * within those microseconds, may go before it too).
 */
void sd_check_drain(void)
{
	unsigned mark, k, n;

	if (t.log_fd >= 0)
		read_log();
	mark = t.nev;
	if (t.notify_fd >= 0)
		read_notify();
	k = t.nev;
	if (k > mark && t.log_fd >= 0) {
		read_log();
		n = t.nev - k;
		if (n) {
			struct event *tmp = malloc((k - mark) * sizeof(*tmp));

			if (tmp) {
				memcpy(tmp, &t.ev[mark], (k - mark) * sizeof(*tmp));
				memmove(&t.ev[mark], &t.ev[k], n * sizeof(*tmp));
				memcpy(&t.ev[mark + n], tmp, (k - mark) * sizeof(*tmp));
				free(tmp);
			}
		}
	}
	reap();
}

/* Wait for input until deadline_ns (at most), then take it in. */
static void pump_until(uint64_t deadline_ns)
{
	struct pollfd p[3];
	uint64_t now = now_ns();
	nfds_t n = 0;

	if (t.log_fd >= 0)
		p[n++] = (struct pollfd){.fd = t.log_fd, .events = POLLIN};
	if (t.notify_fd >= 0)
		p[n++] = (struct pollfd){.fd = t.notify_fd, .events = POLLIN};
	if (t.pidfd >= 0 && !t.exited)
		p[n++] = (struct pollfd){.fd = t.pidfd, .events = POLLIN};
	/* With no fd left (pubd gone), poll just waits out the slice: the
	 * caller's condition decides. */
	if (now < deadline_ns)
		poll(p, n, (int)((deadline_ns - now + MS - 1) / MS));
	sd_check_drain();
}

/* Index of the first event at or after from matching kind and prefix, or -1. */
static int find(unsigned from, enum ev_kind kind, const char *needle, bool prefix)
{
	unsigned i;

	for (i = from; i < t.nev; i++) {
		if (t.ev[i].kind != kind)
			continue;
		if (prefix ? strncmp(t.ev[i].text, needle, strlen(needle)) == 0 : strstr(t.ev[i].text, needle) != NULL)
			return (int)i;
	}
	return -1;
}

/* Wait (bounded) for an event; returns its index or -1 at the deadline. */
static int wait_event(unsigned from, enum ev_kind kind, const char *needle, bool prefix, unsigned ms)
{
	uint64_t deadline = now_ns() + ms * MS;
	int i;

	while ((i = find(from, kind, needle, prefix)) < 0 && now_ns() < deadline)
		pump_until(deadline);
	return i;
}

static bool wait_exit(unsigned ms)
{
	uint64_t deadline = now_ns() + ms * MS;

	while (!t.exited && now_ns() < deadline)
		pump_until(deadline);
	return t.exited;
}

/* After the exit: whatever pubd wrote last, up to the pipe's EOF. */
static void drain_log_to_eof(void)
{
	uint64_t deadline = now_ns() + STEP_DEADLINE_MS * MS;

	while (t.log_fd >= 0 && now_ns() < deadline)
		pump_until(deadline);
}

static int make_dir_and_config(void)
{
	const char *base = getenv("TMPDIR");
	unsigned port, a, b;
	FILE *f;

	/* sun_path holds 108 bytes: keep the temp dir short. */
	snprintf(t.dir, sizeof(t.dir), "%s/pubd-sd-XXXXXX", base && strlen(base) < 40 ? base : "/tmp");
	if (!mkdtemp(t.dir))
		return -errno;
	snprintf(t.conf, sizeof(t.conf), "%s/pubd.yaml", t.dir);
	snprintf(t.sock, sizeof(t.sock), "%s/pubd.sock", t.dir);
	snprintf(t.notify, sizeof(t.notify), "%s/notify", t.dir);
	snprintf(t.act, sizeof(t.act), "%s/activated.sock", t.dir);
	/* A port and groups of our own, so parallel tests' daemons on lo
	 * neither share our traffic nor our port. */
	port = 20000 + (unsigned)getpid() % 20000;
	a = (unsigned)getpid() % 250 + 1;
	b = (unsigned)(getpid() / 250) % 250 + 1;
	f = fopen(t.conf, "w");
	if (!f)
		return -errno;
	fprintf(f,
		"daemon:\n"
		"  socket: %s\n"
		"  log_level: info\n"
		"fabric:\n"
		"  type: udp\n"
		"  udp_port: %u\n"
		"  heartbeat_ms: 1000\n"
		"groups:\n"
		"  - name: sd-alpha\n"
		"    address: 239.193.%u.%u\n"
		"  - name: sd-beta\n"
		"    address: 239.194.%u.%u\n",
		t.sock, port, a, b, a, b);
	return fclose(f) ? -errno : 0;
}

static int bind_notify(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int one = 1;

	t.notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (t.notify_fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", t.notify);
	if (bind(t.notify_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	/* The sender's pid, as systemd checks it for NotifyAccess=main. */
	if (setsockopt(t.notify_fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

/* Start argv with stderr on a pipe we read; env entries "K=V" added. */
static int spawn(char *const argv[], const char *const env[], bool watchdog)
{
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char buf[64];
		unsigned i;

		dup2(pfd[1], STDERR_FILENO);
		for (i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		if (watchdog) {
			/* The pid systemd would set: pubd's own (exec keeps it). */
			snprintf(buf, sizeof(buf), "%d", (int)getpid());
			setenv("WATCHDOG_PID", buf, 1);
			snprintf(buf, sizeof(buf), "%llu", WATCHDOG_USEC);
			setenv("WATCHDOG_USEC", buf, 1);
		}
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	t.log_fd = pfd[0];
	fcntl(t.log_fd, F_SETFL, O_NONBLOCK);
	t.pid = pid;
	/* The exit becomes an event to poll for, like the rest. */
	t.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

/* ---- shared checks ---- */

static void check_log_priorities(void)
{
	unsigned i, lines = 0;

	for (i = 0; i < t.nev; i++) {
		const char *s = t.ev[i].text;

		if (t.ev[i].kind != EV_LOG)
			continue;
		/* systemd-socket-activate's own lines precede pubd's in that test. */
		if (!strncmp(s, "Listening on ", 13) || !strncmp(s, "Communication attempt", 21) ||
		    !strncmp(s, "Execing ", 8))
			continue;
		lines++;
		if (!(s[0] == '<' && s[1] >= '0' && s[1] <= '7' && s[2] == '>')) {
			fail("log_lines_carry_syslog_priority", "line without a <0>..<7> prefix: '%s'", s);
			return;
		}
	}
	if (!lines)
		fail("log_lines_carry_syslog_priority", "pubd logged nothing");
	else
		pass("log_lines_carry_syslog_priority");
}

static void check_exit_zero(const char *name)
{
	if (!t.exited)
		fail(name, "pubd did not exit within %u ms of SIGTERM", STEP_DEADLINE_MS);
	else if (!WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
		fail(name, "pubd ended with %s %d", WIFEXITED(t.status) ? "status" : "signal",
		     WIFEXITED(t.status) ? WEXITSTATUS(t.status) : WTERMSIG(t.status));
	else
		pass(name);
}

/* ---- notify ---- */

static void check_ready_after_joins(int ready)
{
	static const char *const groups[] = {"group sd-alpha (", "group sd-beta ("};
	unsigned g;
	int i;

	for (g = 0; g < 2; g++) {
		for (i = 0; i < ready; i++)
			if (t.ev[i].kind == EV_LOG && strstr(t.ev[i].text, groups[g]) &&
			    strstr(t.ev[i].text, "): joined"))
				break;
		if (i == ready) {
			fail("ready_after_every_group_joined", "READY=1 came before '%sADDR): joined'", groups[g]);
			return;
		}
	}
	if (find(0, EV_LOG, "listening on ", false) < 0 || find(0, EV_LOG, "listening on ", false) > ready) {
		fail("ready_after_every_group_joined", "READY=1 came before the 'listening on' line");
		return;
	}
	pass("ready_after_every_group_joined");
}

static void check_status(int ready)
{
	int i = find((unsigned)ready, EV_NOTIFY, "STATUS=", true);

	if (i < 0)
		fail("status_sent_with_ready", "no STATUS= with or after READY=1");
	else if (!strstr(t.ev[i].text, "fabric udp") || !strstr(t.ev[i].text, "groups 2/2 joined"))
		fail("status_sent_with_ready", "STATUS does not say 'fabric udp' and 'groups 2/2 joined': '%s'",
		     t.ev[i].text);
	else
		pass("status_sent_with_ready");
}

static void check_watchdog(unsigned from)
{
	uint64_t half = WATCHDOG_USEC * 1000 / 2, deadline = now_ns() + 3200 * MS, prev = 0, d, min = UINT64_MAX,
		 max = 0, sum = 0;
	unsigned n = 0, statuses = 0, i;

	/* 3.2 s: six pings at 500 ms, and three STATUS updates at 1 s. */
	while (now_ns() < deadline)
		pump_until(deadline);
	for (i = from; i < t.nev; i++) {
		if (t.ev[i].kind != EV_NOTIFY)
			continue;
		if (!strncmp(t.ev[i].text, "STATUS=", 7))
			statuses++;
		if (strcmp(t.ev[i].text, "WATCHDOG=1"))
			continue;
		if (n++) {
			d = t.ev[i].t - prev;
			min = d < min ? d : min;
			max = d > max ? d : max;
			sum += d;
		}
		prev = t.ev[i].t;
	}
	if (n < 5) {
		fail("watchdog_pings_at_half_watchdog_usec", "%u WATCHDOG=1 in 3.2 s with WATCHDOG_USEC=%llu", n,
		     WATCHDOG_USEC);
	} else {
		uint64_t mean = sum / (n - 1);

		printf("  watchdog: %u pings, interval mean %" PRIu64 " ms, min %" PRIu64 " ms, max %" PRIu64
		       " ms (WATCHDOG_USEC %llu ms)\n",
		       n, mean / MS, min / MS, max / MS, WATCHDOG_USEC / 1000);
		/*
		 * The mean says "half of WATCHDOG_USEC" (not the full period, not
		 * the 1 s status timer). No interval far below it (a second ping
		 * source) or near the full period (systemd would kill pubd). The
		 * margins absorb scheduling delay on a loaded 2-core CI host,
		 * which can only make one interval look longer and the next shorter.
		 */
		if (mean < half * 9 / 10 || mean > half * 13 / 10 || min < half * 6 / 10 || max > half * 18 / 10)
			fail("watchdog_pings_at_half_watchdog_usec",
			     "mean %" PRIu64 " ms (want %" PRIu64 "..%" PRIu64 "), min %" PRIu64 " ms (want >= %" PRIu64
			     "), max %" PRIu64 " ms (want <= %" PRIu64 ")",
			     mean / MS, half * 9 / 10 / MS, half * 13 / 10 / MS, min / MS, half * 6 / 10 / MS, max / MS,
			     half * 18 / 10 / MS);
		else
			pass("watchdog_pings_at_half_watchdog_usec");
	}
	if (statuses < 2)
		fail("status_kept_current", "%u STATUS= updates in 3.2 s (expected one a second)", statuses);
	else
		pass("status_kept_current");
}

static void check_senders(void)
{
	unsigned i;

	for (i = 0; i < t.nev; i++) {
		if (t.ev[i].kind == EV_NOTIFY && t.ev[i].sender != t.pid) {
			fail("notify_sent_by_main_pid", "'%s' came from pid %d, pubd is %d", t.ev[i].text,
			     (int)t.ev[i].sender, (int)t.pid);
			return;
		}
	}
	pass("notify_sent_by_main_pid");
}

static int run_notify(const char *pubd)
{
	char *argv[] = {(char *)pubd, "-c", t.conf, NULL};
	char env_notify[128], fabric[64];
	const char *env[] = {env_notify, NULL};
	uint8_t buf[65536];
	size_t have = 0;
	int ready, i, j, fd, err;
	unsigned mark;

	err = bind_notify();
	if (err < 0) {
		fail("setup", "notify socket %s: %s", t.notify, strerror(-err));
		return 1;
	}
	snprintf(env_notify, sizeof(env_notify), "NOTIFY_SOCKET=%s", t.notify);
	err = spawn(argv, env, true);
	if (err < 0) {
		fail("setup", "spawn %s: %s", pubd, strerror(-err));
		return 1;
	}

	ready = wait_event(0, EV_NOTIFY, "READY=1", false, START_DEADLINE_MS);
	if (ready < 0) {
		fail("ready_after_every_group_joined", "no READY=1 within %u ms", START_DEADLINE_MS);
		return 1;
	}
	check_ready_after_joins(ready);
	/* READY means served: a client gets its WELCOME right away. */
	fd = client_connect(t.sock);
	if (fd < 0) {
		fail("client_served_once_ready", "connect %s: %s", t.sock, strerror(-fd));
	} else {
		err = send_hello(fd);
		if (!err)
			err = await_welcome(fd, buf, sizeof(buf), &have, fabric, sizeof(fabric), STEP_DEADLINE_MS);
		if (err)
			fail("client_served_once_ready", "HELLO/WELCOME: %s", strerror(-err));
		else
			pass("client_served_once_ready");
		close(fd);
	}
	check_status(ready);
	check_watchdog((unsigned)ready);

	/* Log lines may be recorded ahead of notifications sent before them
	 * (see sd_check_drain()), so the log is searched from the signal on. */
	mark = t.nev;
	kill(t.pid, SIGHUP);
	i = wait_event(mark, EV_NOTIFY, "RELOADING=1", false, STEP_DEADLINE_MS);
	j = i < 0 ? -1 : wait_event((unsigned)i + 1, EV_NOTIFY, "READY=1", false, STEP_DEADLINE_MS);
	if (i < 0)
		fail("sighup_sends_reloading_then_ready", "no RELOADING=1 within %u ms of SIGHUP", STEP_DEADLINE_MS);
	else if (j < 0)
		fail("sighup_sends_reloading_then_ready", "no READY=1 after RELOADING=1");
	/* The log and the notify socket are two channels: the line written
	 * before READY=1 may still be in the pipe when READY=1 is read. */
	else if (wait_event(mark, EV_LOG, "reload applied", false, STEP_DEADLINE_MS) < 0)
		fail("sighup_sends_reloading_then_ready", "no 'reload applied' in the log");
	else
		pass("sighup_sends_reloading_then_ready");

	kill(t.pid, SIGTERM);
	i = wait_event((unsigned)t.nev, EV_NOTIFY, "STOPPING=1", false, STEP_DEADLINE_MS);
	if (i < 0)
		fail("sigterm_sends_stopping", "no STOPPING=1 within %u ms of SIGTERM", STEP_DEADLINE_MS);
	else
		pass("sigterm_sends_stopping");
	wait_exit(STEP_DEADLINE_MS);
	check_exit_zero("sigterm_exits_zero");
	/* Whatever pubd wrote last is in the pipe now. */
	drain_log_to_eof();
	check_senders();
	check_log_priorities();
	return 0;
}

/* ---- socket activation ---- */

static bool exe_is(pid_t pid, const char *path)
{
	char link[64], target[PATH_MAX], want[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0 || !realpath(path, want))
		return false;
	target[n] = 0;
	return strcmp(target, want) == 0;
}

static int run_activate(const char *pubd, const char *activate)
{
	char *argv[] = {(char *)activate, "-l", t.act, (char *)pubd, "-c", t.conf, NULL};
	char fabric[64];
	uint8_t buf[65536];
	size_t have = 0;
	struct stat st;
	bool before;
	int fd, err, n;

	err = spawn(argv, NULL, false);
	if (err < 0) {
		fail("setup", "spawn %s: %s", activate, strerror(-err));
		return 1;
	}
	/* systemd-socket-activate says so once the socket listens. */
	if (wait_event(0, EV_LOG, "Listening on ", true, STEP_DEADLINE_MS) < 0) {
		fail("client_connects_before_pubd_starts", "systemd-socket-activate did not listen on %s", t.act);
		return 1;
	}
	/* systemd-socket-activate execs pubd only once a connection comes: if
	 * it is still itself now, pubd is not running when we connect. */
	before = exe_is(t.pid, activate);
	fd = client_connect(t.act);
	if (fd < 0) {
		fail("client_connects_before_pubd_starts", "connect %s: %s", t.act, strerror(-fd));
		return 1;
	}
	err = send_hello(fd);
	if (err < 0) {
		fail("client_connects_before_pubd_starts", "HELLO: %s", strerror(-err));
		return 1;
	}
	if (!before)
		fail("client_connects_before_pubd_starts", "pid %d was no longer %s when the client connected",
		     (int)t.pid, activate);
	else
		pass("client_connects_before_pubd_starts");

	err = await_welcome(fd, buf, sizeof(buf), &have, fabric, sizeof(fabric), START_DEADLINE_MS);
	if (err < 0)
		fail("early_client_gets_welcome", "%s", strerror(-err));
	else if (!exe_is(t.pid, pubd))
		fail("early_client_gets_welcome", "WELCOME, but pid %d is not %s", (int)t.pid, pubd);
	else
		pass("early_client_gets_welcome");
	n = query_status(fd, buf, sizeof(buf), &have, STEP_DEADLINE_MS);
	if (n <= 0)
		fail("early_client_served_a_query", "STATUS query: %s", n < 0 ? strerror(-n) : "no table");
	else
		pass("early_client_served_a_query");
	close(fd);

	if (find(0, EV_LOG, "listening on the socket passed by systemd", false) < 0)
		fail("pubd_uses_the_passed_socket", "no 'listening on the socket passed by systemd' in the log");
	else if (lstat(t.sock, &st) == 0)
		fail("pubd_uses_the_passed_socket", "pubd also created its configured socket %s", t.sock);
	else
		pass("pubd_uses_the_passed_socket");
	/* The config's daemon.socket (t.sock) is not where clients connect:
	 * said in the log, naming both, not silently ignored. */
	{
		char want[600];

		snprintf(want, sizeof(want), "daemon.socket is %s, but systemd passed the socket at %s", t.sock, t.act);
		if (find(0, EV_LOG, want, false) < 0)
			fail("ignored_daemon_socket_is_said", "no '%s' in the log", want);
		else
			pass("ignored_daemon_socket_is_said");
	}

	kill(t.pid, SIGTERM);
	wait_exit(STEP_DEADLINE_MS);
	check_exit_zero("activated_pubd_exits_zero_on_sigterm");
	/* The socket belongs to whoever passed it (systemd, which keeps it
	 * for the next pubd); pubd must not unlink it on exit. */
	if (lstat(t.act, &st) < 0 || !S_ISSOCK(st.st_mode))
		fail("passed_socket_left_in_place", "%s is gone after pubd exited", t.act);
	else
		pass("passed_socket_left_in_place");
	drain_log_to_eof();
	check_log_priorities();
	return 0;
}

static void cleanup(void)
{
	unsigned i;

	if (t.pid > 0 && !t.exited) {
		kill(t.pid, SIGKILL);
		waitpid(t.pid, NULL, 0);
	}
	if (t.notify_fd >= 0)
		close(t.notify_fd);
	if (t.log_fd >= 0)
		close(t.log_fd);
	if (t.pidfd >= 0)
		close(t.pidfd);
	for (i = 0; i < t.nev; i++)
		free(t.ev[i].text);
	if (!t.dir[0])
		return;
	unlink(t.conf);
	unlink(t.sock);
	unlink(t.notify);
	unlink(t.act);
	rmdir(t.dir);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"pubd", required_argument, NULL, 'p'},
		{"activate", required_argument, NULL, 'a'},
		{NULL, 0, NULL, 0},
	};
	const char *pubd = NULL, *activate = "/usr/bin/systemd-socket-activate", *mode;
	int c, err;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pubd = optarg;
			break;
		case 'a':
			activate = optarg;
			break;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc || !pubd) {
		fprintf(stderr, "usage: sd_check notify|activate --pubd PATH [--activate PATH]\n");
		return 2;
	}
	mode = argv[optind];
	err = make_dir_and_config();
	if (err < 0) {
		fail("setup", "temp dir and config: %s", strerror(-err));
		cleanup();
		return 1;
	}
	if (!strcmp(mode, "notify")) {
		run_notify(pubd);
	} else if (!strcmp(mode, "activate")) {
		if (access(activate, X_OK) < 0)
			fail("setup", "%s: %s (package systemd)", activate, strerror(errno));
		else
			run_activate(pubd, activate);
	} else {
		fprintf(stderr, "sd_check: unknown mode %s\n", mode);
		cleanup();
		return 2;
	}
	cleanup();
	printf("%u passed, %u failed\n", t.passed, t.failed);
	return t.failed || !t.passed ? 1 : 0;
}
