/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd_reserve.h"

int pubd_fd_reserve_open(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

bool pubd_fd_reserve_refuse(int listen_fd, int *reserve, void (*refuse)(void *ctx, int fd), void *ctx)
{
	int fd;

	if (*reserve >= 0)
		close(*reserve);
	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		refuse(ctx, fd);
	*reserve = pubd_fd_reserve_open();
	return fd >= 0 && *reserve >= 0;
}
