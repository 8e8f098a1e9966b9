/* SPDX-License-Identifier: MIT */
/* The drop reasons, expanded once from the X-macro table in pub_reasons.h. */
#include "pub_reasons.h"

static const struct {
	const char *name;
	int kind;
	const char *help;
} reasons[PUB_DROP__COUNT] = {
#define PUB_X_ENTRY(id, n, k, h) [PUB_DROP_##id] = {n, k, h},
	PUB_DROP_REASONS(PUB_X_ENTRY)
#undef PUB_X_ENTRY
};

const char *pub_drop_reason_name(unsigned reason)
{
	return reason < PUB_DROP__COUNT ? reasons[reason].name : "unknown";
}

/* -1 for an out-of-range reason: it is neither a message nor a datagram. */
int pub_drop_reason_kind(unsigned reason)
{
	return reason < PUB_DROP__COUNT ? reasons[reason].kind : -1;
}

const char *pub_drop_reason_help(unsigned reason)
{
	return reason < PUB_DROP__COUNT ? reasons[reason].help : "unknown";
}
