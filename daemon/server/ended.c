/* SPDX-License-Identifier: MIT */
/*
 * Connections pubd ended (a protocol error, the disconnect policy) before
 * their clients hung up: what pubd keeps of them until they do.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop.h"
#include "server_internal.h"

/*
 * A connection pubd ends leaves its deliver log's unread records to its
 * client, and a client that keeps the mapping could keep them as long as it
 * likes: connecting again and again, it would pin any number of logs. So
 * the log lingers instead, still charged to limits.client_buffer_budget and
 * counted against limits.max_clients and its uid's max_clients_per_uid,
 * with a duplicate of the socket, shut for writing (the client reads the
 * end of the connection after what pubd sent), until the client hangs up:
 * then it goes whole, like any hung-up client's. So do the retired group
 * logs it may hold a message in (glog.c). What a client pins this way is
 * what a connected one holds.
 */
struct srv_dlog_linger {
	struct pubd_ipc *srv;
	struct srv_dlog *l;
	struct srv_glog_holds holds; /* retired group logs it may hold a message in */
	int fd;
	uid_t uid; /* its client's: it counts against limits.max_clients_per_uid */
	struct pubd_loop_watch *watch;
	struct srv_dlog_linger *prev, *next;
};

static void linger_end(struct srv_dlog_linger *lg, bool hung_up)
{
	struct pubd_ipc *srv = lg->srv;

	if (lg->prev)
		lg->prev->next = lg->next;
	else
		srv->lingering = lg->next;
	if (lg->next)
		lg->next->prev = lg->prev;
	srv->nlingering--;
	pubd_uid_count_dec(&srv->per_uid, lg->uid);
	pubd_loop_unwatch(lg->watch);
	close(lg->fd);
	srv_dlog_free(srv, lg->l, hung_up);
	srv_glog_holds_release(srv, &lg->holds);
	free(lg);
}

void srv_ended_holds(struct pubd_client *c)
{
	if (!c->linger) {
		srv_glog_holds_release(c->srv, &c->glog_holds);
		return;
	}
	c->linger->holds = c->glog_holds;
	c->glog_holds = (struct srv_glog_holds){0};
}

static void on_linger_hangup(void *ctx, uint32_t events)
{
	(void)events; /* only a hang-up (EPOLLRDHUP, EPOLLHUP, EPOLLERR) is watched for */
	linger_end(ctx, true);
}

bool srv_ended_linger(struct pubd_client *c)
{
	struct pubd_ipc *srv = c->srv;
	struct srv_dlog_linger *lg;

	if (!c->dlog || !(lg = calloc(1, sizeof(*lg))))
		return false;
	lg->fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
	if (lg->fd < 0 || shutdown(lg->fd, SHUT_WR) < 0 ||
	    !(lg->watch = pubd_loop_watch(srv->loop, lg->fd, EPOLLRDHUP, on_linger_hangup, lg))) {
		if (lg->fd >= 0)
			close(lg->fd);
		free(lg);
		return false;
	}
	/* Its eventfds go (nobody rings or is rung for a log nobody writes);
	 * the mapping and its charge stay. */
	srv_shm_close(srv, &c->dlog->shm, true);
	srv_said_closed(c);
	lg->srv = srv;
	lg->l = c->dlog;
	lg->uid = c->uid; /* the client's count passes to it (srv_client_close) */
	c->dlog = NULL;
	c->linger = lg;
	lg->next = srv->lingering;
	if (lg->next)
		lg->next->prev = lg;
	srv->lingering = lg;
	srv->nlingering++;
	return true;
}

void srv_ended_close_all(struct pubd_ipc *srv)
{
	while (srv->lingering)
		linger_end(srv->lingering, false);
}
