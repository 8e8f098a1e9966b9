/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "deliverlog_format.h"

int pub_deliverlog_decode(const struct pub_shmlog_view *v, struct pub_deliverlog_piece *p)
{
	uint32_t rest;

	if (v->len < PUB_DELIVERLOG_HEAD || (v->flags & ~(PUB_SHMLOG_F_MORE | PUB_DELIVERLOG_F_MOVE)))
		return -EPROTO;
	memcpy(&p->source, v->body, 8);
	memcpy(&p->seq, v->body + 8, 8);
	p->glen = v->body[16];
	p->first = p->glen != 0;
	p->more = (v->flags & PUB_SHMLOG_F_MORE) != 0;
	p->move = (v->flags & PUB_DELIVERLOG_F_MOVE) != 0;
	p->total = v->aux;
	rest = v->len - PUB_DELIVERLOG_HEAD;
	if (p->glen > rest)
		return -EPROTO;
	p->group = (const char *)v->body + PUB_DELIVERLOG_HEAD;
	p->data = v->body + PUB_DELIVERLOG_HEAD + p->glen;
	p->len = rest - p->glen;
	if (p->first && (p->more ? p->len >= p->total : p->len != p->total))
		return -EPROTO;
	if (p->move && (!p->first || p->more || p->len))
		return -EPROTO; /* a mark names its group and carries nothing */
	return 0;
}

uint32_t pub_deliverlog_put_head(uint8_t *body, uint64_t source, uint64_t seq, const char *group, uint8_t glen)
{
	memcpy(body, &source, 8);
	memcpy(body + 8, &seq, 8);
	body[16] = glen;
	if (glen)
		memcpy(body + PUB_DELIVERLOG_HEAD, group, glen);
	return PUB_DELIVERLOG_HEAD + glen;
}
