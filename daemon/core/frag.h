/* SPDX-License-Identifier: MIT */
/*
 * The fragmenter: how a message of msg_len bytes is cut into datagrams of at
 * most mtu bytes (header included). Pure arithmetic: it hands out (offset,
 * length) slices of the caller's message, so nothing is copied here; the
 * fabric gathers header + slice straight from the message buffer.
 *
 * Every fragment but the last carries exactly frag_payload bytes; a message
 * of 0 bytes is one fragment with no payload.
 */
#ifndef PUBD_FRAG_H
#define PUBD_FRAG_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct pubd_frag_plan {
	uint32_t msg_len;
	uint32_t frag_count;
	uint32_t frag_payload; /* payload bytes per fragment (all but the last) */
};

/*
 * Plan a message. Returns 0, -EMSGSIZE when msg_len > max_message_size, or
 * -EINVAL when the mtu leaves no room for payload after the header.
 */
int pubd_frag_plan(struct pubd_frag_plan *p, size_t msg_len, size_t mtu, size_t max_message_size);

/*
 * Fragment `index` of a planned message: copies tmpl (group, source, seq,
 * flags), fills msg_len/frag_index/frag_count/frag_offset into *h, and sets
 * *offset and *len to the payload slice. index must be < p->frag_count.
 */
void pubd_frag_get(const struct pubd_frag_plan *p, const struct pubd_wire_hdr *tmpl, uint32_t index,
		   struct pubd_wire_hdr *h, size_t *offset, size_t *len);

#endif
