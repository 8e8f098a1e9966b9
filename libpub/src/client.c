// SPDX-License-Identifier: MIT
/*
 * libpub's handle: options, pub_connect, pub_close, pub_fd, pub_info,
 * pub_errmsg. The work is in the files internal.h lists.
 *
 * The socket is non-blocking; blocking calls wait in poll().
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include "internal.h"

static __thread char connect_errmsg[1024];

static const char *default_name(void)
{
	return program_invocation_short_name ? program_invocation_short_name : "libpub";
}

static void client_free(struct pub_client *c)
{
	struct pub_queued *q, *next;

	c->held_data = NULL; /* the caller's message goes with the handle */
	conn_close(c);
	shm_release_dead(c);
	dr_release(c); /* direct logs let go of while the caller's message lay in one */
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->timerfd >= 0)
		close(c->timerfd);
	if (c->kickfd >= 0)
		close(c->kickfd);
	for (q = c->qhead; q; q = next) {
		next = q->next;
		free(q);
	}
	free(c->cur);
	for (size_t i = 0; i < c->nsubs; i++)
		free(c->subs[i]);
	free(c->subs);
	free(c->rbuf);
	free(c->held_buf);
	free(c->wbuf);
	free(c->dbuf);
	free(c->claim_buf);
	free(c->path);
	free(c);
}

/* PUB_TRANSPORT_DEFAULT asks the environment, then picks shared memory. */
static bool transport_is_shm(int t)
{
	const char *env;

	if (t == PUB_TRANSPORT_DEFAULT) {
		env = secure_getenv(PUB_TRANSPORT_ENV);
		if (env && !strcmp(env, "socket"))
			t = PUB_TRANSPORT_SOCKET;
	}
	return t != PUB_TRANSPORT_SOCKET;
}

/* pub_options.recv_linger_us, or the environment's when that is 0 (a
 * value that is not a number of microseconds there: no linger). */
static uint64_t recv_linger_ns(int us)
{
	const char *env;
	long v = us;
	char *end;

	if (us == 0 && (env = secure_getenv(PUB_RECV_LINGER_ENV)) && *env) {
		errno = 0;
		v = strtol(env, &end, 10);
		if (errno || *end)
			v = 0;
	}
	if (v <= 0)
		return 0;
	return (uint64_t)(v > PUB_RECV_LINGER_MAX_US ? PUB_RECV_LINGER_MAX_US : v) * 1000;
}

static void options_apply(struct pub_client *c, const struct pub_options *opts)
{
	struct pub_options o = {0};

	/* A caller built against a smaller struct passes its size; read no further. */
	if (opts) {
		size_t n = opts->struct_size && opts->struct_size < sizeof(o) ? opts->struct_size : sizeof(o);

		memcpy(&o, opts, n);
	}
	snprintf(c->name, sizeof(c->name), "%s", o.client_name ? o.client_name : default_name());
	c->connect_timeout_ms = o.connect_timeout_ms;
	c->request_timeout_ms = o.request_timeout_ms ? o.request_timeout_ms : DEFAULT_REQUEST_MS;
	c->reconnect_min_ms = o.reconnect_min_ms > 0 ? o.reconnect_min_ms : DEFAULT_RECONNECT_MIN_MS;
	c->reconnect_max_ms = o.reconnect_max_ms > 0 ? o.reconnect_max_ms : DEFAULT_RECONNECT_MAX_MS;
	if (c->reconnect_max_ms < c->reconnect_min_ms)
		c->reconnect_max_ms = c->reconnect_min_ms;
	c->flags = o.flags;
	c->want_shm = transport_is_shm(o.transport);
	/* The direct path comes with shared memory unless $PUBD_DIRECT=off. */
	c->want_direct =
		c->want_shm && !(secure_getenv(PUB_DIRECT_ENV) && !strcmp(secure_getenv(PUB_DIRECT_ENV), "off"));
	if (secure_getenv(PUB_BUSY_POLL_ENV) && !strcmp(secure_getenv(PUB_BUSY_POLL_ENV), "1"))
		c->flags |= PUB_OPT_BUSY_POLL;
	c->recv_linger_ns = recv_linger_ns(o.recv_linger_us);
}

int pub_connect(pub_client_t **out, const char *socket_path, const struct pub_options *opts)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct pub_client *c;
	const char *path;
	int r;

	connect_errmsg[0] = '\0';
	if (!out) {
		snprintf(connect_errmsg, sizeof(connect_errmsg), "pub_connect: out is NULL");
		return -EINVAL;
	}
	*out = NULL;
	if (opts && (opts->struct_size == 0 || opts->struct_size > offsetof(struct pub_options, transport)) &&
	    (opts->transport < PUB_TRANSPORT_DEFAULT || opts->transport > PUB_TRANSPORT_SOCKET)) {
		snprintf(connect_errmsg, sizeof(connect_errmsg),
			 "pub_connect: pub_options.transport %d is none of PUB_TRANSPORT_DEFAULT, _SHM, _SOCKET",
			 opts->transport);
		return -EINVAL;
	}
	path = socket_path ? socket_path : secure_getenv(PUB_SOCKET_ENV);
	if (!path || !*path)
		path = PUB_DEFAULT_SOCKET;

	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(connect_errmsg, sizeof(connect_errmsg), "pub_connect: out of memory");
		return -ENOMEM;
	}
	c->sock = c->epfd = c->timerfd = c->kickfd = -1;
	c->log_doorbell = c->log_space = -1;
	c->dlog_doorbell = c->dlog_space = -1;
	c->qtail = &c->qhead;
	c->max_body = MAX_BODY_MIN;
	options_apply(c, opts);
	c->backoff_ms = c->reconnect_min_ms;
	c->path = strdup(path);
	if (!c->path) {
		r = set_err(c, -ENOMEM, "pub_connect: out of memory");
		goto fail;
	}
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	c->kickfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->epfd < 0 || c->timerfd < 0 || c->kickfd < 0) {
		r = set_err(c, -errno, "pub_connect: %s", strerror(errno));
		goto fail;
	}
	ev.data.fd = c->timerfd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->timerfd, &ev) < 0) {
		r = set_err(c, -errno, "pub_connect: epoll_ctl: %s", strerror(errno));
		goto fail;
	}
	ev.data.fd = c->kickfd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->kickfd, &ev) < 0) {
		r = set_err(c, -errno, "pub_connect: epoll_ctl: %s", strerror(errno));
		goto fail;
	}

	/* connect_timeout_ms lets an application start before pubd is up. */
	r = conn_first(c, deadline_in(c->connect_timeout_ms));
	if (r < 0)
		goto fail;
	readiness_update(c);
	*out = c;
	return 0;
fail:
	snprintf(connect_errmsg, sizeof(connect_errmsg), "%.1000s", c->errmsg); /* a connect's error is short */
	client_free(c);
	return r;
}

void pub_close(pub_client_t *c)
{
	if (c)
		client_free(c);
}

int pub_fd(pub_client_t *c)
{
	return c ? c->epfd : -EINVAL;
}

int pub_info(pub_client_t *c, struct pub_info *info)
{
	if (!c || !info)
		return -EINVAL;
	*info = c->info;
	info->connected = c->up;
	return 0;
}

const char *pub_errmsg(pub_client_t *c)
{
	return c ? c->errmsg : connect_errmsg;
}
