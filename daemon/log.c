/* SPDX-License-Identifier: MIT */
/*
 * Log lines go to stderr as "<PRIO>text\n". Under systemd, journald reads
 * the prefix as the line's priority (SyslogLevelPrefix=yes, the default);
 * on a terminal it is still readable. One write() per line so lines from
 * concurrent writers do not interleave.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "log.h"

static int log_level = LOG_INFO;

void pubd_log_set_level(int level)
{
	log_level = level;
}

int pubd_log_get_level(void)
{
	return log_level;
}

void pubd_log(int prio, const char *fmt, ...)
{
	char line[1024];
	int saved = errno, n, m;
	va_list ap;

	if (prio > log_level)
		return;
	n = snprintf(line, sizeof(line), "<%d>", prio);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}
