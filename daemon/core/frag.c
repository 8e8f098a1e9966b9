/* SPDX-License-Identifier: MIT */
/*
 * The fragmenter. Only arithmetic: the layout it hands out is the one
 * pubd_wire_check_frag() insists on at the receiver.
 */
#include <errno.h>

#include "frag.h"

int pubd_frag_plan(struct pubd_frag_plan *p, size_t msg_len, size_t mtu, size_t max_message_size)
{
	size_t unit;

	if (mtu <= PUBD_WIRE_HDR_LEN)
		return -EINVAL;
	/* msg_len travels as a u32 whatever the configured limit says. */
	if (msg_len > max_message_size || msg_len > UINT32_MAX)
		return -EMSGSIZE;
	unit = mtu - PUBD_WIRE_HDR_LEN;
	if (unit > UINT32_MAX)
		unit = UINT32_MAX;
	p->msg_len = (uint32_t)msg_len;
	p->frag_payload = (uint32_t)unit;
	p->frag_count = msg_len ? (uint32_t)((msg_len - 1) / unit + 1) : 1;
	return 0;
}

void pubd_frag_get(const struct pubd_frag_plan *p, const struct pubd_wire_hdr *tmpl, uint32_t index,
		   struct pubd_wire_hdr *h, size_t *offset, size_t *len)
{
	size_t off = (size_t)index * p->frag_payload;

	*h = *tmpl;
	h->msg_len = p->msg_len;
	h->frag_index = index;
	h->frag_count = p->frag_count;
	h->frag_offset = (uint32_t)off;
	*offset = off;
	*len = index + 1 < p->frag_count ? p->frag_payload : p->msg_len - off;
}
