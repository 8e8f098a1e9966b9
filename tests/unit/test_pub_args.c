/* SPDX-License-Identifier: MIT */
/*
 * libpub's answers to arguments no pubd is needed to judge: an unknown
 * transport, and error codes pub_strerror() cannot negate.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pub.h"

static void an_unknown_transport_is_refused_before_connecting(void **state)
{
	struct pub_options o = PUB_OPTIONS_INIT;
	pub_client_t *c = NULL;

	(void)state;
	o.transport = 7;
	/* (The path does not exist: the transport is judged first.) */
	assert_int_equal(pub_connect(&c, "/nonexistent/pubd.sock", &o), -EINVAL);
	assert_null(c);
	assert_non_null(strstr(pub_errmsg(NULL), "transport 7"));
}

static void every_code_has_a_name(void **state)
{
	(void)state;
	/* INT_MIN cannot be negated: it was undefined behaviour (UBSan aborted). */
	assert_non_null(pub_strerror(INT_MIN));
	assert_non_null(pub_strerror(INT_MAX));
	assert_string_equal(pub_strerror(-ENOTCONN), pub_strerror(ENOTCONN));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(an_unknown_transport_is_refused_before_connecting),
		cmocka_unit_test(every_code_has_a_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
