/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr with syslog priority prefixes ("<6>text"), which
 * journald turns into priorities when pubd runs under systemd.
 */
#ifndef PUBD_LOG_H
#define PUBD_LOG_H

#include <stddef.h>
#include <syslog.h>

void pubd_log_set_level(int level);
int pubd_log_get_level(void);
/*
 * Escape len bytes of in for a log line into out (cap bytes, always
 * NUL-terminated): control characters, DEL, C1, invalid UTF-8 as \xNN, a
 * backslash as \\. Stops before an escape that would not fit. Returns the
 * length written.
 */
size_t pubd_log_escape(char *out, size_t cap, const char *in, size_t len);
void pubd_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)	pubd_log(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	pubd_log(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) pubd_log(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	pubd_log(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	pubd_log(LOG_DEBUG, __VA_ARGS__)

#endif
