/* SPDX-License-Identifier: MIT */
/* The reassembly tests' shared sink and datagram makers (reasm_harness.h). */
#include "reasm_harness.h"

struct sink sink;

uint8_t pattern(uint64_t seq, size_t off)
{
	return (uint8_t)(seq * 31 + off * 7 + (off >> 9));
}

static void on_deliver(void *ctx, uint64_t src, uint64_t grp, uint64_t seq, const uint8_t *data, size_t len,
		       struct pubd_msgbuf *owned)
{
	struct sink *k = ctx;
	size_t i;

	for (i = 0; i < len; i++) {
		if (data[i] != pattern(seq, i)) {
			k->bad_content++;
			break;
		}
	}
	if (owned) {
		if (owned->refs != 1 || owned->data != data || owned->len != len)
			k->bad_content++;
		pubd_msgbuf_put(owned);
	}
	if (k->nlog < 64)
		k->log[k->nlog++] = (struct event){src, grp, seq, len, owned != NULL, data};
	k->delivered++;
}

static void on_drop(void *ctx, uint64_t src, uint64_t grp, enum pub_drop_reason why, uint64_t n)
{
	struct sink *k = ctx;
	size_t i;

	k->drops[why] += n;
	if (pub_drop_reason_kind(why) == PUB_DROP_KIND_MSG)
		k->msg_drops += n;
	for (i = 0; i < k->nper; i++)
		if (k->per[i].src == src && k->per[i].grp == grp)
			break;
	if (i == k->nper && k->nper < 8) {
		k->per[i].src = src;
		k->per[i].grp = grp;
		k->nper++;
	}
	if (i < 8)
		k->per[i].n[why] += n;
}

const struct pubd_reasm_ops ops = {.deliver = on_deliver, .drop = on_drop};

uint64_t per_drops(uint64_t src, uint64_t grp, enum pub_drop_reason why)
{
	size_t i;

	for (i = 0; i < sink.nper; i++)
		if (sink.per[i].src == src && sink.per[i].grp == grp)
			return sink.per[i].n[why];
	return 0;
}

uint64_t dgram_drops(void)
{
	return sink.drops[PUB_DROP_MALFORMED] + sink.drops[PUB_DROP_DUPLICATE] + sink.drops[PUB_DROP_STALE];
}

struct pubd_reasm *make(void (*tweak)(struct pubd_reasm_config *c))
{
	struct pubd_reasm_config c;
	struct pubd_reasm *r;

	memset(&sink, 0, sizeof(sink));
	pubd_reasm_config_defaults(&c);
	if (tweak)
		tweak(&c);
	r = pubd_reasm_create(&c, &ops, &sink);
	assert_non_null(r);
	return r;
}

/* ---- feeding ---- */

uint8_t dgram[PUBD_WIRE_HDR_LEN + 9000];

unsigned push_flags;

void push_frag(struct pubd_reasm *r, uint64_t now, uint64_t src, uint64_t grp, uint64_t seq, size_t len, size_t mtu,
	       uint32_t idx)
{
	struct pubd_wire_hdr tmpl = {.source_id = src, .group_id = grp, .msg_seq = seq}, h, out;
	struct pubd_frag_plan p;
	const uint8_t *pl;
	size_t off, flen, pll, i;

	assert_int_equal(pubd_frag_plan(&p, len, mtu, SIZE_MAX), 0);
	assert_true(idx < p.frag_count);
	pubd_frag_get(&p, &tmpl, idx, &h, &off, &flen);
	pubd_wire_encode(&h, dgram);
	for (i = 0; i < flen; i++)
		dgram[PUBD_WIRE_HDR_LEN + i] = pattern(seq, off + i);
	assert_int_equal(pubd_wire_decode(dgram, PUBD_WIRE_HDR_LEN + flen, &out, &pl, &pll), 0);
	pubd_reasm_push_flags(r, now, &out, pl, pll, push_flags);
}

uint32_t nfrags(size_t len, size_t mtu)
{
	struct pubd_frag_plan p;

	assert_int_equal(pubd_frag_plan(&p, len, mtu, SIZE_MAX), 0);
	return p.frag_count;
}

void push_msg(struct pubd_reasm *r, uint64_t now, uint64_t src, uint64_t grp, uint64_t seq, size_t len)
{
	uint32_t i, n = nfrags(len, 1024);

	for (i = 0; i < n; i++)
		push_frag(r, now, src, grp, seq, len, 1024, i);
}

void push_hb(struct pubd_reasm *r, uint64_t now, uint64_t src, uint64_t grp, uint64_t next_seq)
{
	struct pubd_wire_hdr h = {
		.flags = PUBD_WIRE_F_HEARTBEAT, .source_id = src, .group_id = grp, .msg_seq = next_seq};

	pubd_reasm_push_flags(r, now, &h, NULL, 0, push_flags);
}

void collect(void *ctx, const struct pubd_reasm_stream_info *s)
{
	struct infos *in = ctx;

	if (in->n < 16)
		in->s[in->n++] = *s;
}

struct pubd_reasm_stream_info stream_info(struct pubd_reasm *r, uint64_t src, uint64_t grp)
{
	struct infos in = {.n = 0};
	struct pubd_reasm_stream_info none = {0};
	size_t i;

	pubd_reasm_foreach(r, collect, &in);
	for (i = 0; i < in.n; i++)
		if (in.s[i].source_id == src && in.s[i].group_id == grp)
			return in.s[i];
	return none;
}
