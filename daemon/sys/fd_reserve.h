/* SPDX-License-Identifier: MIT */
/*
 * A reserve file descriptor for a listener, given up for a moment when
 * accept() fails for want of fds (EMFILE): the connection waiting in the
 * backlog is taken and refused, so it neither waits there nor keeps the
 * listener readable, which a level-triggered loop would spin on.
 */
#ifndef PUBD_FD_RESERVE_H
#define PUBD_FD_RESERVE_H

#include <stdbool.h>

/* A reserve (an fd of /dev/null), or -1. */
int pubd_fd_reserve_open(void);

/*
 * Out of fds: close *reserve, accept one connection on listen_fd and hand
 * it to refuse (which closes it), then take the reserve again, in that
 * order: the refused connection's fd is the one the reserve gets back.
 * True when a connection was refused and the reserve is back (accepting
 * may go on); *reserve is -1 when it could not be had back.
 */
bool pubd_fd_reserve_refuse(int listen_fd, int *reserve, void (*refuse)(void *ctx, int fd), void *ctx);

#endif
