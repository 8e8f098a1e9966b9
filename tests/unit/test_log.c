// SPDX-License-Identifier: MIT
/*
 * Log lines: whatever a client or a datagram put into a logged string, one
 * call writes exactly one line, with our priority, and nothing that drives a
 * terminal. stderr is captured through a pipe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "log_limit.h"

struct capture {
	int fds[2], saved;
};

static void capture_begin(struct capture *c)
{
	assert_int_equal(pipe(c->fds), 0);
	c->saved = dup(STDERR_FILENO);
	assert_true(c->saved >= 0);
	assert_true(dup2(c->fds[1], STDERR_FILENO) >= 0);
}

/* What reached stderr since capture_begin. */
static size_t capture_end(struct capture *c, char *out, size_t cap)
{
	ssize_t n;

	assert_true(dup2(c->saved, STDERR_FILENO) >= 0);
	close(c->saved);
	close(c->fds[1]);
	n = read(c->fds[0], out, cap - 1);
	close(c->fds[0]);
	assert_true(n > 0);
	out[n] = 0;
	return (size_t)n;
}

/* Log one line with name as its argument; returns what reached stderr. */
#define capture(out, cap, prio, fmt, name)  \
	({                                  \
		struct capture c_;          \
		capture_begin(&c_);         \
		pubd_log(prio, fmt, name);  \
		capture_end(&c_, out, cap); \
	})

static size_t count_char(const char *s, size_t n, char c)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += s[i] == c;
	return k;
}

/* A HELLO name that tries to forge a critical journal line. */
static void test_newline_cannot_forge_a_line(void **state)
{
	char out[2048];
	size_t n;

	(void)state;
	n = capture(out, sizeof(out), LOG_INFO, "client %s: hello", "app\n<2>pubd: ROOT COMPROMISED\r");
	assert_int_equal(count_char(out, n, '\n'), 1);
	assert_int_equal(out[n - 1], '\n');
	assert_int_equal(count_char(out, n, '\r'), 0);
	assert_memory_equal(out, "<6>", 3);
	assert_string_equal(out, "<6>client app\\x0a<2>pubd: ROOT COMPROMISED\\x0d: hello\n");
}

/* Terminal escapes: ESC, DEL, C1 (U+009B, CSI, as UTF-8 and as a bare byte). */
static void test_terminal_escapes_are_escaped(void **state)
{
	char out[2048];
	size_t n;

	(void)state;
	n = capture(out, sizeof(out), LOG_WARNING, "group '%s'", "\x1b]0;x\x07\x7f\xc2\x9b\x9b\xe2\x80\xae\\");
	for (size_t i = 0; i < n - 1; i++) {
		unsigned char ch = (unsigned char)out[i];

		assert_true(ch >= 0x20 && ch < 0x7f);
	}
	assert_string_equal(out, "<4>group '\\x1b]0;x\\x07\\x7f\\xc2\\x9b\\x9b\\xe2\\x80\\xae\\\\'\n");
}

/* Our own messages and valid UTF-8 read as before. */
static void test_plain_text_unchanged(void **state)
{
	char out[2048];

	(void)state;
	capture(out, sizeof(out), LOG_ERR, "group %s: join: No such device", "café-β");
	assert_string_equal(out, "<3>group café-β: join: No such device\n");
}

/* A long hostile string is cut, still as one line ending in a newline. */
static void test_long_line_stays_one_line(void **state)
{
	char name[3000], out[8192];
	size_t n;

	(void)state;
	memset(name, '\n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	n = capture(out, sizeof(out), LOG_INFO, "%s", name);
	assert_true(n <= 1024);
	assert_int_equal(count_char(out, n, '\n'), 1);
	assert_int_equal(out[n - 1], '\n');
}

/* A bound on lines a peer causes: burst lines a period go out, the rest
 * are counted, and the count is one line once the period is over (at the
 * tick, or before the first line of the next period). */
static void test_limit_lets_a_few_out_and_counts_the_rest(void **state)
{
	struct pubd_log_limit l = {.what = "refusals", .burst = 2, .prio = LOG_NOTICE, .period_ns = 1000};
	struct capture c;
	char out[2048];
	unsigned i, passed = 0;

	(void)state;
	for (i = 0; i < 5; i++)
		passed += pubd_log_limit_pass(&l, 100 + i);
	assert_int_equal(passed, 2);
	assert_int_equal(l.held, 3);
	/* Not over yet: nothing to say. */
	assert_int_equal(pubd_log_limit_flush(&l, 1099), 0);
	capture_begin(&c);
	assert_int_equal(pubd_log_limit_flush(&l, 1100), 3);
	pubd_log(LOG_INFO, "after");
	capture_end(&c, out, sizeof(out));
	assert_string_equal(out, "<5>3 more refusals in 0 s, not logged one by one (at most 2 a period)\n<6>after\n");
	/* A new period: a line goes out at once; one held is said when the
	 * first line of the period after comes, before it. */
	assert_true(pubd_log_limit_pass(&l, 5000));
	assert_true(pubd_log_limit_pass(&l, 5001));
	assert_false(pubd_log_limit_pass(&l, 5002));
	capture_begin(&c);
	assert_true(pubd_log_limit_pass(&l, 6000));
	capture_end(&c, out, sizeof(out));
	assert_string_equal(out, "<5>1 more refusals in 0 s, not logged one by one (at most 2 a period)\n");
	assert_int_equal(l.held, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_newline_cannot_forge_a_line),
		cmocka_unit_test(test_terminal_escapes_are_escaped),
		cmocka_unit_test(test_plain_text_unchanged),
		cmocka_unit_test(test_long_line_stays_one_line),
		cmocka_unit_test(test_limit_lets_a_few_out_and_counts_the_rest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
