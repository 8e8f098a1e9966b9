/* SPDX-License-Identifier: MIT */
/*
 * Group ACLs: how publish:/subscribe: lists parse (names through a fake
 * resolver, errors at their place) and what pubd_acl_allows decides.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "fake_names.h"

static struct pubd_config cfg;
static struct pubd_config_errors errs;
static char line[1024];

static int teardown(void **state)
{
	pubd_config_free(&cfg);
	pubd_config_errors_free(&errs);
	return 0;
}

/* Parse one group whose ACL keys are given; returns the parse result. */
static int parse_with(const char *acl_keys, const struct pubd_name_resolver *res)
{
	char doc[1024];

	pubd_config_free(&cfg);
	pubd_config_errors_free(&errs);
	snprintf(doc, sizeof(doc), "groups:\n  - name: g\n    address: 239.1.1.1\n%s", acl_keys);
	return pubd_config_parse(&cfg, "t.yaml", doc, strlen(doc), res, &errs);
}

static const struct pubd_group_config *group(const char *acl_keys)
{
	int ret = parse_with(acl_keys, &fake_names);

	for (size_t i = 0; i < errs.n; i++) {
		pubd_config_error_format(&errs, i, line, sizeof(line));
		print_message("unexpected: %s\n", line);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(cfg.ngroups, 1);
	return &cfg.groups[0];
}

static void one_error(const char *acl_keys, const struct pubd_name_resolver *res, const char *expect)
{
	assert_int_equal(parse_with(acl_keys, res), -EINVAL);
	for (size_t i = 0; errs.n != 1 && i < errs.n; i++) {
		pubd_config_error_format(&errs, i, line, sizeof(line));
		print_message("  %s\n", line);
	}
	assert_int_equal(errs.n, 1);
	pubd_config_error_format(&errs, 0, line, sizeof(line));
	assert_string_equal(line, expect);
}

/* ---- parsing ---------------------------------------------------------- */

static void acl_parses_each_entry_kind(void **state)
{
	const struct pubd_group_config *g =
		group("    publish: [any, uid:7, gid:8, user:alice, group:staff, uid:0, uid:4294967294]\n");
	const struct pubd_acl *a = &g->publish;

	assert_true(a->present);
	assert_int_equal(a->n, 7);
	assert_int_equal(a->entries[0].kind, PUBD_ACL_ANY);
	assert_int_equal(a->entries[1].kind, PUBD_ACL_UID);
	assert_int_equal(a->entries[1].id, 7);
	assert_int_equal(a->entries[2].kind, PUBD_ACL_GID);
	assert_int_equal(a->entries[2].id, 8);
	assert_int_equal(a->entries[3].kind, PUBD_ACL_UID);
	assert_int_equal(a->entries[3].id, 1000);
	assert_int_equal(a->entries[4].kind, PUBD_ACL_GID);
	assert_int_equal(a->entries[4].id, 50);
	assert_int_equal(a->entries[5].id, 0);
	assert_int_equal(a->entries[6].id, 4294967294u);
	assert_false(g->subscribe.present);
}

static void acl_block_list_and_aliases(void **state)
{
	const struct pubd_group_config *g = group("    publish: &ops\n"
						  "      - uid:1\n"
						  "      - group:staff\n"
						  "    subscribe: *ops\n");

	assert_int_equal(g->publish.n, 2);
	assert_int_equal(g->subscribe.n, 2);
	assert_int_equal(g->subscribe.entries[1].id, 50);
}

static void acl_absent_key_is_not_present(void **state)
{
	const struct pubd_group_config *g = group("");

	assert_false(g->publish.present);
	assert_false(g->subscribe.present);
	assert_int_equal(g->publish.n, 0);
}

static void acl_empty_list_is_present_and_empty(void **state)
{
	const struct pubd_group_config *g = group("    publish: []\n");

	assert_true(g->publish.present);
	assert_int_equal(g->publish.n, 0);
	assert_false(g->subscribe.present);
}

static void acl_unknown_user_is_an_error_at_its_place(void **state)
{
	one_error("    publish: [uid:1, user:mallory]\n", &fake_names,
		  "t.yaml:4:22: groups[0].publish[1]: unknown user \"mallory\"");
}

static void acl_unknown_group_is_an_error_at_its_place(void **state)
{
	one_error("    subscribe:\n      - group:wheel\n", &fake_names,
		  "t.yaml:5:9: groups[0].subscribe[0]: unknown group \"wheel\"");
}

static void acl_failing_lookup_is_reported(void **state)
{
	one_error("    publish: [user:broken]\n", &fake_names,
		  "t.yaml:4:15: groups[0].publish[0]: cannot look up user \"broken\": Input/output error");
}

static void acl_names_need_a_resolver(void **state)
{
	one_error("    publish: [user:alice]\n", NULL,
		  "t.yaml:4:15: groups[0].publish[0]: cannot resolve user names here; use uid:N");
	one_error("    publish: [group:staff]\n", NULL,
		  "t.yaml:4:15: groups[0].publish[0]: cannot resolve group names here; use gid:N");
	/* Numeric entries need none. */
	assert_int_equal(parse_with("    publish: [uid:1, gid:2, any]\n", NULL), 0);
}

static void acl_rejects_malformed_entries(void **state)
{
	/* Quoted where a trailing colon would make YAML itself complain. */
	static const char *const bad[] = {"'uid:'",  "uid:-1",	 "uid:4294967295",
					  "uid:1x",  "uid:0x10", "gid:99999999999",
					  "'user:'", "'group:'", "ANY",
					  "all",     "uid",	 "5",
					  "'uid: 5'"};
	char doc[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc), "    publish: [%s]\n", bad[i]);
		assert_int_equal(parse_with(doc, &fake_names), -EINVAL);
		assert_int_equal(errs.n, 1);
		pubd_config_error_format(&errs, 0, line, sizeof(line));
		assert_non_null(strstr(line, "t.yaml:4:15: groups[0].publish[0]: expected an ACL entry (any, uid:N, "
					     "gid:N, user:NAME, group:NAME; N from 0 to 4294967294), got \""));
	}
}

static void acl_space_after_colon_gets_a_hint(void **state)
{
	one_error("    publish:\n      - uid: 5\n", &fake_names,
		  "t.yaml:5:9: groups[0].publish[0]: expected an ACL entry (any, uid:N, gid:N, user:NAME, "
		  "group:NAME), got a mapping; write it without a space after the colon");
}

static void acl_must_be_a_list(void **state)
{
	one_error("    publish: any\n", &fake_names,
		  "t.yaml:4:14: groups[0].publish: expected a list of ACL entries (any, uid:N, gid:N, user:NAME, "
		  "group:NAME; [] for no one), got \"any\"");
	/* "publish:" alone could mean "anyone" or "no one": say which. */
	one_error("    publish:\n    raw: false\n", &fake_names,
		  "t.yaml:4:13: groups[0].publish: expected a list of ACL entries (any, uid:N, gid:N, user:NAME, "
		  "group:NAME; [] for no one), got nothing");
}

static void acl_collects_every_bad_entry(void **state)
{
	assert_int_equal(parse_with("    publish: [user:x, uid:1, group:y]\n    subscribe: [nobody]\n", &fake_names),
			 -EINVAL);
	assert_int_equal(errs.n, 3);
	pubd_config_error_format(&errs, 0, line, sizeof(line));
	assert_string_equal(line, "t.yaml:4:15: groups[0].publish[0]: unknown user \"x\"");
	pubd_config_error_format(&errs, 1, line, sizeof(line));
	assert_string_equal(line, "t.yaml:4:30: groups[0].publish[2]: unknown group \"y\"");
	pubd_config_error_format(&errs, 2, line, sizeof(line));
	assert_non_null(strstr(line, "t.yaml:5:17: groups[0].subscribe[0]: expected an ACL entry"));
}

/* ---- pubd_acl_allows --------------------------------------------------- */

static struct pubd_acl_entry entries[8];

static struct pubd_acl acl_of(size_t n)
{
	return (struct pubd_acl){.entries = n ? entries : NULL, .n = n, .present = true};
}

static void acl_absent_allows_everyone(void **state)
{
	struct pubd_acl absent = {0};

	assert_true(pubd_acl_allows(&absent, 1000, 1000, NULL, 0));
	assert_true(pubd_acl_allows(&absent, 0, 0, NULL, 0));
	assert_true(pubd_acl_allows(NULL, 1000, 1000, NULL, 0));
}

static void acl_empty_list_allows_no_one(void **state)
{
	struct pubd_acl empty = acl_of(0);
	uint32_t sup[] = {0, 50};

	assert_false(pubd_acl_allows(&empty, 1000, 1000, NULL, 0));
	assert_false(pubd_acl_allows(&empty, 0, 0, sup, 2)); /* not even root */
}

static void acl_any_allows_everyone(void **state)
{
	struct pubd_acl a;

	entries[0] = (struct pubd_acl_entry){PUBD_ACL_UID, 5};
	entries[1] = (struct pubd_acl_entry){PUBD_ACL_ANY, 0};
	a = acl_of(2);
	assert_true(pubd_acl_allows(&a, 1234, 1234, NULL, 0));
	assert_true(pubd_acl_allows(&a, 0, 0, NULL, 0));
}

static void acl_uid_matches_only_that_uid(void **state)
{
	uint32_t sup[] = {1000};
	struct pubd_acl a;

	entries[0] = (struct pubd_acl_entry){PUBD_ACL_UID, 1000};
	a = acl_of(1);
	assert_true(pubd_acl_allows(&a, 1000, 5, NULL, 0));
	assert_false(pubd_acl_allows(&a, 1001, 1000, NULL, 0)); /* a gid of 1000 is not uid 1000 */
	assert_false(pubd_acl_allows(&a, 1001, 5, sup, 1));
}

static void acl_uid0_is_not_special(void **state)
{
	struct pubd_acl a;

	entries[0] = (struct pubd_acl_entry){PUBD_ACL_UID, 1000};
	a = acl_of(1);
	assert_false(pubd_acl_allows(&a, 0, 0, NULL, 0));
	entries[1] = (struct pubd_acl_entry){PUBD_ACL_UID, 0};
	a = acl_of(2);
	assert_true(pubd_acl_allows(&a, 0, 0, NULL, 0));
}

static void acl_gid_matches_primary_gid(void **state)
{
	struct pubd_acl a;

	entries[0] = (struct pubd_acl_entry){PUBD_ACL_GID, 50};
	a = acl_of(1);
	assert_true(pubd_acl_allows(&a, 1000, 50, NULL, 0));
	assert_false(pubd_acl_allows(&a, 50, 1000, NULL, 0)); /* a uid of 50 is not gid 50 */
}

static void acl_gid_matches_supplementary_group(void **state)
{
	uint32_t sup[] = {10, 20, 50};
	struct pubd_acl a;

	entries[0] = (struct pubd_acl_entry){PUBD_ACL_GID, 50};
	a = acl_of(1);
	assert_true(pubd_acl_allows(&a, 1000, 1000, sup, 3));
	assert_false(pubd_acl_allows(&a, 1000, 1000, sup, 2)); /* only the first ngroups count */
	assert_false(pubd_acl_allows(&a, 1000, 1000, NULL, 0));
}

static void acl_first_match_in_a_longer_list(void **state)
{
	uint32_t sup[] = {77};
	struct pubd_acl a;

	entries[0] = (struct pubd_acl_entry){PUBD_ACL_UID, 1};
	entries[1] = (struct pubd_acl_entry){PUBD_ACL_GID, 2};
	entries[2] = (struct pubd_acl_entry){PUBD_ACL_GID, 77};
	entries[3] = (struct pubd_acl_entry){PUBD_ACL_UID, 3};
	a = acl_of(4);
	assert_true(pubd_acl_allows(&a, 3, 3, NULL, 0));
	assert_true(pubd_acl_allows(&a, 9, 9, sup, 1));
	assert_true(pubd_acl_allows(&a, 9, 2, NULL, 0));
	assert_false(pubd_acl_allows(&a, 9, 9, NULL, 0));
}

/* ---- pubd_acl_same: did a reload change who may? ---------------------- */

static void acl_same_tells_a_kept_acl_from_a_changed_one(void **state)
{
	struct pubd_acl_entry mine[3] = {{PUBD_ACL_UID, 0}, {PUBD_ACL_GID, 50}, {PUBD_ACL_UID, 1000}};
	struct pubd_acl absent = {0}, empty = acl_of(0), a, b = {.entries = mine, .n = 3, .present = true};

	(void)state;
	entries[0] = (struct pubd_acl_entry){PUBD_ACL_UID, 0};
	entries[1] = (struct pubd_acl_entry){PUBD_ACL_GID, 50};
	entries[2] = (struct pubd_acl_entry){PUBD_ACL_UID, 1000};
	a = acl_of(3);
	assert_true(pubd_acl_same(&absent, &absent));
	assert_true(pubd_acl_same(&a, &b));	      /* the same entries, loaded anew */
	assert_false(pubd_acl_same(&absent, &empty)); /* everyone, then no one */
	assert_false(pubd_acl_same(&empty, &absent));
	b.n = 2;
	assert_false(pubd_acl_same(&a, &b)); /* one entry fewer */
	b.n = 3;
	mine[2].id = 1001;
	assert_false(pubd_acl_same(&a, &b)); /* another uid */
	mine[2] = (struct pubd_acl_entry){PUBD_ACL_GID, 1000};
	assert_false(pubd_acl_same(&a, &b)); /* gid 1000 is not uid 1000 */
}

static void acl_parsed_lists_decide_as_written(void **state)
{
	const struct pubd_group_config *g = group("    publish: [user:alice, group:staff]\n"
						  "    subscribe: []\n");
	uint32_t sup[] = {50};

	assert_true(pubd_acl_allows(&g->publish, 1000, 1000, NULL, 0));
	assert_true(pubd_acl_allows(&g->publish, 2000, 2000, sup, 1));
	assert_false(pubd_acl_allows(&g->publish, 2000, 2000, NULL, 0));
	assert_false(pubd_acl_allows(&g->subscribe, 1000, 1000, NULL, 0));
}

/* ---- the real name service --------------------------------------------- */

static void acl_nss_resolver_finds_root_and_not_strangers(void **state)
{
	uint32_t id = 42;

	assert_int_equal(pubd_nss_resolver.user(pubd_nss_resolver.ctx, "root", &id), 0);
	assert_int_equal(id, 0);
	id = 42;
	assert_int_equal(pubd_nss_resolver.group(pubd_nss_resolver.ctx, "root", &id), 0);
	assert_int_equal(id, 0);
	assert_int_equal(pubd_nss_resolver.user(pubd_nss_resolver.ctx, "pubd-no-such-user-x", &id), -ENOENT);
	assert_int_equal(pubd_nss_resolver.group(pubd_nss_resolver.ctx, "pubd-no-such-group-x", &id), -ENOENT);
	assert_int_equal(parse_with("    publish: [user:root, group:root]\n", &pubd_nss_resolver), 0);
	assert_int_equal(cfg.groups[0].publish.entries[1].kind, PUBD_ACL_GID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(acl_parses_each_entry_kind, teardown),
		cmocka_unit_test_teardown(acl_block_list_and_aliases, teardown),
		cmocka_unit_test_teardown(acl_absent_key_is_not_present, teardown),
		cmocka_unit_test_teardown(acl_empty_list_is_present_and_empty, teardown),
		cmocka_unit_test_teardown(acl_unknown_user_is_an_error_at_its_place, teardown),
		cmocka_unit_test_teardown(acl_unknown_group_is_an_error_at_its_place, teardown),
		cmocka_unit_test_teardown(acl_failing_lookup_is_reported, teardown),
		cmocka_unit_test_teardown(acl_names_need_a_resolver, teardown),
		cmocka_unit_test_teardown(acl_rejects_malformed_entries, teardown),
		cmocka_unit_test_teardown(acl_space_after_colon_gets_a_hint, teardown),
		cmocka_unit_test_teardown(acl_must_be_a_list, teardown),
		cmocka_unit_test_teardown(acl_collects_every_bad_entry, teardown),
		cmocka_unit_test(acl_absent_allows_everyone),
		cmocka_unit_test(acl_empty_list_allows_no_one),
		cmocka_unit_test(acl_any_allows_everyone),
		cmocka_unit_test(acl_uid_matches_only_that_uid),
		cmocka_unit_test(acl_uid0_is_not_special),
		cmocka_unit_test(acl_gid_matches_primary_gid),
		cmocka_unit_test(acl_gid_matches_supplementary_group),
		cmocka_unit_test(acl_first_match_in_a_longer_list),
		cmocka_unit_test(acl_same_tells_a_kept_acl_from_a_changed_one),
		cmocka_unit_test_teardown(acl_parsed_lists_decide_as_written, teardown),
		cmocka_unit_test_teardown(acl_nss_resolver_finds_root_and_not_strangers, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
