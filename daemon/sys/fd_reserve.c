/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd_reserve.h"

int pubd_fd_reserve_open(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

int pubd_fd_reserve_accept(int listen_fd, int *reserve)
{
	int fd;

	if (*reserve >= 0)
		close(*reserve);
	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	*reserve = pubd_fd_reserve_open();
	return fd;
}
