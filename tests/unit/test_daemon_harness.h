/* SPDX-License-Identifier: MIT */
/*
 * A real struct pubd on the fake fabric, in the test's own process, and
 * clients that speak the real protocol to its real listening socket. The
 * test runs the daemon's loop a turn at a time; nothing here sleeps.
 * Shared by the test_daemon_* unit tests and the fuzz_ipc/fuzz_rxpath
 * fuzzers.
 */
#ifndef TEST_DAEMON_HARNESS_H
#define TEST_DAEMON_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "fabric_fake.h"

struct hd {
	struct pubd d;
	struct pubd_fake *fk;
	char dir[40];
	char cfg_path[100];
	char sock_path[100];
	bool up;
};

/* Start a daemon whose config is the harness's daemon/fabric sections and
 * then body (limits:, groups:, fabric keys go in fabric_extra). 0 or -errno. */
int hd_start(struct hd *h, const char *fabric_extra, const char *body);
/* Rewrite the body and reload as SIGHUP would; pubd_reload's result. */
int hd_reload(struct hd *h, const char *fabric_extra, const char *body);
void hd_stop(struct hd *h);
/* Stop every daemon still running (a test's teardown, after a failed
 * assert left them; the struct hd must outlive the test: make it static). */
/* A cmocka teardown: stops every daemon a test started and left running. */
int hd_teardown(void **state);
/* One loop turn, waiting at most timeout_ms. Returns work done. */
int hd_turn(struct hd *h, int timeout_ms);
/* Turn until a turn finds nothing to do (at most max turns). */
void hd_settle(struct hd *h, int max);
struct pubd_group *hd_group(struct hd *h, const char *name);

struct hc {
	struct hd *h; /* the daemon turned while this client waits */
	int fd;
	uint8_t *buf;
	size_t len, cap;
	uint32_t next_req;
};

/* Connect to h's socket (nonblocking), optionally with a small send or
 * receive buffer (0: default), and wait until the daemon accepted it. */
int hc_connect(struct hd *h, struct hc *c, int rcvbuf);
/* Connect without waiting for the accept (the daemon takes it at its next
 * turn, as it would a real client's). */
int hc_connect_nowait(struct hd *h, struct hc *c);
void hc_close(struct hc *c);
/* Write all of p, turning the daemon while the socket is full; -1 when
 * the daemon closed the connection or deadline_ms passed. */
int hc_write(struct hc *c, const void *p, size_t n, int deadline_ms);
/* Try to write; returns bytes written (0 when full), -1 on error. */
long hc_try_write(struct hc *c, const void *p, size_t n);
/* Read until a whole frame is buffered (turning the daemon), or
 * deadline_ms passes. 1 with type/body/len (valid until the next call to
 * hc_next or hc_pop), 0 on timeout, -1 at end of connection. */
int hc_next(struct hc *c, uint8_t *type, const uint8_t **body, uint32_t *len, int deadline_ms);
/* Drop the frame hc_next returned. */
void hc_pop(struct hc *c);

/* Protocol helpers; each returns 0 on the expected reply. */
int hc_hello(struct hc *c, const char *name);
/* SUBSCRIBE/UNSUBSCRIBE and wait for OK (deliveries arriving meanwhile
 * are counted into *delivers when not NULL, and dropped). */
int hc_group_req(struct hc *c, uint8_t type, const char *group, uint64_t *delivers);
/* Queue a PUBLISH frame with req_id 0 into out (returns its length). */
size_t hc_enc_publish(uint8_t *out, size_t cap, const char *group, const void *payload, size_t len);

/* A deadline in ms from now, and whether it passed. */
uint64_t hd_deadline(int ms);
bool hd_past(uint64_t deadline);

#endif
