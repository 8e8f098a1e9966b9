// SPDX-License-Identifier: MIT
/*
 * pubctl watch: a live view of pubd, like top. This file is the I/O: the
 * terminal (size, non-canonical no-echo input, the alternate screen), the
 * timer, the queries and the reconnects; what is shown is computed by
 * watch_model.c and laid out by watch_layout.c.
 *
 * On a terminal, one screen redrawn every interval (changes highlighted),
 * q or Ctrl-C quits. Not on a terminal, one plain frame per interval (no
 * escape sequence). When pubd goes away the screen says so and watch keeps
 * trying to reconnect every interval; only a pubd unreachable at the start
 * ends it (exit status 2).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "pubctl.h"
#include "watch_layout.h"

/* Plain frames (not a terminal) are this wide. */
#define PLAIN_WIDTH 80

static volatile sig_atomic_t watch_stop, watch_resized;

static void on_stop(int sig)
{
	watch_stop = sig;
}

static void on_winch(int sig)
{
	watch_resized = 1;
}

struct watch {
	struct pubctl *ctl;
	pub_client_t *c;
	double interval;
	uint64_t count; /* frames to show; 0: until q or a signal */
	uint64_t shown;
	bool tty;  /* stdout is a terminal: screens, not frames */
	bool keys; /* stdin is a terminal too, in non-canonical mode */
	struct termios saved;
	int timer;
	struct watch_sample sample[2]; /* the newest, and the one before */
	double taken[2];	       /* when each was taken (CLOCK_MONOTONIC seconds) */
	int cur;
	struct watch_rates rates;
	struct watch_frame frame[2]; /* the one drawn now, and the one shown before */
	int fcur;
	char down[512]; /* why pubd is not shown, "" while it is */
	char since[16]; /* when it went away */
};

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void install_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop};

	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: poll() returns EINTR and the loop sees the flag. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
}

/* Non-canonical, no echo, the alternate screen and no cursor; term_leave undoes all of it. */
static int term_enter(struct watch *w)
{
	struct termios raw;

	if (w->keys) {
		if (tcgetattr(STDIN_FILENO, &w->saved) < 0) {
			w->keys = false;
		} else {
			raw = w->saved;
			/* ISIG stays: Ctrl-C is SIGINT, which ends the loop like q. */
			raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
			raw.c_cc[VMIN] = 1;
			raw.c_cc[VTIME] = 0;
			if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) < 0) {
				pubctl_err("watch: terminal settings: %s", strerror(errno));
				return -1;
			}
		}
	}
	fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
	fflush(stdout);
	return 0;
}

static void term_leave(struct watch *w)
{
	fputs("\033[m\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	if (w->keys)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &w->saved);
}

static void term_size(const struct watch *w, int *width, int *height)
{
	struct winsize ws;

	*width = PLAIN_WIDTH;
	*height = 24;
	if (!w->tty) {
		/* Every group, one frame after the other. */
		unsigned n = w->sample[w->cur].ngroups;

		*height = WATCH_FIXED_LINES + (int)(n ? n : 1);
		return;
	}
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		*width = ws.ws_col;
		*height = ws.ws_row;
	}
}

static void go_down(struct watch *w, const char *why)
{
	time_t t = time(NULL);
	struct tm tm;

	/* The first failure's time stays while the retries fail the same way. */
	if (!w->down[0])
		strftime(w->since, sizeof(w->since), "%T", localtime_r(&t, &tm));
	snprintf(w->down, sizeof(w->down), "unreachable at %s\n%s\nretrying every %gs since %s", w->ctl->socket, why,
		 w->interval, w->since);
	if (w->c)
		pub_close(w->c);
	w->c = NULL;
}

static int connect_quietly(struct watch *w)
{
	struct pub_options o = PUB_OPTIONS_INIT;
	int r;

	o.client_name = "pubctl-watch";
	o.transport = PUB_TRANSPORT_SOCKET; /* queries only: no logs */
	o.flags |= PUB_OPT_NO_RECONNECT;
	/* A pubd that stops answering freezes the screen (and q) at most this long. */
	o.request_timeout_ms = 2000;
	r = pub_connect(&w->c, w->ctl->socket, &o);
	if (r < 0) {
		w->c = NULL;
		go_down(w, r == -PUB_EVERSION ? pub_errmsg(NULL) : pub_strerror(r));
	}
	return r;
}

/* Status, groups, then drops (whose group rows find their groups). */
static int take_sample(struct watch *w)
{
	static const int kinds[] = {PUB_Q_STATUS, PUB_Q_GROUPS, PUB_Q_DROPS};
	int next = !w->cur, r;
	struct watch_sample *s = &w->sample[next];

	if (!w->c && connect_quietly(w) < 0)
		return -1;
	watch_sample_clear(s);
	w->taken[next] = mono_now();
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		r = pub_query(w->c, kinds[i], NULL, watch_sample_table, s);
		if (r < 0) {
			go_down(w, r == -1 ? "out of memory" : pub_errmsg(w->c));
			return -1;
		}
	}
	w->down[0] = 0;
	/* Rates over the time measured between the two samples, not the interval asked for. */
	if (watch_rates_compute(&w->rates, w->sample[w->cur].have_status ? &w->sample[w->cur] : NULL, s,
				w->taken[next] - w->taken[w->cur]) < 0)
		return -1;
	w->cur = next;
	return 0;
}

static void footer(const struct watch *w, char *buf, size_t n)
{
	int len = snprintf(buf, n, "every %gs", w->interval);

	if (w->rates.valid && !w->down[0] && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, " (last %.3fs)", w->rates.elapsed);
	if (w->keys && len >= 0 && (size_t)len < n)
		snprintf(buf + len, n - (size_t)len, "  q quits");
}

/* Lay out a frame of the terminal's size and write it in one go. */
static int draw(struct watch *w)
{
	struct watch_frame *f = &w->frame[!w->fcur], *shown = &w->frame[w->fcur];
	char clock[16], foot[96], *text = NULL;
	struct watch_info info = {.clock = clock, .footer = foot, .down = w->down[0] ? w->down : NULL};
	time_t t = time(NULL);
	struct tm tm;
	int width, height, ok;
	size_t len = 0;
	FILE *mem;

	strftime(clock, sizeof(clock), "%T", localtime_r(&t, &tm));
	footer(w, foot, sizeof(foot));
	term_size(w, &width, &height);
	if (watch_frame_reset(f, width, height) < 0)
		return -1;
	watch_layout(f, &w->sample[w->cur], &w->rates, &info);
	watch_frame_diff(f, shown->ncells ? shown : NULL);
	mem = open_memstream(&text, &len);
	if (!mem)
		return -1;
	if (w->tty)
		watch_frame_write_ansi(f, mem);
	else
		watch_frame_write_plain(f, mem);
	if (!w->tty && w->count != 1)
		fputc('\n', mem); /* frames apart */
	fclose(mem);
	ok = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0;
	free(text);
	w->fcur = !w->fcur;
	return ok ? 0 : -1;
}

/* Keys: q quits; anything else is ignored. Returns 1 to quit. */
static int read_keys(struct watch *w)
{
	char buf[64];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n == 0) {
		w->keys = false; /* end of input: only signals end watch now */
		return 0;
	}
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 'q' || buf[i] == 'Q')
			return 1;
	return 0;
}

/* One tick: a sample (or a reconnect attempt), then the frame. Returns 1 when done. */
static int tick(struct watch *w)
{
	uint64_t expirations;

	if (read(w->timer, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return -1;
	take_sample(w);
	if (draw(w) < 0)
		return -1;
	w->shown++;
	return w->count && w->shown >= w->count;
}

static int run(struct watch *w)
{
	struct pollfd p[2] = {{.fd = w->timer, .events = POLLIN}, {.fd = STDIN_FILENO, .events = POLLIN}};
	int r;

	/* A terminal shows pubd at once; a log gets frames with rates, from the first tick. */
	if (w->tty) {
		if (draw(w) < 0)
			return -1;
		if (++w->shown == w->count)
			return 0;
	}
	while (!watch_stop) {
		if (watch_resized) {
			watch_resized = 0;
			if (w->tty && draw(w) < 0)
				return -1;
		}
		if (poll(p, w->keys ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w->keys && (p[1].revents & (POLLIN | POLLHUP)) && read_keys(w))
			return 0;
		if (p[0].revents & POLLIN) {
			r = tick(w);
			if (r)
				return r < 0 ? -1 : 0;
		}
	}
	return 0;
}

static int start_timer(struct watch *w)
{
	struct itimerspec its;

	w->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (w->timer < 0)
		return -1;
	its.it_interval.tv_sec = (time_t)w->interval;
	its.it_interval.tv_nsec = (long)((w->interval - (double)(time_t)w->interval) * 1e9);
	its.it_value = its.it_interval;
	return timerfd_settime(w->timer, 0, &its, NULL);
}

static int parse_args(struct watch *w, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"interval", required_argument, NULL, 'i'},
		{"count", required_argument, NULL, 'n'},
		{0},
	};
	int opt;

	optind = 0; /* 0, not 1: GNU getopt re-initialises (main parsed with "+") */
	while ((opt = getopt_long(argc, argv, "i:n:", longopts, NULL)) != -1) {
		if (opt == 'i' && parse_seconds(optarg, "--interval", &w->interval) == 0 && w->interval >= 0.05)
			continue;
		if (opt == 'n' && parse_u64(optarg, "--count", &w->count) == 0)
			continue;
		goto usage;
	}
	if (optind == argc)
		return 0;
usage:
	pubctl_err("usage: watch [--interval SECONDS (>= 0.05)] [--count N]");
	return -1;
}

int cmd_watch(struct pubctl *ctl, int argc, char **argv)
{
	struct watch w = {.ctl = ctl, .interval = 1, .timer = -1};
	int ret = 1, code = 1;

	if (parse_args(&w, argc, argv) < 0)
		return 1;
	/* pubd not there at the start is most likely the wrong socket: say so and stop. */
	w.c = pubctl_connect(ctl, false, false, &code);
	if (!w.c)
		return code;
	/* From here on, connections with watch's own name and timeout. */
	pub_close(w.c);
	w.c = NULL;
	w.tty = isatty(STDOUT_FILENO);
	w.keys = w.tty && isatty(STDIN_FILENO);
	watch_sample_init(&w.sample[0]);
	watch_sample_init(&w.sample[1]);
	watch_rates_init(&w.rates);
	if (watch_frame_init(&w.frame[0], 1, 1) < 0 || watch_frame_init(&w.frame[1], 1, 1) < 0 || start_timer(&w) < 0) {
		pubctl_err("watch: %s", strerror(errno ? errno : ENOMEM));
		goto out;
	}
	take_sample(&w);
	install_signals();
	if (w.tty && term_enter(&w) < 0)
		goto out;
	ret = run(&w) < 0 ? 1 : 0;
	if (w.tty)
		term_leave(&w);
	if (ret)
		pubctl_err("watch: %s", errno ? strerror(errno) : "failed");
out:
	if (w.timer >= 0)
		close(w.timer);
	watch_frame_close(&w.frame[0]);
	watch_frame_close(&w.frame[1]);
	watch_rates_close(&w.rates);
	watch_sample_close(&w.sample[0]);
	watch_sample_close(&w.sample[1]);
	if (w.c)
		pub_close(w.c);
	return ret;
}
