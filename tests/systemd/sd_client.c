/* SPDX-License-Identifier: MIT */
/*
 * sd_check's minimal client of pubd's protocol (see sd_client.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "sd_client.h"

#define MS ((uint64_t)1000000)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int client_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read one frame into buf (bounded wait, pubd's log and notify kept flowing). */
int recv_frame(int fd, uint8_t *buf, size_t cap, uint8_t *type, const uint8_t **body, uint32_t *blen, size_t *have,
	       unsigned ms)
{
	uint64_t deadline = now_ns() + ms * MS;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t need;
	ssize_t n;
	int r;

	for (;;) {
		r = pub_proto_frame_peek(buf, *have, cap - PUB_PROTO_HDR_LEN, type, blen, body, &need);
		if (r == 1)
			return 0;
		if (r < 0)
			return -EPROTO;
		if (now_ns() >= deadline)
			return -ETIMEDOUT;
		sd_check_drain(); /* keep pubd's stderr pipe from filling up */
		if (poll(&p, 1, 50) <= 0)
			continue;
		n = recv(fd, buf + *have, cap - *have, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0)
			return -errno;
		*have += (size_t)n;
	}
}

void consume(uint8_t *buf, size_t *have, uint32_t blen)
{
	size_t used = PUB_PROTO_HDR_LEN + blen;

	memmove(buf, buf + used, *have - used);
	*have -= used;
}

int send_hello(int fd)
{
	uint8_t out[300];
	long n = pub_proto_enc_hello(out, sizeof(out), 0, "sd_check", 8);

	return n > 0 ? send_all(fd, out, (size_t)n) : -EINVAL;
}

/* WELCOME within ms; fills fabric name. */
int await_welcome(int fd, uint8_t *buf, size_t cap, size_t *have, char *fabric, size_t fcap, unsigned ms)
{
	struct pub_msg_welcome w;
	const uint8_t *body;
	uint32_t blen;
	uint8_t type;
	int err = recv_frame(fd, buf, cap, &type, &body, &blen, have, ms);

	if (err < 0)
		return err;
	if (type != PUB_FRAME_WELCOME || pub_proto_dec_welcome(body, blen, &w) < 0)
		return -EPROTO;
	snprintf(fabric, fcap, "%.*s", (int)w.fabric.len, w.fabric.ptr);
	consume(buf, have, blen);
	return 0;
}

/* QUERY STATUS: TABLE frames then OK; returns how many tables came. */
int query_status(int fd, uint8_t *buf, size_t cap, size_t *have, unsigned ms)
{
	struct pub_table_reader r;
	const uint8_t *body;
	uint8_t out[64], type;
	uint32_t blen;
	int tables = 0, err;
	long n = pub_proto_enc_query(out, sizeof(out), 7, PUB_QUERY_STATUS, "", 0);

	if (n <= 0)
		return -EINVAL;
	err = send_all(fd, out, (size_t)n);
	if (err < 0)
		return err;
	for (;;) {
		err = recv_frame(fd, buf, cap, &type, &body, &blen, have, ms);
		if (err < 0)
			return err;
		if (type == PUB_FRAME_TABLE) {
			if (pub_proto_dec_table(body, blen, &r) < 0 || r.req_id != 7)
				return -EPROTO;
			tables++;
		} else if (type == PUB_FRAME_OK) {
			consume(buf, have, blen);
			return tables;
		} else {
			return -EPROTO;
		}
		consume(buf, have, blen);
	}
}
