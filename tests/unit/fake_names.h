/* SPDX-License-Identifier: MIT */
/*
 * A fake name service for the config tests, so that they do not depend on
 * the machine's /etc/passwd and /etc/group:
 *   users  root 0, alice 1000; "broken" fails as a name service would (-EIO)
 *   groups root 0, staff 50
 * Everything else is unknown (-ENOENT).
 */
#ifndef PUBD_TEST_FAKE_NAMES_H
#define PUBD_TEST_FAKE_NAMES_H

#include "config.h"

extern const struct pubd_name_resolver fake_names;

#endif
