/* SPDX-License-Identifier: MIT */
/*
 * pubd's half of the handshake for tests of libpub against a fake pubd in
 * their own process (a listening Unix socket the test serves itself).
 */
#ifndef PUBD_TEST_FAKE_PUBD_H
#define PUBD_TEST_FAKE_PUBD_H

#include <stddef.h>
#include <stdint.h>

/* A listening Unix socket at DIR/sock, DIR a fresh /tmp/NAME.XXXXXX:
 * its fd, dir and path filled in; -1 on failure. */
int fake_listen(const char *name, char *dir, size_t dircap, char *path, size_t pathcap, int backlog);
/* Read exactly n bytes from fd: 0, or -1 at EOF or an error. */
int fake_read_full(int fd, void *p, size_t n);
/* Read one HELLO frame from fd: 0, or -1 (EOF, or another frame). */
int fake_read_hello(int fd);
/* Write pubd's WELCOME (no shared memory offered) to fd: 0, or -1. */
int fake_write_welcome(int fd);

#endif
