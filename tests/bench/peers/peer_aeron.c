/* SPDX-License-Identifier: MIT */
/*
 * peer_aeron: the peer client on Aeron's C client, talking to the media
 * driver (aeronmd) of its host through $AERON_DIR. Channels are Aeron URIs
 * ("aeron:udp?endpoint=239.1.2.3:40457|interface=10.9.0.1|fc=min,g:/2");
 * the stream id is 1001. Sending: an exclusive publication (one thread),
 * waiting when it is back-pressured. Receiving: a subscription with a
 * fragment assembler (messages larger than the MTU come whole).
 *
 * Idle: after nothing to do, spin 100 polls, yield 100, then sleep 10 us a
 * poll (what Aeron's backoff idle strategy does, roughly), so a waiting
 * client does not hold a core of the two this host has.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <aeronc.h>

#include "peer.h"

#define STREAM_ID 1001

struct peer {
	aeron_context_t *ctx;
	aeron_t *client;
	aeron_exclusive_publication_t *pub;
	aeron_subscription_t *sub;
	aeron_fragment_assembler_t *asm_;
	peer_msg_fn on_msg;
	void *arg;
	int delivered;
};

const char *peer_transport_name(const struct peer_args *a)
{
	(void)a;
	return "aeron";
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void idle(unsigned *empty)
{
	struct timespec ts = {0, 10000};

	if (++*empty < 100)
		return;
	if (*empty < 200)
		sched_yield();
	else
		nanosleep(&ts, NULL);
}

static void on_fragment(void *clientd, const uint8_t *buffer, size_t length, aeron_header_t *header)
{
	struct peer *p = clientd;

	(void)header;
	p->on_msg(buffer, length, p->arg);
	p->delivered++;
}

static int add_pub(struct peer *p, const char *uri)
{
	aeron_async_add_exclusive_publication_t *async;
	int r;

	if (aeron_async_add_exclusive_publication(&async, p->client, uri, STREAM_ID) < 0)
		return -1;
	while ((r = aeron_async_add_exclusive_publication_poll(&p->pub, async)) == 0)
		sched_yield();
	return r < 0 ? -1 : 0;
}

static int add_sub(struct peer *p, const char *uri)
{
	aeron_async_add_subscription_t *async;
	int r;

	if (aeron_async_add_subscription(&async, p->client, uri, STREAM_ID, NULL, NULL, NULL, NULL) < 0)
		return -1;
	while ((r = aeron_async_add_subscription_poll(&p->sub, async)) == 0)
		sched_yield();
	if (r < 0)
		return -1;
	return aeron_fragment_assembler_create(&p->asm_, on_fragment, p);
}

struct peer *peer_open(const struct peer_args *a)
{
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (aeron_context_init(&p->ctx) < 0 || aeron_init(&p->client, p->ctx) < 0 || aeron_start(p->client) < 0)
		goto fail;
	if (a->tx && add_pub(p, a->tx) < 0)
		goto fail;
	if (a->rx && add_sub(p, a->rx) < 0)
		goto fail;
	return p;
fail:
	fprintf(stderr, "peer_aeron: %s\n", aeron_errmsg());
	peer_close(p, 0);
	return NULL;
}

int peer_send(struct peer *p, const void *data, size_t len)
{
	uint64_t t0 = now_ms();
	unsigned empty = 0;
	int64_t r;

	for (;;) {
		r = aeron_exclusive_publication_offer(p->pub, data, len, NULL, NULL);
		if (r > 0)
			return 0;
		if (r == AERON_PUBLICATION_CLOSED || r == AERON_PUBLICATION_MAX_POSITION_EXCEEDED ||
		    r == AERON_PUBLICATION_ERROR) {
			fprintf(stderr, "peer_aeron: offer: %lld %s\n", (long long)r, aeron_errmsg());
			return -1;
		}
		/* Not connected (yet, or a receiver went): wait, but not forever. */
		if (r == AERON_PUBLICATION_NOT_CONNECTED && now_ms() - t0 > 30000) {
			fprintf(stderr, "peer_aeron: no receiver for 30 s\n");
			return -1;
		}
		idle(&empty);
	}
}

int peer_poll(struct peer *p, peer_msg_fn on_msg, void *arg, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
	unsigned empty = 0;
	int r;

	p->on_msg = on_msg;
	p->arg = arg;
	p->delivered = 0;
	for (;;) {
		r = aeron_subscription_poll(p->sub, aeron_fragment_assembler_handler, p->asm_, 64);
		if (r < 0)
			return -1;
		if (p->delivered)
			return p->delivered;
		if (!r && now_ms() >= end)
			return 0;
		if (r)
			empty = 0;
		else
			idle(&empty);
	}
}

void peer_close(struct peer *p, int timeout_ms)
{
	/* The driver lingers a closed publication (5 s by default), sending what is
	 * left and answering NAKs: the data outlives this process. */
	(void)timeout_ms;
	if (p->pub) {
		aeron_exclusive_publication_close(p->pub, NULL, NULL);
	}
	if (p->sub)
		aeron_subscription_close(p->sub, NULL, NULL);
	if (p->asm_)
		aeron_fragment_assembler_delete(p->asm_);
	if (p->client)
		aeron_close(p->client);
	if (p->ctx)
		aeron_context_close(p->ctx);
	free(p);
}
