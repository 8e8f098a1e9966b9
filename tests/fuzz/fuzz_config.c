/* SPDX-License-Identifier: MIT */
/*
 * The config loader on arbitrary bytes, with a fake name service: no crash,
 * no leak (LeakSanitizer), and results that keep their promises: 0 with no
 * errors and a config that passes its own cross-key checks, or -EINVAL with
 * at least one error that formats, and a zeroed config either way it fails.
 * The input is copied to a heap block of exactly its size so AddressSanitizer
 * sees any read past it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A few known names; "broken" fails the way a dead LDAP server would. */
static int fake_user(void *ctx, const char *name, uint32_t *uid)
{
	if (!strcmp(name, "broken"))
		return -EIO;
	if (strcmp(name, "root") && strcmp(name, "alice"))
		return -ENOENT;
	*uid = name[0] == 'r' ? 0 : 1000;
	return 0;
}

static int fake_group(void *ctx, const char *name, uint32_t *gid)
{
	if (strcmp(name, "root") && strcmp(name, "staff"))
		return -ENOENT;
	*gid = name[0] == 'r' ? 0 : 50;
	return 0;
}

static const struct pubd_name_resolver fake = {.user = fake_user, .group = fake_group};

static void check_config(const struct pubd_config *c)
{
	static const uint32_t sup[] = {0, 50};
	size_t i;

	if (!c->socket_path || c->socket_path[0] != '/' || c->srq_low_watermark >= c->srq_depth ||
	    c->max_message_size > c->reassembly_budget || c->socket_mode > 0777)
		abort();
	for (i = 0; i < c->ngroups; i++) {
		const struct pubd_group_config *g = &c->groups[i];

		if (!g->name || !g->address_text)
			abort();
		/* A fabric group has its address; a host group none, and none of
		 * the keys about sending (config_groups.c refuses them). */
		if (g->scope == PUBD_SCOPE_HOST
			    ? g->address_len || g->raw || g->rate || g->repair.on || strcmp(g->address_text, "host")
			    : !g->address_len)
			abort();
		/* Names are unique, so lookup finds this very group. */
		if (pubd_config_group(c, g->name, strlen(g->name)) != g)
			abort();
		if (g->publish.n && !g->publish.entries)
			abort();
		(void)pubd_acl_allows(&g->publish, 1000, 1000, sup, 2);
		(void)pubd_acl_allows(&g->subscribe, 0, 0, NULL, 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pubd_config_errors errs;
	struct pubd_config c;
	char line[512];
	uint8_t *buf = malloc(size ? size : 1);
	size_t i;
	int ret;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	ret = pubd_config_parse(&c, "fuzz.yaml", buf, size, &fake, &errs);
	free(buf);
	if (ret == 0) {
		if (errs.n)
			abort();
		check_config(&c);
	} else if (ret == -EINVAL) {
		if (!errs.n || errs.n > PUBD_CONFIG_MAX_ERRORS + 1 || c.socket_path || c.groups)
			abort();
		for (i = 0; i < errs.n; i++)
			if (pubd_config_error_format(&errs, i, line, sizeof(line)) <= 0 || !errs.v[i].message)
				abort();
	} else if (ret != -ENOMEM) {
		abort();
	}
	pubd_config_free(&c);
	pubd_config_errors_free(&errs);
	return 0;
}
