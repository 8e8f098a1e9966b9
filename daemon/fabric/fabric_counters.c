/* SPDX-License-Identifier: MIT */
/*
 * The names of the counters both fabrics keep (fabric_counters.h), and the
 * rows of the "fabric" status table they are shown in.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "fabric_counters.h"
#include "proto.h"

const char *const pubd_fabric_counter_names[PUBD_FC__COUNT] = {
#define PUBD_FABRIC_X_NAME(id, name, help) [PUBD_FC_##id] = name,
	PUBD_FABRIC_COUNTERS(PUBD_FABRIC_X_NAME)
#undef PUBD_FABRIC_X_NAME
};

void pubd_fabric_row(struct pub_table_builder *tb, const char *key, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pub_table_str(tb, key);
	pub_table_str(tb, buf);
}

void pubd_fabric_counter_rows(struct pub_table_builder *tb, const uint64_t *cnt, const char *const *names,
			      unsigned first, unsigned n)
{
	for (unsigned i = first; i < n; i++)
		pubd_fabric_row(tb, names[i], "%" PRIu64, cnt[i]);
}
