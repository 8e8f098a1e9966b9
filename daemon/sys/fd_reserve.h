/* SPDX-License-Identifier: MIT */
/*
 * A reserve file descriptor for a listener, given up for a moment when
 * accept() fails for want of fds (EMFILE): the connection waiting in the
 * backlog is taken and can be refused, so it neither waits there nor keeps
 * the listener readable, which a level-triggered loop would spin on.
 */
#ifndef PUBD_FD_RESERVE_H
#define PUBD_FD_RESERVE_H

/* A reserve (an fd of /dev/null), or -1. */
int pubd_fd_reserve_open(void);

/*
 * Out of fds: close *reserve, accept one connection on listen_fd, and take
 * the reserve again (*reserve is -1 when it cannot be had back). Returns
 * the connection, for the caller to refuse and close, or -1.
 */
int pubd_fd_reserve_accept(int listen_fd, int *reserve);

#endif
