/* SPDX-License-Identifier: MIT */
/*
 * The server: the listening socket (ours or systemd's), accepting and
 * refusing connections, the per-second tick, shutdown, and the read-only
 * view of clients that queries use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "fd_reserve.h"
#include "log.h"
#include "loop.h"
#include "proto.h"
#include "random_key.h"
#include "server_internal.h"

/* Repeating accept failures and refusals: one log line per period, with
 * the counts since the last, never one per connection. */
static void accept_log(struct pubd_ipc *srv, bool now)
{
	uint64_t errs = srv->counters[PUBD_CTR_ACCEPT_ERRORS] - srv->accept_fail_logged;
	uint64_t refused = srv->counters[PUBD_CTR_CLIENTS_REFUSED] - srv->refused_logged;
	uint64_t t = pubd_now_ns();

	if (!errs && !refused)
		return;
	if (!now && srv->last_accept_log_ns && t - srv->last_accept_log_ns < ACCEPT_LOG_NS)
		return;
	log_warn("clients: %llu connections refused (limits.max_clients %u, or out of fds), %llu failed accepts "
		 "in the last %llu s; %u connected, %u ended and not hung up yet",
		 (unsigned long long)refused, srv->cfg->max_clients, (unsigned long long)errs,
		 (unsigned long long)(srv->last_accept_log_ns ? (t - srv->last_accept_log_ns) / 1000000000ull : 0),
		 srv->nclients, srv->nlingering);
	srv->accept_fail_logged = srv->counters[PUBD_CTR_ACCEPT_ERRORS];
	srv->refused_logged = srv->counters[PUBD_CTR_CLIENTS_REFUSED];
	srv->last_accept_log_ns = t;
}

/* Tell a connection pubd will not serve why (PUB_ERR_BUSY), and close it. */
static void refuse_busy(int fd, const char *why)
{
	uint8_t buf[256];
	long n = pub_proto_enc_error(buf, sizeof(buf), 0, PUB_ERR_BUSY, why, strlen(why));

	/* One non-blocking attempt: the socket buffer of a new connection is
	 * empty, so it fits unless something is very wrong. */
	if (n > 0 && send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		(void)0;
	close(fd);
}

static void refuse(struct pubd_ipc *srv, int fd, const char *why)
{
	refuse_busy(fd, why);
	srv->counters[PUBD_CTR_CLIENTS_REFUSED]++;
	accept_log(srv, false);
}

/* Refused for its uid, which holds limits.max_clients_per_uid: counted
 * apart from a full server, and said through a log limit of its own (the
 * uid is the kernel's word, no text of the client's). */
static void refuse_per_uid(struct pubd_ipc *srv, int fd, uid_t uid)
{
	refuse_busy(fd, "this user has limits.max_clients_per_uid connections to pubd already; try again later");
	srv->counters[PUBD_CTR_CLIENTS_REFUSED_PER_UID]++;
	srv_log_limited(srv, log_per_uid, LOG_NOTICE,
			"clients: connection of uid %u refused: it holds limits.max_clients_per_uid (%u) already",
			(unsigned)uid, srv->cfg->max_clients_per_uid);
}

static void refuse_out_of_fds(void *ctx, int fd)
{
	refuse(ctx, fd, "pubd is out of file descriptors; try again later");
}

/*
 * accept() failed with err. Out of fds (EMFILE): the reserve fd is given up
 * for a moment to accept the connection and close it, so it neither waits in
 * the backlog nor keeps the listener readable (a busy loop). Anything else
 * that repeats (ENFILE, ENOBUFS, ENOMEM): stop polling the listener until
 * the next tick. Returns true to try accepting again.
 */
static bool accept_failed(struct pubd_ipc *srv, int err)
{
	if (err == EAGAIN || err == EINTR)
		return false;
	if (err == ECONNABORTED || err == EPROTO)
		return true; /* that connection is gone; others may wait */
	srv->counters[PUBD_CTR_ACCEPT_ERRORS]++;
	if (err == EMFILE && srv->reserve_fd >= 0 &&
	    pubd_fd_reserve_refuse(srv->listen_fd, &srv->reserve_fd, refuse_out_of_fds, srv))
		return true;
	if (!srv->listen_paused) {
		srv->listen_paused = true;
		pubd_loop_watch_mod(srv->listen_watch, 0);
	}
	accept_log(srv, false);
	return false;
}

enum admission { ADMITTED, REFUSED_FULL, REFUSED_PER_UID };

/* Connections accepted (or refused) in one turn of the loop, at most. */
#define ACCEPT_BATCH 128

/*
 * May a connection of uid (the kernel's word for who connected,
 * SO_PEERCRED) have a slot? Root and pubd's own user may have one of
 * OPERATOR_RESERVE beyond limits.max_clients, and are not held to
 * limits.max_clients_per_uid: pubctl works whoever holds the rest. Others
 * get one of max_clients while their uid holds fewer than
 * max_clients_per_uid, connections and lingering logs alike (as
 * max_clients counts them). O(1): the uid's count is kept, not counted.
 */
static enum admission admit(const struct pubd_ipc *srv, uid_t uid)
{
	unsigned used = srv->nclients + srv->nlingering;

	if (uid == 0 || uid == getuid())
		return used < srv->cfg->max_clients + OPERATOR_RESERVE ? ADMITTED : REFUSED_FULL;
	if (used >= srv->cfg->max_clients)
		return REFUSED_FULL;
	if (pubd_uid_count_get(&srv->per_uid, uid) >= srv->cfg->max_clients_per_uid)
		return REFUSED_PER_UID;
	return ADMITTED;
}

/* A client for the connection on fd, watched and counted; NULL (fd closed)
 * without memory or a watch. */
static struct pubd_client *client_new(struct pubd_ipc *srv, int fd, const struct ucred *cred)
{
	struct pubd_client *c = calloc(1, sizeof(*c));

	if (!c || !(c->rbuf = malloc(RBUF_MIN))) {
		log_err("out of memory accepting a client");
		free(c);
		close(fd);
		return NULL;
	}
	c->srv = srv;
	c->fd = fd;
	c->rcap = RBUF_MIN;
	c->wake_ro_fd = -1;
	c->id = ++srv->next_id;
	c->connected_ns = pubd_now_ns();
	srv_read_peer(c, cred);
	c->watch_events = EPOLLIN;
	if (pubd_uid_count_inc(&srv->per_uid, c->uid) < 0) {
		log_err("out of memory accepting a client");
		goto fail;
	}
	c->watch = pubd_loop_watch(srv->loop, fd, EPOLLIN, srv_on_client, c);
	if (!c->watch) {
		log_err("cannot watch client fd: %s", strerror(errno));
		pubd_uid_count_dec(&srv->per_uid, c->uid);
		goto fail;
	}
	return c;
fail:
	free(c->rbuf);
	free(c->sup_gids);
	free(c);
	close(fd);
	return NULL;
}

static void on_accept(void *ctx, uint32_t events)
{
	struct pubd_ipc *srv = ctx;
	struct pubd_client *c;
	struct ucred cred;
	socklen_t len;
	bool known;
	uid_t uid;
	int fd;

	(void)events;
	/* At most ACCEPT_BATCH a turn: the listener stays ready (level
	 * triggered) for the rest, and under a flood of connections the
	 * clients already in are read between batches. Unbounded, a flood
	 * kept the loop here for seconds, past their HELLO deadline. */
	for (unsigned k = 0; k < ACCEPT_BATCH; k++) {
		fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (accept_failed(srv, errno))
				continue;
			return;
		}
		/* Unknown peers are nobody an ACL names: uid (uid_t)-1. */
		len = sizeof(cred);
		known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0;
		uid = known ? cred.uid : (uid_t)-1;
		switch (admit(srv, uid)) {
		case ADMITTED:
			break;
		case REFUSED_FULL:
			refuse(srv, fd, "pubd has limits.max_clients connections already; try again later");
			continue;
		case REFUSED_PER_UID:
			refuse_per_uid(srv, fd, uid);
			continue;
		}
		c = client_new(srv, fd, known ? &cred : NULL);
		if (!c)
			continue;
		c->next = srv->clients;
		if (c->next)
			c->next->prev = c;
		srv->clients = c;
		srv->nclients++;
		srv->counters[PUBD_CTR_CLIENTS_ACCEPTED]++;
		srv_hello_wait_begin(c);
	}
}

static int make_parent_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Is the file at srv->path still the socket this pubd bound? Someone may
 * have removed it, and another pubd bound the path since: its socket is
 * not ours to unlink or chmod. */
static bool path_is_ours(const struct pubd_ipc *srv)
{
	struct stat st;

	return srv->path && lstat(srv->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == srv->path_dev &&
	       st.st_ino == srv->path_ino;
}

int pubd_ipc_apply_socket_mode(struct pubd_ipc *srv)
{
	if (srv->listen_from_systemd)
		return -ENOTSUP;
	if (!path_is_ours(srv))
		return -ESTALE;
	if (chmod(srv->path, srv->cfg->socket_mode) < 0)
		return -errno;
	log_notice("daemon.socket %s: mode now %04o", srv->path, srv->cfg->socket_mode);
	return 0;
}

/* What a file in the way of the socket's path is, for the log. */
static const char *file_kind(mode_t mode)
{
	return S_ISREG(mode)   ? "a regular file"
	       : S_ISDIR(mode) ? "a directory"
	       : S_ISLNK(mode) ? "a symbolic link"
			       : "a special file";
}

/*
 * The socket's path, free to bind: 0 when nothing is there or a stale
 * socket was (removed), else -EEXIST or -EADDRINUSE, said in the log.
 * Something else in the way is left alone, and named: a bind onto it would
 * only say "Address already in use", as if a pubd were there.
 */
static int clear_path(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int probe, err;

	if (lstat(path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		log_err("daemon.socket %s: the path holds %s, not a socket; not removing it", path,
			file_kind(st.st_mode));
		return -EEXIST;
	}
	/* A socket left by a daemon that died is stale unless someone answers.
	 * The probe never blocks: a Unix connect either completes at once, is
	 * refused (nobody listens: stale), or finds the backlog full (EAGAIN:
	 * a daemon is there but stuck, SIGSTOPped or overloaded). Only a
	 * refusal lets us take the path over. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	err = probe < 0 ? errno : connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ? 0 : errno;
	if (probe >= 0)
		close(probe);
	if (err != ECONNREFUSED && err != ENOENT) {
		if (err == 0 || err == EINPROGRESS)
			log_err("daemon.socket %s: another pubd is listening there", path);
		else if (err == EAGAIN)
			log_err("daemon.socket %s: another process listens there but does not accept "
				"connections (stuck or stopped?); not taking it over",
				path);
		else
			log_err("daemon.socket %s: cannot tell whether another pubd listens there: %s", path,
				strerror(err));
		return -EADDRINUSE;
	}
	unlink(path);
	return 0;
}

static int listen_on_path(struct pubd_ipc *srv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = srv->cfg->socket_path;
	struct stat st;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_err("daemon.socket %s: path longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	err = make_parent_dir(path);
	if (err < 0) {
		log_err("daemon.socket %s: cannot create its directory: %s", path, strerror(-err));
		return err;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = clear_path(path, &sa);
	if (err < 0) {
		close(fd);
		return err;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		log_err("daemon.socket %s: bind: %s", path, strerror(errno));
		close(fd);
		return err;
	}
	if (lstat(path, &st) == 0) {
		srv->path_dev = st.st_dev;
		srv->path_ino = st.st_ino;
	}
	if (chmod(path, srv->cfg->socket_mode) < 0)
		log_warn("daemon.socket %s: chmod %o: %s", path, srv->cfg->socket_mode, strerror(errno));
	/* The kernel's most (net.core.somaxconn): with a short backlog, one
	 * client connecting and closing in a loop kept it full, and others'
	 * connects failed at once (EAGAIN) before pubd saw them, the root and
	 * pubd-user reserve of limits.max_clients included. */
	if (listen(fd, SOMAXCONN) < 0) {
		err = -errno;
		close(fd);
		unlink(path);
		return err;
	}
	srv->path = strdup(path);
	return fd;
}

/* The file path a passed Unix socket is bound to, or "" (unnamed, or an
 * abstract name). */
static void passed_path(int fd, char *buf, size_t cap)
{
	struct sockaddr_un a;
	socklen_t len = sizeof(a);
	size_t n;

	buf[0] = 0;
	if (getsockname(fd, (struct sockaddr *)&a, &len) < 0 || a.sun_family != AF_UNIX ||
	    len <= offsetof(struct sockaddr_un, sun_path) || !a.sun_path[0])
		return;
	n = strnlen(a.sun_path, len - offsetof(struct sockaddr_un, sun_path));
	if (n >= cap)
		return;
	memcpy(buf, a.sun_path, n);
	buf[n] = 0;
}

int pubd_ipc_init(struct pubd_ipc *srv, const struct pubd_ipc_env *env)
{
	struct pubd_hash_key key;
	int n, fd = -1;

	memset(srv, 0, sizeof(*srv));
	srv->loop = env->loop;
	srv->cfg = env->cfg;
	srv->groups = env->groups;
	srv->counters = env->counters;
	srv->drops = env->drops;
	srv->ops = env->ops;
	srv->ctx = env->ctx;
	srv->fabric_name = "none";
	srv->listen_fd = -1;
	srv->log_proto = (struct pubd_log_limit){.what = "client protocol errors", .burst = 10, .prio = LOG_NOTICE};
	srv->log_denied =
		(struct pubd_log_limit){.what = "SUBSCRIBEs refused by a group's ACL", .burst = 10, .prio = LOG_NOTICE};
	srv->log_client =
		(struct pubd_log_limit){.what = "lines about single clients ending", .burst = 10, .prio = LOG_INFO};
	srv->log_glog =
		(struct pubd_log_limit){.what = "group logs that could not be made", .burst = 1, .prio = LOG_WARNING};
	/* A reader that subscribes, does not read and leaves, again and again,
	 * ends the group log each time. */
	srv->log_glog_end = (struct pubd_log_limit){
		.what = "group logs ended for a reader or given up on", .burst = 10, .prio = LOG_NOTICE};
	/* A local user opening connections that say nothing, again and again. */
	srv->log_hello = (struct pubd_log_limit){
		.what = "connections closed for want of a HELLO", .burst = 10, .prio = LOG_NOTICE};
	/* A local user connecting again and again past its uid's cap. */
	srv->log_per_uid = (struct pubd_log_limit){
		.what = "connections refused for limits.max_clients_per_uid", .burst = 10, .prio = LOG_NOTICE};
	pubd_random_key(&key);
	pubd_uid_count_init(&srv->per_uid, &key);
	if (srv_hello_init(srv) < 0)
		return -ENOMEM;
	/* Held so that, out of fds, a connection can still be accepted and
	 * closed (see accept_failed). */
	srv->reserve_fd = pubd_fd_reserve_open();
	/* Socket activation: systemd hands us the listening socket. */
	n = sd_listen_fds(1);
	if (n > 1) {
		log_err("systemd passed %d sockets; pubd takes one", n);
		return -EINVAL;
	}
	if (n == 1) {
		fd = SD_LISTEN_FDS_START;
		if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_err("the socket systemd passed is not a listening Unix stream socket");
			return -EINVAL;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		srv->listen_from_systemd = true;
		passed_path(fd, srv->sd_path, sizeof(srv->sd_path));
		log_info("listening on the socket passed by systemd (%s)", srv->sd_path[0] ? srv->sd_path : "unnamed");
		/* The socket unit's ListenStream= decides where clients connect;
		 * daemon.socket is not used. Said, not silently ignored. */
		if (srv->cfg->socket_path && strcmp(srv->cfg->socket_path, srv->sd_path))
			log_warn("daemon.socket is %s, but systemd passed the socket at %s: pubd listens there "
				 "(set the socket unit's ListenStream= to move it)",
				 srv->cfg->socket_path, srv->sd_path[0] ? srv->sd_path : "(unnamed)");
	} else {
		fd = listen_on_path(srv);
		if (fd < 0)
			return fd;
		log_info("listening on %s (mode %04o)", srv->path, srv->cfg->socket_mode);
	}
	srv->listen_fd = fd;
	srv->listen_watch = pubd_loop_watch(srv->loop, fd, EPOLLIN, on_accept, srv);
	if (!srv->listen_watch)
		return -errno;
	return 0;
}

void pubd_ipc_tick(struct pubd_ipc *srv, uint64_t now_ns)
{
	struct pubd_client *c, *next;

	/* A group log's readers ring when they read and pubd waits; one that
	 * did not is looked at here too. Readers an END moved off get their
	 * group's log back. */
	if (srv->glogs_waiting)
		srv_glog_flush_all(srv);
	if (srv->groups)
		srv_glog_tick(srv, now_ns);
	srv_direct_tick(srv, now_ns);
	pubd_log_limit_flush(&srv->log_proto, now_ns);
	pubd_log_limit_flush(&srv->log_denied, now_ns);
	pubd_log_limit_flush(&srv->log_client, now_ns);
	pubd_log_limit_flush(&srv->log_glog, now_ns);
	pubd_log_limit_flush(&srv->log_glog_end, now_ns);
	pubd_log_limit_flush(&srv->log_hello, now_ns);
	pubd_log_limit_flush(&srv->log_per_uid, now_ns);
	/* A reload may have shortened limits.hello_timeout_ms. */
	srv_hello_sweep(srv, now_ns);

	for (c = srv->clients; c; c = next) {
		next = c->next;
		if (c->closing && now_ns >= c->close_deadline_ns) {
			srv_log_limited(srv, log_client, LOG_INFO,
					"client %u (pid %d, %s): closed without reading its last reply", c->id,
					(int)c->pid, c->name);
			srv_client_close(c);
			continue;
		}
		/* Idle receive buffers go back to the budget. */
		if (!c->read_since_tick && c->rcap > RBUF_MIN && c->rlen == 0 && !c->big) {
			uint8_t *b = realloc(c->rbuf, RBUF_MIN);

			if (b) {
				srv_budget_give(srv, c->rcap - RBUF_MIN);
				c->rbuf = b;
				c->rcap = RBUF_MIN;
			}
		}
		c->read_since_tick = false;
	}
	/* Accepting again after a back-off; the reserve fd back if we can. */
	if (srv->reserve_fd < 0)
		srv->reserve_fd = pubd_fd_reserve_open();
	if (srv->listen_paused && srv->listen_watch) {
		srv->listen_paused = false;
		pubd_loop_watch_mod(srv->listen_watch, EPOLLIN);
	}
	accept_log(srv, false);
}

void pubd_ipc_shutdown(struct pubd_ipc *srv)
{
	struct pubd_client *c, *next;
	uint64_t n, lost = 0;

	for (c = srv->clients; c; c = next) {
		next = c->next;
		/* Stopping: what waits in a publish log is counted, not read. */
		n = srv_count_unhandled(c) + srv_publog_unhandled(c);
		srv_publog_stop_all(c);
		if (n) {
			pubd_drops_add(&c->drops, PUB_DROP_CLIENT_GONE, n);
			pubd_drops_add(srv->drops, PUB_DROP_CLIENT_GONE, n);
			srv->counters[PUBD_CTR_MSG_DROPPED] += n;
			lost += n;
		}
		if (!c->closing)
			srv_reply_error(c, 0, PUB_ERR_SHUTDOWN, "pubd is stopping");
		c->closing = true;
		c->close_deadline_ns = 0;
		/* One non-blocking attempt; a client that is not reading loses it. */
		if (!srv_client_flush(c))
			srv_client_close(c);
	}
	srv->dirty = NULL;
	if (lost)
		log_warn("stopping: %llu messages read from publishers (paused by back-pressure) were not published "
			 "(client_gone)",
			 (unsigned long long)lost);
}

void pubd_ipc_close(struct pubd_ipc *srv)
{
	struct pubd_group *g;
	struct pubd_out *o;
	unsigned i;

	/* Never initialised: pubd stopped before it served (its fabric did
	 * not open). There is nothing to close, and no config to read. */
	if (!srv->cfg)
		return;
	srv->exiting = true;
	while (srv->clients)
		srv_client_close(srv->clients);
	srv_hello_close(srv);
	srv_direct_tick(srv, pubd_now_ns()); /* exiting: the retired direct logs go */
	srv_ended_close_all(srv);
	pubd_uid_count_free(&srv->per_uid);
	if (srv->groups)
		pubd_groups_foreach(srv->groups, g, i)
		{
			srv_glog_group_removed(srv, g);
			srv_direct_retire_group(srv, g);
		}
	if (srv->listen_watch)
		pubd_loop_unwatch(srv->listen_watch);
	srv->listen_watch = NULL;
	if (srv->listen_fd >= 0) {
		close(srv->listen_fd);
		if (srv->path && !srv->listen_from_systemd && path_is_ours(srv))
			unlink(srv->path);
	}
	srv->listen_fd = -1;
	if (srv->reserve_fd >= 0)
		close(srv->reserve_fd);
	srv->reserve_fd = -1;
	free(srv->path);
	srv->path = NULL;
	while ((o = srv->free_outs)) {
		srv->free_outs = o->next;
		free(o);
	}
}

void pubd_ipc_set_fabric(struct pubd_ipc *srv, uint32_t mtu, uint64_t source_id, const char *fabric_name)
{
	srv->mtu = mtu;
	srv->source_id = source_id;
	srv->fabric_name = fabric_name;
}

/* ---- the clients as queries see them ---- */
const struct pubd_client *pubd_ipc_clients_first(const struct pubd_ipc *srv)
{
	return srv->clients;
}

const struct pubd_client *pubd_ipc_clients_next(const struct pubd_client *c)
{
	return c->next;
}

void pubd_ipc_client_info(const struct pubd_client *c, struct pubd_client_info *info)
{
	info->id = c->id;
	info->pid = c->pid;
	info->uid = c->uid;
	info->gid = c->gid;
	info->name = c->name;
	info->connected_ns = c->connected_ns;
	info->published = c->published;
	info->delivered = c->delivered;
	info->drops = &c->drops;
	/* Its own queue and what waits for it in its group logs: both are
	 * deliveries pubd holds for it and has not written yet. */
	info->queued = c->out_delivers + c->glog_wait_msgs;
	info->paused = c->paused;
	info->publish_log = c->log ? c->log->r.cap : 0;
	info->deliver_log = c->dlog ? c->dlog->w.cap : 0;
	info->direct_logs = c->ndirects;
	info->group_log_withheld = c->glog_withheld;
	info->subs = c->subs;
	info->nsubs = c->nsubs;
	info->pubs = c->pubs;
	info->npubs = c->npubs;
}

unsigned pubd_ipc_queued_for(const struct pubd_sub *s)
{
	const struct pubd_out *o;
	unsigned n = 0;

	for (o = s->client->out_head; o; o = o->next)
		if (o->sub == s)
			n++;
	return n + srv_glog_waiting_for(s);
}

bool pubd_ipc_listening(const struct pubd_ipc *srv)
{
	return srv->listen_fd >= 0;
}

const char *pubd_ipc_path(const struct pubd_ipc *srv)
{
	return srv->path;
}

const char *pubd_ipc_passed_path(const struct pubd_ipc *srv)
{
	return srv->listen_from_systemd ? srv->sd_path : NULL;
}

void pubd_ipc_direct_reconfigured(struct pubd_ipc *srv)
{
	/* Who may read a direct log may have changed: every one is retired,
	 * and its writer asks for a new one (or publishes through its
	 * publish log, with the direct path off). */
	srv_direct_retire_group(srv, NULL);
}
