// SPDX-License-Identifier: MIT
/*
 * pubctl's rendering of tables whose strings came from clients (names) via
 * the daemon: text output has no control character, DEL, C1 or invalid
 * UTF-8 left; JSON output escapes them; a "more" table reads as a line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../cli/pubctl.h"
#include "utf8.h"

/* Controls, C1, a right-to-left override and a line separator, a stray
 * byte, a zero-width space and a tag character. */
static const char hostile[] =
	"app\n<2>x\r\x1b[2J\x7f\xc2\x9b\xe2\x80\xae\xe2\x80\xa8\x9b\"\\\xe2\x80\x8b\xf3\xa0\x81\xa5";

static char *render(bool json, const struct pub_table *t)
{
	struct render r;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	render_begin(&r, out, json);
	render_table(t, &r);
	render_end(&r);
	fclose(out);
	return buf;
}

static const struct pub_column cols[] = {{"id", PUB_VALUE_U64}, {"name", PUB_VALUE_STR}};

static void test_text_has_no_control_bytes(void **state)
{
	struct pub_value cells[] = {{.type = PUB_VALUE_U64, .u = 7},
				    {.type = PUB_VALUE_STR, .s = hostile, .len = sizeof(hostile) - 1}};
	struct pub_table t = {.name = "clients\x1b]0;", .ncols = 2, .cols = cols, .nrows = 1, .cells = cells};
	char *out = render(false, &t);
	size_t lines = 0;

	(void)state;
	for (const unsigned char *p = (const unsigned char *)out; *p; p++) {
		assert_true(*p == '\n' || (*p >= 0x20 && *p != 0x7f));
		assert_false(*p == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0);
		assert_false(*p == 0xe2 && p[1] == 0x80 && (p[2] == 0xae || p[2] == 0xa8 || p[2] == 0x8b));
		assert_false(*p == 0xf3 && p[1] == 0xa0);
		assert_false(*p >= 0x80 && *p < 0xc0 && (p == (const unsigned char *)out || p[-1] < 0x80));
		lines += *p == '\n';
	}
	assert_int_equal(lines, 3); /* title, header, one row */
	free(out);
}

static void test_json_escapes_everything(void **state)
{
	struct pub_value cells[] = {{.type = PUB_VALUE_U64, .u = 7},
				    {.type = PUB_VALUE_STR, .s = hostile, .len = sizeof(hostile) - 1}};
	struct pub_table t = {.name = "clients", .ncols = 2, .cols = cols, .nrows = 1, .cells = cells};
	char *out = render(true, &t);

	(void)state;
	assert_string_equal(out, "{\"clients\":[{\"id\":7,\"name\":\"app\\n<2>x\\r\\u001b["
				 "2J\\u007f\\u009b\\u202e\\u2028\\ufffd\\\"\\\\\\u200b\\udb40\\udc65\"}]}\n");
	free(out);
}

static void test_more_table_is_a_line(void **state)
{
	static const struct pub_column mcols[] = {{"table", PUB_VALUE_STR}, {"rows_not_shown", PUB_VALUE_U64}};
	struct pub_value cells[] = {{.type = PUB_VALUE_STR, .s = "sources", .len = 7},
				    {.type = PUB_VALUE_U64, .u = 195904}};
	struct pub_table t = {.name = "more", .ncols = 2, .cols = mcols, .nrows = 1, .cells = cells};
	char *out = render(false, &t);

	(void)state;
	assert_string_equal(out, "  ... 195904 more rows of sources not shown (the daemon caps every table)\n");
	free(out);
}

/* What may be shown: the unseen ones not, their neighbours (letters) yes. */
static void test_unseen_characters(void **state)
{
	static const uint32_t unseen[] = {0x00ad, 0x061c, 0x180e, 0x200b, 0x200d, 0x200e,  0x2028,
					  0x202e, 0x2060, 0x2066, 0x206f, 0xfeff, 0xe0001, 0xe0065};
	static const uint32_t seen[] = {0x00e9, 0x00ae, 0x2010, 0x2030, 0x20ac, 0x4e2d, 0xfe10, 0x1f600};

	(void)state;
	for (size_t i = 0; i < sizeof(unseen) / sizeof(unseen[0]); i++)
		assert_true(pub_utf8_is_unseen(unseen[i]));
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
		assert_false(pub_utf8_is_unseen(seen[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_has_no_control_bytes),
		cmocka_unit_test(test_json_escapes_everything),
		cmocka_unit_test(test_more_table_is_a_line),
		cmocka_unit_test(test_unseen_characters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
