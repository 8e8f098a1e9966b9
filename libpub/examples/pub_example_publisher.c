// SPDX-License-Identifier: MIT
/*
 * A complete libpub publisher: sends ten messages to a group, the last one
 * with PUB_SYNC so that pubd's verdict on all of them (an ACL denial, an
 * unknown group) is known before exiting.
 *
 *   cc pub_example_publisher.c $(pkg-config --cflags --libs pub)
 *   ./pub_example_publisher prices
 */
#include <stdio.h>
#include <string.h>

#include <pub.h>

int main(int argc, char **argv)
{
	const char *group = argc > 1 ? argv[1] : "example";
	pub_client_t *c;
	char msg[64];
	int r;

	/* NULL: the socket in $PUBD_SOCKET, else /run/pubd/pubd.sock; NULL options: defaults. */
	r = pub_connect(&c, NULL, NULL);
	if (r < 0) {
		fprintf(stderr, "publisher: %s\n", pub_errmsg(NULL));
		return 2;
	}
	for (int i = 0; i < 10; i++) {
		int len = snprintf(msg, sizeof(msg), "message %d", i);

		r = pub_publish(c, group, msg, (size_t)len, i == 9 ? PUB_SYNC : 0);
		if (r < 0)
			break;
	}
	if (r == 0)
		r = pub_flush(c, 0); /* an error pubd reported about an earlier message */
	if (r < 0)
		fprintf(stderr, "publisher: %s\n", pub_errmsg(c));
	pub_close(c);
	return r < 0 ? 1 : 0;
}
