/* SPDX-License-Identifier: MIT */
/*
 * libmicrohttpd in pubd's event loop (http.h).
 *
 * pubd owns the listening socket and accepts; MHD (MHD_USE_EPOLL, no
 * thread, MHD_USE_NO_LISTEN_SOCKET) is handed each accepted connection with
 * MHD_add_connection and only parses and answers. Two things MHD cannot do
 * for itself need the accept in our hands:
 *
 *  - Out of fds. MHD's own accept fails with EMFILE, leaves the connection
 *    in the backlog and the listener readable, and pubd's level-triggered
 *    watch of MHD's epoll fd spins at 100% CPU. Here a reserve fd is given up
 *    for a moment to accept such a connection and close it (with a 503), and
 *    an error that repeats otherwise stops the watch of the listener until
 *    the next tick. Either way one log line per period, with the counts.
 *
 *  - Slow clients. MHD's only timeout is an idle one, reset by every byte,
 *    so clients sending a header line every few seconds held every slot for
 *    ever. Here each connection is tracked (MHD_OPTION_NOTIFY_CONNECTION):
 *    a request must be complete within PUBD_HTTP_REQUEST_S of the accept (or
 *    of the previous answer on a kept-alive connection), and a connection
 *    that finds its address's or the listener's slots full takes the slot of
 *    the oldest connection not being answered, from its own address first.
 *    A connection is closed by shutdown(2) on its fd: MHD still owns the fd,
 *    sees the hang-up on its next run and closes it the usual way.
 *
 * MHD's sockets are non-blocking, so an MHD_run never waits: it handles
 * what epoll reported and returns. After every run the loop's timer is set
 * to MHD_get_timeout, which MHD needs for idle connections and for data it
 * already has.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fd_reserve.h"
#include "http.h"
#include "log.h"

#define NS_PER_S 1000000000ull
/* How many connections one readiness of the listener accepts before the
 * loop gets to run everything else. */
#define ACCEPT_BATCH 16
/* Said to a connection pubd cannot serve now, before closing it. */
#define BUSY_REPLY "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"

/* One connection MHD serves; its socket context. */
struct http_conn {
	struct http_conn *prev, *next;
	struct sockaddr_storage peer;
	int fd;
	uint64_t since_ns; /* accepted, or its last request answered */
	bool answering;	   /* a response is queued and not yet all sent */
	bool answered;	   /* at least one request was answered */
	bool closing;	   /* shut down by us; MHD closes it on its next run */
};

struct pubd_http {
	struct MHD_Daemon *mhd;
	int listen_fd;
	int reserve_fd; /* given up to accept-and-close when out of fds */
	struct pubd_loop_watch *listen_watch;
	struct pubd_loop_watch *mhd_watch;
	struct pubd_loop_timer *mhd_timer;
	struct pubd_loop_timer *tick;
	uint64_t tick_at; /* UINT64_MAX: not armed */
	bool listen_paused;
	bool running;		 /* inside MHD_run: no re-entry */
	struct http_conn *conns; /* oldest first */
	unsigned nlive;		 /* in conns and not closing */
	/* Counts since start, and what the last log line covered. */
	uint64_t refused, accept_errors, cut;
	uint64_t refused_logged, accept_errors_logged, cut_logged;
	uint64_t last_log_ns;
	pubd_http_render_fn render;
	void *ctx;
};

/* libmicrohttpd's own messages; its format strings are its own. */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	log_debug("metrics: %s", buf);
}

/* What an attacker makes happen repeats: one line per period with the
 * counts since the last, never one per connection. now: log what there is
 * even within the period (at close). */
static void stats_log(struct pubd_http *h, bool now)
{
	uint64_t refused = h->refused - h->refused_logged;
	uint64_t errs = h->accept_errors - h->accept_errors_logged;
	uint64_t cut = h->cut - h->cut_logged;
	uint64_t t = pubd_now_ns();

	if (!refused && !errs && !cut)
		return;
	if (!now && h->last_log_ns && t - h->last_log_ns < PUBD_HTTP_LOG_S * NS_PER_S)
		return;
	log_warn("metrics: %llu connections refused (out of fds, or no slot to free), %llu failed accepts, "
		 "%llu closed without an answer (no request within %u s, or their slot taken) in the last %llu s; "
		 "%u open",
		 (unsigned long long)refused, (unsigned long long)errs, (unsigned long long)cut, PUBD_HTTP_REQUEST_S,
		 (unsigned long long)(h->last_log_ns ? (t - h->last_log_ns) / NS_PER_S : 0), h->nlive);
	h->refused_logged = h->refused;
	h->accept_errors_logged = h->accept_errors;
	h->cut_logged = h->cut;
	h->last_log_ns = t;
}

static bool stats_pending(const struct pubd_http *h)
{
	return h->refused != h->refused_logged || h->accept_errors != h->accept_errors_logged ||
	       h->cut != h->cut_logged;
}

/* The tick runs while it has something to do: deadlines of open
 * connections, a paused listener, a missing reserve fd, counts to log. An
 * armed tick is left where it is: re-arming on every accept would put it
 * off for as long as connections keep coming. */
static void tick_arm(struct pubd_http *h)
{
	bool need = h->nlive || h->listen_paused || h->reserve_fd < 0 || stats_pending(h);

	if (need && h->tick_at == UINT64_MAX)
		h->tick_at = pubd_now_ns() + NS_PER_S;
	else if (!need)
		h->tick_at = UINT64_MAX;
	pubd_loop_timer_arm(h->tick, h->tick_at);
}

/* Run MHD for what is ready, then set the timer to when it wants to run
 * again (idle timeouts, buffered data). */
static void run(struct pubd_http *h)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (h->running)
		return;
	h->running = true;
	MHD_run(h->mhd);
	h->running = false;
	if (MHD_get_timeout(h->mhd, &ms) == MHD_YES)
		pubd_loop_timer_arm(h->mhd_timer, pubd_now_ns() + (uint64_t)ms * 1000000ull);
	else
		pubd_loop_timer_arm(h->mhd_timer, UINT64_MAX);
}

/* ---- tracking MHD's connections ---- */

static struct http_conn *conn_of(struct MHD_Connection *connection)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void conn_unlink(struct pubd_http *h, struct http_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

/* Append: the list stays in order of since_ns, oldest first. A walk, as
 * every other use of the list: it holds at most MHD's limit, 64. */
static void conn_append(struct pubd_http *h, struct http_conn *c)
{
	struct http_conn **p = &h->conns, *last = NULL;

	while (*p) {
		last = *p;
		p = &(*p)->next;
	}
	c->prev = last;
	*p = c;
}

/*
 * MHD_OPTION_NOTIFY_CONNECTION. Without memory for the record the
 * connection goes untracked: MHD's own limits and idle timeout still bound
 * it, it only cannot be cut short or give up its slot.
 */
static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct pubd_http *h = cls;
	struct http_conn *c = *socket_context;
	const union MHD_ConnectionInfo *fd_info, *addr_info;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!c)
			return;
		conn_unlink(h, c);
		if (!c->closing)
			h->nlive--;
		free(c);
		*socket_context = NULL;
		return;
	}
	fd_info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr_info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!fd_info || !addr_info || !addr_info->client_addr)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->fd = fd_info->connect_fd;
	memcpy(&c->peer, addr_info->client_addr,
	       addr_info->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							     : sizeof(struct sockaddr_in));
	c->since_ns = pubd_now_ns();
	conn_append(h, c);
	h->nlive++;
	*socket_context = c;
}

/* MHD_OPTION_NOTIFY_COMPLETED: the answer is out (or the request failed).
 * A kept-alive connection starts its wait for the next request now. */
static void on_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct pubd_http *h = cls;
	struct http_conn *c = conn_of(connection);

	if (!c)
		return;
	c->answering = false;
	c->since_ns = pubd_now_ns();
	conn_unlink(h, c);
	conn_append(h, c);
}

/* Close a connection MHD owns: shut it down, and MHD's next run reads the
 * end and closes it. Counted when it was never answered (a kept-alive
 * connection idle past its time is ordinary). */
static void conn_cut(struct pubd_http *h, struct http_conn *c)
{
	if (shutdown(c->fd, SHUT_RDWR) < 0)
		log_debug("metrics: shutdown of fd %d: %s", c->fd, strerror(errno));
	c->closing = true;
	h->nlive--;
	if (!c->answered)
		h->cut++;
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
}

/* The oldest live connection not being answered (from peer's address
 * when peer is not NULL), and how many live ones that address has. */
static struct http_conn *oldest_idle(struct pubd_http *h, const struct sockaddr_storage *peer, unsigned *count)
{
	struct http_conn *c, *found = NULL;

	*count = 0;
	for (c = h->conns; c; c = c->next) {
		if (c->closing || (peer && !same_host(&c->peer, peer)))
			continue;
		(*count)++;
		if (!found && !c->answering)
			found = c;
	}
	return found;
}

/*
 * A slot for a new connection from peer, under the per-address limit and
 * then the listener's: when one is full, the oldest connection not being
 * answered gives up its slot (from peer's own address first, so clients at
 * one address can only push out each other). Real scrapes are answered
 * within milliseconds of their accept, so they are never the oldest for
 * long; a client holding connections open loses them to the next comer.
 * False when every slot is answering.
 */
static bool make_room(struct pubd_http *h, const struct sockaddr_storage *peer)
{
	struct http_conn *victim;
	unsigned n;
	bool cut = false;

	victim = oldest_idle(h, peer, &n);
	if (n >= PUBD_HTTP_MAX_PER_IP) {
		if (!victim)
			return false;
		conn_cut(h, victim);
		cut = true;
	}
	if (h->nlive >= PUBD_HTTP_MAX_CONNECTIONS) {
		victim = oldest_idle(h, NULL, &n);
		if (!victim)
			return false;
		conn_cut(h, victim);
		cut = true;
	}
	/* Let MHD close what was cut now, before its own limits (twice ours)
	 * would count it against the new connection. */
	if (cut)
		run(h);
	return true;
}

/* Deadlines: a request complete within PUBD_HTTP_REQUEST_S of the accept
 * (or of the previous answer), its answer sent within PUBD_HTTP_TIMEOUT_S
 * more. Returns how many were cut. */
static unsigned cut_late(struct pubd_http *h, uint64_t now)
{
	struct http_conn *c;
	unsigned n = 0;
	uint64_t limit;

	for (c = h->conns; c; c = c->next) {
		if (c->closing)
			continue;
		limit = (uint64_t)(c->answering ? PUBD_HTTP_REQUEST_S + PUBD_HTTP_TIMEOUT_S : PUBD_HTTP_REQUEST_S) *
			NS_PER_S;
		if (now - c->since_ns > limit) {
			conn_cut(h, c);
			n++;
		}
	}
	return n;
}

/* ---- requests ---- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result answer(struct pubd_http *h, struct MHD_Connection *conn, const char *url, const char *method)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *text = NULL;
	size_t len = 0;

	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, "not found: pubd serves /metrics\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET or HEAD\n");
	if (h->render(h->ctx, &text, &len) < 0)
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "pubd could not render its metrics\n");
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, PUBD_HTTP_CONTENT_TYPE);
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* Called when a request's headers are in (a body is never read: only GET
 * and HEAD are served, and anything else is answered at once). From here
 * the connection is answering: it keeps its slot until the answer is out. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct pubd_http *h = cls;
	struct http_conn *c = conn_of(conn);
	enum MHD_Result ret = answer(h, conn, url, method);

	if (c && ret == MHD_YES) {
		c->answering = true;
		c->answered = true;
	}
	return ret;
}

/* ---- the listening socket ---- */

/* Tell a connection pubd will not serve now, and close it. One
 * non-blocking attempt: a new connection's send buffer is empty. */
static void refuse(struct pubd_http *h, int fd)
{
	if (send(fd, BUSY_REPLY, strlen(BUSY_REPLY), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		(void)0; /* it gets the close either way */
	close(fd);
	h->refused++;
}

static void refuse_cb(void *ctx, int fd)
{
	refuse(ctx, fd);
}

static void listen_pause(struct pubd_http *h)
{
	if (h->listen_paused)
		return;
	if (pubd_loop_watch_mod(h->listen_watch, 0) < 0)
		log_debug("metrics: cannot pause the listener: %s", strerror(errno));
	h->listen_paused = true;
}

/*
 * accept() failed with err. Out of fds (EMFILE): the reserve fd is given up
 * for a moment to accept the connection and refuse it, so it neither waits
 * in the backlog nor keeps the listener readable (a busy loop). Anything
 * else that repeats (ENFILE, ENOBUFS, ENOMEM, or EMFILE with no reserve):
 * stop watching the listener until the next tick. Returns true to try
 * accepting again.
 */
static bool accept_failed(struct pubd_http *h, int err)
{
	if (err == EAGAIN || err == EINTR)
		return false;
	if (err == ECONNABORTED || err == EPROTO)
		return true; /* that connection is gone; others may wait */
	h->accept_errors++;
	if (err == EMFILE && h->reserve_fd >= 0 && pubd_fd_reserve_refuse(h->listen_fd, &h->reserve_fd, refuse_cb, h))
		return true;
	listen_pause(h);
	return false;
}

/* Hand an accepted connection to MHD, making room for it first. */
static void admit(struct pubd_http *h, int fd, const struct sockaddr_storage *peer, socklen_t len)
{
	if (!make_room(h, peer)) {
		refuse(h, fd);
		return;
	}
	/* MHD closes fd when it cannot take it (out of memory, its own
	 * limits): refused all the same. */
	if (MHD_add_connection(h->mhd, fd, (const struct sockaddr *)peer, len) != MHD_YES)
		h->refused++;
}

static void on_listen(void *ctx, uint32_t events)
{
	struct pubd_http *h = ctx;
	struct sockaddr_storage peer;
	socklen_t len;
	int i, fd;

	for (i = 0; i < ACCEPT_BATCH; i++) {
		len = sizeof(peer);
		fd = accept4(h->listen_fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (accept_failed(h, errno))
				continue;
			break;
		}
		admit(h, fd, &peer, len);
	}
	run(h);
	stats_log(h, false);
	tick_arm(h);
}

/* ---- the loop's callbacks ---- */

static void on_epoll(void *ctx, uint32_t events)
{
	run(ctx);
}

static void on_mhd_timer(void *ctx, uint64_t now_ns)
{
	run(ctx);
}

/* Once a second while needed: deadlines, listening again after a
 * back-off, the reserve fd back, the period's log line. */
static void on_tick(void *ctx, uint64_t now_ns)
{
	struct pubd_http *h = ctx;

	h->tick_at = UINT64_MAX;
	if (cut_late(h, now_ns))
		run(h);
	if (h->reserve_fd < 0)
		h->reserve_fd = pubd_fd_reserve_open();
	if (h->listen_paused) {
		if (pubd_loop_watch_mod(h->listen_watch, EPOLLIN) == 0)
			h->listen_paused = false;
		else
			log_debug("metrics: cannot resume the listener: %s", strerror(errno));
	}
	stats_log(h, false);
	tick_arm(h);
}

/* ---- open and close ---- */

/* A non-blocking listening TCP socket on sa, or -errno. */
static int listen_on(const struct sockaddr *sa, socklen_t salen)
{
	int fd, one = 1, err;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* As MHD did for its own socket: restart at once over TIME_WAIT,
	 * and an IPv6 address is IPv6 only. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (sa->sa_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, sa, salen) < 0 || listen(fd, PUBD_HTTP_BACKLOG) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

static struct MHD_Daemon *start(struct pubd_http *h)
{
	/* The logger first: MHD prints what comes before it to stderr, with no
	 * priority for the journal (and said so at every start). MHD's limits
	 * stay as a backstop at twice ours: a connection cut to make room is
	 * still MHD's until its next run closes it. */
	return MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request,
				h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, MHD_OPTION_CONNECTION_LIMIT,
				2u * PUBD_HTTP_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				2u * PUBD_HTTP_MAX_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)PUBD_HTTP_TIMEOUT_S,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)PUBD_HTTP_CONN_MEMORY,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_NOTIFY_COMPLETED,
				on_completed, h, MHD_OPTION_END);
}

/* The loop's watches and timers; 0 or -errno. */
static int watch(struct pubd_http *h, struct pubd_loop *loop)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);

	if (!info)
		return -EINVAL;
	h->mhd_timer = pubd_loop_timer(loop, on_mhd_timer, h);
	if (!h->mhd_timer)
		return -errno;
	h->tick = pubd_loop_timer(loop, on_tick, h);
	if (!h->tick)
		return -errno;
	h->mhd_watch = pubd_loop_watch(loop, info->epoll_fd, EPOLLIN, on_epoll, h);
	if (!h->mhd_watch)
		return -errno;
	h->listen_watch = pubd_loop_watch(loop, h->listen_fd, EPOLLIN, on_listen, h);
	if (!h->listen_watch)
		return -errno;
	return 0;
}

struct pubd_http *pubd_http_open(struct pubd_loop *loop, const struct sockaddr *sa, socklen_t salen,
				 pubd_http_render_fn render, void *ctx, char *err, size_t errcap)
{
	struct pubd_http *h = calloc(1, sizeof(*h));
	int r, saved;

	if (!h) {
		snprintf(err, errcap, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	h->listen_fd = h->reserve_fd = -1;
	h->tick_at = UINT64_MAX;
	h->render = render;
	h->ctx = ctx;
	r = listen_on(sa, salen);
	if (r < 0) {
		errno = -r;
		snprintf(err, errcap, "cannot listen: %s", strerror(errno));
		goto fail;
	}
	h->listen_fd = r;
	/* Kept for the moment pubd is out of fds (accept_failed). */
	h->reserve_fd = pubd_fd_reserve_open();
	if (h->reserve_fd < 0) {
		snprintf(err, errcap, "cannot open a reserve fd: %s", strerror(errno));
		goto fail;
	}
	errno = 0;
	h->mhd = start(h);
	if (!h->mhd) {
		if (!errno)
			errno = ENOMEM;
		snprintf(err, errcap, "cannot start libmicrohttpd: %s", strerror(errno));
		goto fail;
	}
	r = watch(h, loop);
	if (r < 0) {
		errno = -r;
		snprintf(err, errcap, "cannot watch the listener: %s", strerror(errno));
		goto fail;
	}
	run(h); /* sets the timer */
	return h;
fail:
	saved = errno;
	pubd_http_close(h);
	errno = saved;
	return NULL;
}

void pubd_http_address(const struct pubd_http *h, char *buf, size_t cap)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char ip[INET6_ADDRSTRLEN];

	if (pubd_http_sockname(h, &ss, &sl) < 0) {
		snprintf(buf, cap, "?");
		return;
	}
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		snprintf(buf, cap, "[%s]:%u", ip, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(buf, cap, "%s:%u", ip, ntohs(a->sin_port));
	}
}

int pubd_http_sockname(const struct pubd_http *h, struct sockaddr_storage *ss, socklen_t *sl)
{
	*sl = sizeof(*ss);
	return getsockname(h->listen_fd, (struct sockaddr *)ss, sl) < 0 ? -errno : 0;
}

unsigned pubd_http_connections(const struct pubd_http *h)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return info ? info->num_connections : 0;
}

void pubd_http_close(struct pubd_http *h)
{
	struct http_conn *c;

	if (!h)
		return;
	if (h->listen_watch)
		pubd_loop_unwatch(h->listen_watch);
	if (h->mhd_watch)
		pubd_loop_unwatch(h->mhd_watch);
	pubd_loop_timer_free(h->mhd_timer);
	pubd_loop_timer_free(h->tick);
	/* Closes every connection: on_connection frees their records. */
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	while ((c = h->conns)) {
		conn_unlink(h, c);
		free(c);
	}
	stats_log(h, true);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	if (h->reserve_fd >= 0)
		close(h->reserve_fd);
	free(h);
}
