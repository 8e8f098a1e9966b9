/* SPDX-License-Identifier: MIT */
/*
 * sd_check's minimal client of pubd's protocol: connect, HELLO, WELCOME and
 * a status query, with deadlines.
 */
#ifndef SD_CLIENT_H
#define SD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* Provided by the program using this client: reads what pubd wrote to its
 * log and notify pipes, so they never fill while the client waits. */
void sd_check_drain(void);

int client_connect(const char *path);
int send_all(int fd, const void *buf, size_t len);
int recv_frame(int fd, uint8_t *buf, size_t cap, uint8_t *type, const uint8_t **body, uint32_t *blen, size_t *have,
	       unsigned ms);
void consume(uint8_t *buf, size_t *have, uint32_t blen);
int send_hello(int fd);
int await_welcome(int fd, uint8_t *buf, size_t cap, size_t *have, char *fabric, size_t fcap, unsigned ms);
int query_status(int fd, uint8_t *buf, size_t cap, size_t *have, unsigned ms);

#endif
