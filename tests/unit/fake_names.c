/* SPDX-License-Identifier: MIT */
#include "fake_names.h"

#include <errno.h>
#include <string.h>

struct fake_name {
	const char *name;
	uint32_t id;
	int err; /* returned instead of the id when not 0 */
};

static const struct fake_name users[] = {{"root", 0, 0}, {"alice", 1000, 0}, {"broken", 0, -EIO}};
static const struct fake_name groups[] = {{"root", 0, 0}, {"staff", 50, 0}};

static int look_up(const struct fake_name *t, size_t n, const char *name, uint32_t *id)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(t[i].name, name))
			continue;
		if (t[i].err)
			return t[i].err;
		*id = t[i].id;
		return 0;
	}
	return -ENOENT;
}

static int fake_user(void *ctx, const char *name, uint32_t *uid)
{
	(void)ctx;
	return look_up(users, sizeof(users) / sizeof(users[0]), name, uid);
}

static int fake_group(void *ctx, const char *name, uint32_t *gid)
{
	(void)ctx;
	return look_up(groups, sizeof(groups) / sizeof(groups[0]), name, gid);
}

const struct pubd_name_resolver fake_names = {.user = fake_user, .group = fake_group};
