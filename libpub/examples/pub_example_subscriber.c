// SPDX-License-Identifier: MIT
/*
 * A complete libpub subscriber driven by its own poll() loop through
 * pub_fd(), as an application with other descriptors would do. It prints
 * every message of the groups named on the command line; pubd restarts are
 * survived without any code here (libpub reconnects and resubscribes).
 *
 *   cc pub_example_subscriber.c $(pkg-config --cflags --libs pub)
 *   ./pub_example_subscriber prices news
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>

#include <pub.h>

int main(int argc, char **argv)
{
	struct pub_options opts = PUB_OPTIONS_INIT;
	struct pub_message m;
	pub_client_t *c;
	int r;

	opts.client_name = "example-subscriber";
	r = pub_connect(&c, NULL, &opts);
	if (r < 0) {
		fprintf(stderr, "subscriber: %s\n", pub_errmsg(NULL));
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		r = pub_subscribe(c, argv[i]);
		if (r < 0) {
			/* e.g. "subscribe 'x': permission denied by the group's subscribe ACL (...)" */
			fprintf(stderr, "subscriber: %s\n", pub_errmsg(c));
			pub_close(c);
			return 1;
		}
	}
	for (;;) {
		struct pollfd p = {.fd = pub_fd(c), .events = POLLIN};

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
		/* Take everything there is, then wait again. */
		while ((r = pub_recv(c, &m, 0)) != 0) {
			if (r < 0) {
				fprintf(stderr, "subscriber: %s\n", pub_errmsg(c));
				/* pubd's errors (-PUB_E...) leave the handle usable; others end here. */
				if (-r < PUB_EBASE)
					goto out;
				continue;
			}
			printf("%s %016" PRIx64 " %" PRIu64 " %.*s\n", m.group, m.source, m.seq, (int)m.len,
			       (const char *)m.data);
			fflush(stdout);
		}
	}
out:
	pub_close(c);
	return 0;
}
