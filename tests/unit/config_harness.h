/* SPDX-License-Identifier: MIT */
/*
 * What the config tests share (test_config.c, test_config_errors.c): one
 * parse per test, its result kept for the checks and freed by teardown.
 */
#ifndef PUBD_TEST_CONFIG_HARNESS_H
#define PUBD_TEST_CONFIG_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "fake_names.h"

extern struct pubd_config cfg;
extern struct pubd_config_errors errs;
extern char line[2048];

int teardown(void **state);
int parse(const char *yaml);
/* Error i, formatted (into line). */
const char *err(size_t i);
/* Exactly one error, and it is this one. */
void one_error(const char *yaml, const char *expect);
void parses(const char *yaml);
void assert_defaults(const struct pubd_config *c);

#endif
