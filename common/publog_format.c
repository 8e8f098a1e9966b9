/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "publog_format.h"

int pub_publog_decode(const struct pub_shmlog_view *v, struct pub_publog_piece *p)
{
	uint8_t head[PUB_PUBLOG_HEAD];
	uint32_t rest;

	if (v->len < PUB_PUBLOG_HEAD || (v->flags & ~PUB_SHMLOG_F_MORE))
		return -EPROTO;
	memcpy(head, v->body, sizeof(head));
	memcpy(&p->req_id, head, 4);
	p->seq = 0;
	p->glen = head[4];
	p->first = p->glen != 0;
	p->more = (v->flags & PUB_SHMLOG_F_MORE) != 0;
	p->total = v->aux;
	rest = v->len - PUB_PUBLOG_HEAD;
	if (p->glen > rest)
		return -EPROTO;
	memcpy(p->group, v->body + PUB_PUBLOG_HEAD, p->glen);
	p->data = v->body + PUB_PUBLOG_HEAD + p->glen;
	p->len = rest - p->glen;
	if (p->first && (p->more ? p->len >= p->total : p->len != p->total))
		return -EPROTO;
	if (!p->first && p->req_id)
		return -EPROTO;
	return 0;
}

uint32_t pub_publog_put_head(uint8_t *body, uint32_t req_id, const char *group, uint8_t glen)
{
	memcpy(body, &req_id, 4);
	body[4] = glen;
	if (glen)
		memcpy(body + PUB_PUBLOG_HEAD, group, glen);
	return PUB_PUBLOG_HEAD + glen;
}
