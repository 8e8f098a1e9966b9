/* SPDX-License-Identifier: MIT */
/*
 * The scripted test fabric (see fabric_fake.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "proto.h"
#include "config.h"
#include "fabric_fake.h"
#include "msgbuf.h"
#include "loop.h"

#define FAKE_DEFAULT_MTU 1024
#define RX_BATCH	 32

struct fake_slot {
	bool joined; /* join() called and not left */
	bool up;     /* group_state(up) delivered or about to be */
	bool listening;
	enum pubd_join_mode mode;
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

enum fake_ev_type { EV_NONE, EV_GROUP, EV_WRITABLE, EV_MTU };

struct fake_ev {
	enum fake_ev_type type;
	int slot;
	bool up;
	int err;
	uint32_t mtu;
};

struct pubd_fabric {
	const struct pubd_fabric_events *ev;
	void *ctx;
	struct pubd_loop *loop;
	int efd;
	struct pubd_loop_watch *watch;
	uint32_t mtu;

	struct fake_slot *slots;
	unsigned nslots;
	int join_result, join_call_error;

	long credits; /* -1: unlimited */
	bool starved; /* a send came short: writable owed when credits return */
	uint64_t short_sends;

	struct fake_ev *evq;
	size_t nev, evcap;

	uint64_t peer_id; /* this fake's unicast address (send_to, rx from) */

	struct pubd_fake_sent *sent;
	size_t nsent, sentcap;
	uint64_t sent_total;
	pubd_fake_tap_fn tap;
	void *tap_ctx;

	/* As a fabric sending lent payloads in place does (verbs/inplace.c):
	 * pinned at the send, unpinned by pubd_fake_complete, oldest first. */
	bool pin_lent;
	struct pubd_msgbuf **pinned;
	size_t npinned, pincap;
	uint64_t pin_broken; /* pinned buffers found no longer lent at completion */
};

struct pubd_fake *pubd_fake_of(struct pubd_fabric *f)
{
	return (struct pubd_fake *)f;
}

static struct pubd_fabric *F(struct pubd_fake *fk)
{
	return (struct pubd_fabric *)fk;
}

static const struct pubd_fabric *CF(const struct pubd_fake *fk)
{
	return (const struct pubd_fabric *)fk;
}

/* ---- events, delivered from the loop ---- */

static void post(struct pubd_fabric *f, struct fake_ev e)
{
	uint64_t one = 1;

	if (f->nev == f->evcap) {
		size_t cap = f->evcap ? f->evcap * 2 : 16;
		struct fake_ev *v = realloc(f->evq, cap * sizeof(*v));

		if (!v)
			abort(); /* a test fabric: out of memory ends the test */
		f->evq = v;
		f->evcap = cap;
	}
	f->evq[f->nev++] = e;
	if (write(f->efd, &one, sizeof(one)) < 0) {
		/* the counter cannot overflow in a test */
	}
}

static void on_eventfd(void *ctx, uint32_t events)
{
	struct pubd_fabric *f = ctx;
	uint64_t v;
	size_t i;

	(void)events;
	if (read(f->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: already drained */
	}
	/* A handler may post more (a join from a reload): take a snapshot. */
	for (i = 0; i < f->nev; i++) {
		struct fake_ev e = f->evq[i];

		switch (e.type) {
		case EV_GROUP:
			f->ev->group_state(f->ctx, e.slot, e.up, e.err);
			break;
		case EV_WRITABLE:
			f->ev->writable(f->ctx);
			break;
		case EV_MTU:
			if (f->ev->mtu_changed)
				f->ev->mtu_changed(f->ctx, e.mtu);
			break;
		case EV_NONE: /* its group was left since */
			break;
		}
	}
	f->nev = 0;
}

static struct fake_slot *slot_get(struct pubd_fabric *f, int slot, bool grow)
{
	if (slot < 0)
		return NULL;
	if ((unsigned)slot >= f->nslots) {
		unsigned n = (unsigned)slot + 1;
		struct fake_slot *v;

		if (!grow)
			return NULL;
		v = realloc(f->slots, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + f->nslots, 0, (n - f->nslots) * sizeof(*v));
		f->slots = v;
		f->nslots = n;
	}
	return &f->slots[slot];
}

/* ---- ops ---- */

/* Unicast addresses: one per fake opened, never reused in a process. */
static uint64_t fake_peer_ids;

static int fake_open(struct pubd_fabric **out, const struct pubd_config *cfg, struct pubd_loop *loop,
		     const struct pubd_fabric_events *ev, void *ctx)
{
	struct pubd_fabric *f = calloc(1, sizeof(*f));
	int err;

	if (!f)
		return -ENOMEM;
	f->ev = ev;
	f->ctx = ctx;
	f->loop = loop;
	f->credits = -1;
	f->peer_id = ++fake_peer_ids;
	f->mtu = cfg->mtu ? cfg->mtu : FAKE_DEFAULT_MTU;
	f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (f->efd < 0) {
		err = -errno;
		goto fail;
	}
	f->watch = pubd_loop_watch(loop, f->efd, EPOLLIN, on_eventfd, f);
	if (!f->watch) {
		err = -errno;
		goto fail;
	}
	*out = f;
	return 0;
fail:
	if (f->efd >= 0)
		close(f->efd);
	free(f);
	return err;
}

static void fake_close(struct pubd_fabric *f)
{
	if (!f)
		return;
	pubd_fake_complete((struct pubd_fake *)f, f->npinned);
	free(f->pinned);
	pubd_fake_sent_clear((struct pubd_fake *)f);
	pubd_loop_unwatch(f->watch);
	close(f->efd);
	free(f->sent);
	free(f->evq);
	free(f->slots);
	free(f);
}

static int fake_join(struct pubd_fabric *f, int slot, const struct sockaddr *addr, socklen_t addrlen,
		     enum pubd_join_mode mode)
{
	struct fake_slot *s;

	if (f->join_call_error)
		return f->join_call_error;
	if (addrlen > sizeof(s->addr))
		return -EINVAL;
	s = slot_get(f, slot, true);
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->joined = true;
	s->mode = mode;
	memcpy(&s->addr, addr, addrlen);
	s->addrlen = addrlen;
	/* IDLE: joined but not taking datagrams until listen(on). */
	s->listening = (mode & PUBD_JOIN_RECV) && !(mode & PUBD_JOIN_IDLE);
	s->up = f->join_result == 0;
	post(f, (struct fake_ev){.type = EV_GROUP, .slot = slot, .up = s->up, .err = f->join_result});
	return 0;
}

static void fake_leave(struct pubd_fabric *f, int slot)
{
	struct fake_slot *s = slot_get(f, slot, false);
	size_t i;

	if (s)
		memset(s, 0, sizeof(*s));
	/* As the real fabrics: nothing of a group left is reported after it
	 * (udp clears the slot's pending report, verbs reports from slot
	 * state), so a group that takes the slot over never gets its events. */
	for (i = 0; i < f->nev; i++)
		if (f->evq[i].type == EV_GROUP && f->evq[i].slot == slot)
			f->evq[i].type = EV_NONE;
}

static int fake_listen(struct pubd_fabric *f, int slot, bool on)
{
	struct fake_slot *s = slot_get(f, slot, false);

	if (!s || !s->joined || !(s->mode & PUBD_JOIN_RECV))
		return -EINVAL;
	s->listening = on;
	return 0;
}

/* Record (or tap) what was sent, within the credits: to is 0 for the
 * group of slot, else the unicast peer. */
static int record(struct pubd_fabric *f, int slot, uint64_t to, const struct pubd_tx_dgram *d, unsigned n)
{
	unsigned i, take = n;

	for (i = 0; i < n; i++)
		if (d[i].hdr_len + d[i].payload_len > f->mtu)
			return -EMSGSIZE;
	if (f->credits >= 0 && (long)take > f->credits)
		take = (unsigned)f->credits;
	if (take < n) {
		f->short_sends++;
		f->starved = true;
	}
	if (f->credits >= 0)
		f->credits -= take;
	for (i = 0; i < take; i++) {
		struct pubd_fake_sent *r;
		uint32_t len = d[i].hdr_len + d[i].payload_len;

		if (f->pin_lent && d[i].lent) {
			if (f->npinned == f->pincap) {
				size_t cap = f->pincap ? f->pincap * 2 : 64;
				struct pubd_msgbuf **v = realloc(f->pinned, cap * sizeof(*v));

				if (!v)
					return (int)i;
				f->pinned = v;
				f->pincap = cap;
			}
			pubd_msgbuf_pin(d[i].lent);
			f->pinned[f->npinned++] = d[i].lent;
		}

		if (f->tap) {
			f->tap(f->tap_ctx, slot, &d[i]);
			f->sent_total++;
			continue;
		}
		if (f->nsent == f->sentcap) {
			size_t cap = f->sentcap ? f->sentcap * 2 : 64;
			struct pubd_fake_sent *v = realloc(f->sent, cap * sizeof(*v));

			if (!v)
				return (int)i;
			f->sent = v;
			f->sentcap = cap;
		}
		r = &f->sent[f->nsent];
		r->data = malloc(len ? len : 1);
		if (!r->data)
			return (int)i;
		if (d[i].hdr_len)
			memcpy(r->data, d[i].hdr, d[i].hdr_len);
		if (d[i].payload_len)
			memcpy(r->data + d[i].hdr_len, d[i].payload, d[i].payload_len);
		r->len = len;
		r->slot = slot;
		r->to = to;
		f->nsent++;
		f->sent_total++;
	}
	return (int)take;
}

static int fake_send(struct pubd_fabric *f, int slot, const struct pubd_tx_dgram *d, unsigned n)
{
	struct fake_slot *s = slot_get(f, slot, false);

	if (!s || !s->joined || !s->up)
		return -ENOTCONN;
	return record(f, slot, 0, d, n);
}

static int fake_send_to(struct pubd_fabric *f, const void *peer, uint32_t peer_len, const struct pubd_tx_dgram *d,
			unsigned n)
{
	uint64_t to;

	if (peer_len != sizeof(to))
		return -EINVAL;
	memcpy(&to, peer, sizeof(to));
	if (!to)
		return -EINVAL;
	return record(f, -1, to, d, n);
}

/* A fake's peer id names it whole: each fake is a host. */
static uint32_t fake_peer_host(const void *peer, uint32_t peer_len, uint8_t *out)
{
	if (peer_len != sizeof(uint64_t))
		return 0;
	memcpy(out, peer, peer_len);
	return peer_len;
}

static uint32_t fake_mtu(const struct pubd_fabric *f)
{
	return f->mtu;
}

static void fake_status(const struct pubd_fabric *f, struct pub_table_builder *tb)
{
	pub_table_str(tb, "fabric");
	pub_table_str(tb, "fake (tests)");
	(void)f;
}

const struct pubd_fabric_ops pubd_fabric_fake_ops = {
	.name = "fake",
	.open = fake_open,
	.close = fake_close,
	.join = fake_join,
	.leave = fake_leave,
	.listen = fake_listen,
	.send = fake_send,
	.send_to = fake_send_to,
	.peer_host = fake_peer_host,
	.mtu = fake_mtu,
	.status = fake_status,
};

/* ---- the test's controls ---- */

void pubd_fake_set_pin_lent(struct pubd_fake *fk, bool on)
{
	F(fk)->pin_lent = on;
}

size_t pubd_fake_pinned(const struct pubd_fake *fk)
{
	return CF(fk)->npinned;
}

uint64_t pubd_fake_pin_broken(const struct pubd_fake *fk)
{
	return CF(fk)->pin_broken;
}

size_t pubd_fake_complete(struct pubd_fake *fk, size_t n)
{
	struct pubd_fabric *f = F(fk);
	size_t i;

	if (n > f->npinned)
		n = f->npinned;
	if (!n)
		return 0;
	/* Taken off the list first: an unpin may end a log, never a send. */
	for (i = 0; i < n; i++) {
		struct pubd_msgbuf *m = f->pinned[i];
		volatile uint8_t touch;

		f->pinned[i] = NULL;
		/* What the device does: it read the bytes where they were lent
		 * until now (a log unmapped under the send faults here), and
		 * they must still be the lender's (not copied away meanwhile). */
		if (m->len)
			touch = m->data[0] ^ m->data[m->len - 1];
		(void)touch;
		if (!pubd_msgbuf_is_lent(m))
			f->pin_broken++;
		pubd_msgbuf_unpin(m);
	}
	memmove(f->pinned, f->pinned + n, (f->npinned - n) * sizeof(*f->pinned));
	f->npinned -= n;
	return n;
}

void pubd_fake_set_join_result(struct pubd_fake *fk, int err)
{
	F(fk)->join_result = err;
}

void pubd_fake_set_join_call_error(struct pubd_fake *fk, int err)
{
	F(fk)->join_call_error = err;
}

void pubd_fake_group_down(struct pubd_fake *fk, int slot, int err)
{
	struct pubd_fabric *f = F(fk);
	struct fake_slot *s = slot_get(f, slot, false);

	if (!s || !s->joined)
		return;
	s->up = false;
	post(f, (struct fake_ev){.type = EV_GROUP, .slot = slot, .up = false, .err = err});
}

void pubd_fake_group_up(struct pubd_fake *fk, int slot)
{
	struct pubd_fabric *f = F(fk);
	struct fake_slot *s = slot_get(f, slot, false);

	if (!s || !s->joined)
		return;
	s->up = true;
	post(f, (struct fake_ev){.type = EV_GROUP, .slot = slot, .up = true});
}

bool pubd_fake_group_is_up(const struct pubd_fake *fk, int slot)
{
	const struct pubd_fabric *f = CF(fk);

	return slot >= 0 && (unsigned)slot < f->nslots && f->slots[slot].joined && f->slots[slot].up;
}

bool pubd_fake_group_is_listening(const struct pubd_fake *fk, int slot)
{
	const struct pubd_fabric *f = CF(fk);

	return slot >= 0 && (unsigned)slot < f->nslots && f->slots[slot].joined && f->slots[slot].listening;
}

void pubd_fake_set_mtu(struct pubd_fake *fk, uint32_t mtu)
{
	struct pubd_fabric *f = F(fk);

	f->mtu = mtu;
	post(f, (struct fake_ev){.type = EV_MTU, .mtu = mtu});
}

void pubd_fake_set_credits(struct pubd_fake *fk, long credits)
{
	struct pubd_fabric *f = F(fk);

	f->credits = credits;
	if (f->starved && credits != 0) {
		f->starved = false;
		post(f, (struct fake_ev){.type = EV_WRITABLE});
	}
}

void pubd_fake_add_credits(struct pubd_fake *fk, long n)
{
	struct pubd_fabric *f = F(fk);

	pubd_fake_set_credits(fk, f->credits < 0 ? -1 : f->credits + n);
}

uint64_t pubd_fake_short_sends(const struct pubd_fake *fk)
{
	return CF(fk)->short_sends;
}

size_t pubd_fake_sent_count(const struct pubd_fake *fk)
{
	return CF(fk)->nsent;
}

const struct pubd_fake_sent *pubd_fake_sent_at(const struct pubd_fake *fk, size_t i)
{
	const struct pubd_fabric *f = CF(fk);

	return i < f->nsent ? &f->sent[i] : NULL;
}

void pubd_fake_sent_clear(struct pubd_fake *fk)
{
	struct pubd_fabric *f = F(fk);
	size_t i;

	for (i = 0; i < f->nsent; i++)
		free(f->sent[i].data);
	f->nsent = 0;
}

uint64_t pubd_fake_sent_total(const struct pubd_fake *fk)
{
	return CF(fk)->sent_total;
}

void pubd_fake_set_tap(struct pubd_fake *fk, pubd_fake_tap_fn fn, void *ctx)
{
	F(fk)->tap = fn;
	F(fk)->tap_ctx = ctx;
}

/* splitmix64: small, deterministic, good enough to pick impairments. */
static uint64_t next_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool chance(uint64_t *state, uint32_t ppm)
{
	return ppm && next_rand(state) % 1000000u < ppm;
}

/* The receiving slot of to joined at from's slot's address, or -1. */
static int map_slot(const struct pubd_fabric *from, int slot, const struct pubd_fabric *to)
{
	const struct fake_slot *s = slot >= 0 && (unsigned)slot < from->nslots ? &from->slots[slot] : NULL;
	unsigned i;

	if (!s)
		return -1;
	for (i = 0; i < to->nslots; i++) {
		const struct fake_slot *t = &to->slots[i];

		if (t->joined && t->addrlen == s->addrlen && memcmp(&t->addr, &s->addr, s->addrlen) == 0)
			return (int)i;
	}
	return -1;
}

static void rx_flush(struct pubd_fabric *to, struct pubd_rx_dgram *batch, unsigned *n)
{
	if (*n)
		to->ev->rx(to->ctx, batch, *n);
	*n = 0;
}

void pubd_fake_transfer(struct pubd_fake *fromk, struct pubd_fake *tok, const struct pubd_fake_impair *imp,
			struct pubd_fake_transfer_stats *st)
{
	struct pubd_fabric *from = F(fromk), *to = F(tok);
	struct pubd_fake_transfer_stats local = {0};
	struct pubd_fake_impair none = {0};
	struct pubd_rx_dgram batch[RX_BATCH];
	struct pubd_fake_sent *list;
	uint64_t rng;
	size_t n, i, k, out = 0;
	unsigned nb = 0;

	if (!imp)
		imp = &none;
	if (!st)
		st = &local;
	rng = imp->seed;
	/* Take the record first: the daemon may send more while receiving. */
	list = from->sent;
	n = from->nsent;
	from->sent = NULL;
	from->nsent = from->sentcap = 0;
	/* Build the arrival order: drop, duplicate, then swap within a window. */
	struct pubd_fake_sent *arr = calloc(n * 2 + 1, sizeof(*arr));

	if (!arr)
		abort();
	for (i = 0; i < n; i++) {
		if (chance(&rng, imp->loss_ppm)) {
			st->lost++;
			continue;
		}
		arr[out++] = list[i];
		if (chance(&rng, imp->dup_ppm)) {
			st->duplicated++;
			arr[out++] = list[i];
		}
	}
	for (i = 0; i < out; i++) {
		if (out - i > 1 && chance(&rng, imp->reorder_ppm)) {
			size_t w = imp->reorder_window ? imp->reorder_window : 4;
			struct pubd_fake_sent t;

			k = i + 1 + next_rand(&rng) % (w < out - i - 1 ? w : out - i - 1);
			t = arr[i];
			arr[i] = arr[k];
			arr[k] = t;
			st->reordered++;
		}
	}
	for (i = 0; i < out; i++) {
		int slot = arr[i].to ? -1 : map_slot(from, arr[i].slot, to);

		/* Unicast reaches only the fake it was sent to; multicast the slots listening. */
		if (arr[i].to ? arr[i].to != to->peer_id : slot < 0 || !to->slots[slot].listening) {
			st->not_joined++;
			continue;
		}
		batch[nb++] = (struct pubd_rx_dgram){.data = arr[i].data,
						     .len = arr[i].len,
						     .slot = slot,
						     .self = from == to,
						     .from = &from->peer_id,
						     .from_len = sizeof(from->peer_id)};
		st->moved++;
		if (nb == RX_BATCH)
			rx_flush(to, batch, &nb);
	}
	rx_flush(to, batch, &nb);
	for (i = 0; i < n; i++)
		free(list[i].data);
	free(list);
	free(arr);
}

void pubd_fake_inject_from(struct pubd_fake *fk, int slot, const void *data, uint32_t len, uint64_t from)
{
	struct pubd_fabric *f = F(fk);
	struct pubd_rx_dgram d = {.data = data, .len = len, .slot = slot, .from = &from, .from_len = sizeof(from)};

	f->ev->rx(f->ctx, &d, 1);
}

uint64_t pubd_fake_peer_id(const struct pubd_fake *fk)
{
	return CF(fk)->peer_id;
}

void pubd_fake_inject(struct pubd_fake *fk, int slot, const void *data, uint32_t len, bool self)
{
	struct pubd_fabric *f = F(fk);
	struct pubd_rx_dgram d = {.data = data, .len = len, .slot = slot, .self = self};

	f->ev->rx(f->ctx, &d, 1);
}
