/* SPDX-License-Identifier: MIT */
/* A fake pubd's half of the handshake: fake_pubd.h. */
#include "fake_pubd.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"

int fake_listen(const char *name, char *dir, size_t dircap, char *path, size_t pathcap, int backlog)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	snprintf(dir, dircap, "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, pathcap, "%s/sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int fake_read_full(int fd, void *p, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (uint8_t *)p + got, n - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

int fake_read_hello(int fd)
{
	uint8_t hdr[PUB_PROTO_HDR_LEN], body[512];
	const uint8_t *b;
	uint32_t blen;
	uint8_t type;

	if (fake_read_full(fd, hdr, sizeof(hdr)) ||
	    pub_proto_frame_peek(hdr, sizeof(hdr), sizeof(body), &type, &blen, &b, NULL) < 0 ||
	    type != PUB_FRAME_HELLO || blen > sizeof(body) || fake_read_full(fd, body, blen))
		return -1;
	return 0;
}

int fake_write_welcome(int fd)
{
	struct pub_msg_welcome w = {
		.version = PUB_PROTO_VERSION,
		.max_message = 16 << 20,
		.mtu = 1024,
		.client_id = 1,
		.source_id = 42,
		.daemon_version = {"fake", 4},
		.fabric = {"udp", 3},
	};
	uint8_t out[512];
	long n = pub_proto_enc_welcome(out, sizeof(out), &w);

	return n > 0 && write(fd, out, (size_t)n) == n ? 0 : -1;
}
