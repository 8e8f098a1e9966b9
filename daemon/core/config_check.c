/* SPDX-License-Identifier: MIT */
/*
 * Checks across keys, once every key has been read: orders between limits
 * (a key with its own error is skipped), the groups' names, and raw groups'
 * addresses.
 */
#include <string.h>

#include "config_internal.h"

static const struct seen *seen_of(struct parse *p, const char *path)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if (!strcmp(config_keys[i].path, path))
			return &p->seen[i];
	return NULL;
}

/*
 * "a must be less than (or at most) b": reported at a if it was given,
 * else at b. Skipped when either had its own error: its value is then the
 * default and a complaint about it would mislead.
 */
static void check_order(struct parse *p, const char *a, uint64_t va, const char *b, uint64_t vb, bool strict,
			const char *why)
{
	const struct seen *sa = seen_of(p, a), *sb = seen_of(p, b);
	const struct seen *at = sa->given ? sa : sb;

	if (sa->bad || sb->bad || (strict ? va < vb : va <= vb))
		return;
	report(p, at->mark, "%s: must be %s %s (%llu), got %llu%s", a, strict ? "less than" : "at most", b,
	       (unsigned long long)vb, (unsigned long long)va, why);
}

void cfg_check_across(struct parse *p)
{
	struct pubd_config *c = p->c;

	/* SRQ_LIMIT_REACHED fires when fewer than srq_limit buffers remain;
	 * a limit at or above the depth would fire forever. */
	check_order(p, "fabric.srq_low_watermark", c->srq_low_watermark, "fabric.srq_depth", c->srq_depth, true, "");
	/* Reassembly drops a message larger than the whole budget. */
	check_order(p, "limits.max_message_size", c->max_message_size, "limits.reassembly_budget", c->reassembly_budget,
		    false, "; such a message could never be reassembled");
	/* 0 turns group logs off; anything else is a log of 64 KiB or more. */
	if (c->group_log && c->group_log < 64 * 1024 && !seen_of(p, "limits.group_log")->bad)
		report(p, seen_of(p, "limits.group_log")->mark,
		       "limits.group_log: expected 0 (off), or a size from 64 KiB to 1 GiB, got %llu",
		       (unsigned long long)c->group_log);
	cfg_check_group_names(p);
	cfg_check_group_scopes(p);
	cfg_check_raw_addresses(p);
}
