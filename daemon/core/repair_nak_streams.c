/* SPDX-License-Identifier: MIT */
/*
 * The NAK schedule's streams (repair_nak_index.h): a chained hash on
 * (source, group), keyed SipHash (keyed_hash.h) since both ids are a
 * peer's to choose, with as many buckets as gaps can be (a load of 1 at
 * most, never resized). The last stream found is kept: a stream's messages
 * come in runs, so most lookups hash nothing, and a delivered message of a
 * stream without gaps costs one hash and a short chain, however many gaps
 * other streams have.
 */
#include "repair_nak_index.h"

static uint32_t *bucket(struct pubd_nak_sched *s, uint64_t source, uint64_t group)
{
	return &s->buckets[pubd_hash_2u64(&s->key, source, group) & s->mask];
}

uint32_t nak_stream_find(struct pubd_nak_sched *s, uint64_t source, uint64_t group)
{
	struct pubd_nak_stream *st;
	uint32_t i = s->last_stream;

	if (i != NAK_NONE && s->streams[i].source == source && s->streams[i].group == group)
		return i;
	for (i = *bucket(s, source, group); i != NAK_NONE; i = st->next) {
		st = &s->streams[i];
		s->visits++;
		if (st->source == source && st->group == group) {
			s->last_stream = i;
			return i;
		}
	}
	return NAK_NONE;
}

bool nak_stream_link(struct pubd_nak_sched *s, uint32_t node)
{
	struct pubd_nak_node *n = nak_node(s, node);
	struct pubd_nak_stream *st;
	uint32_t i = nak_stream_find(s, n->g.source, n->g.group), *b;

	if (i == NAK_NONE) {
		i = s->free_stream;
		if (i == NAK_NONE)
			return false;
		st = &s->streams[i];
		s->free_stream = st->next;
		b = bucket(s, n->g.source, n->g.group);
		*st = (struct pubd_nak_stream){
			.source = n->g.source, .group = n->g.group, .root = NAK_NONE, .next = *b};
		*b = i;
		s->last_stream = i;
	}
	n->stream = i;
	nak_tree_insert(s, &s->streams[i].root, node);
	return true;
}

void nak_stream_unlink(struct pubd_nak_sched *s, uint32_t node)
{
	struct pubd_nak_node *n = nak_node(s, node);
	struct pubd_nak_stream *st = &s->streams[n->stream];
	uint32_t *pp;

	nak_tree_remove(s, &st->root, node);
	if (st->root != NAK_NONE)
		return;
	/* Its last gap: the stream leaves its chain for the free list. */
	for (pp = bucket(s, st->source, st->group); *pp != n->stream; pp = &s->streams[*pp].next)
		s->visits++;
	*pp = st->next;
	st->next = s->free_stream;
	s->free_stream = n->stream;
	if (s->last_stream == n->stream)
		s->last_stream = NAK_NONE;
}
