/* SPDX-License-Identifier: MIT */
/*
 * Log lines go to stderr as "<PRIO>text\n". Under systemd, journald reads
 * the prefix as the line's priority (SyslogLevelPrefix=yes, the default);
 * on a terminal it is still readable. One write() per line so lines from
 * concurrent writers do not interleave.
 *
 * Every line is escaped here, after formatting, so no call site can forget:
 * log arguments include strings from outside (a client's HELLO name, group
 * names in requests, anything in a datagram). A newline in one would start
 * a forged line with a priority of its choosing ("\n<2>..."); an ESC or C1
 * byte would drive the operator's terminal. Control characters, DEL, C1
 * code points, bytes that are not UTF-8 and the backslash itself (so an
 * escape in the output always means one) are written as \xNN or \\;
 * printable ASCII and valid UTF-8 text pass unchanged, so our own messages
 * read as before.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "utf8.h"
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

size_t pubd_log_escape(char *out, size_t cap, const char *in, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)in;
	size_t i = 0, o = 0, n;

	if (!cap)
		return 0;
	while (i < len) {
		unsigned char ch = p[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
			if (o + 1 >= cap)
				break;
			out[o++] = (char)ch;
			i++;
		} else if (ch == '\\') {
			if (o + 2 >= cap)
				break;
			out[o++] = '\\';
			out[o++] = '\\';
			i++;
		} else if (ch >= 0x80 && (n = pub_utf8_shown_len(p + i, len - i))) {
			if (o + n >= cap)
				break;
			while (n--)
				out[o++] = (char)p[i++];
		} else {
			if (o + 4 >= cap)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
			i++;
		}
	}
	out[o] = 0;
	return o;
}

void pubd_log(int prio, const char *fmt, ...)
{
	char text[1024], line[1024];
	int saved = errno, n, m;
	va_list ap;

	if (prio > log_level)
		return;
	va_start(ap, fmt);
	m = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	if (m > (int)sizeof(text) - 1)
		m = (int)sizeof(text) - 1;
	n = snprintf(line, sizeof(line), "<%d>", prio);
	/* Room for the newline: escape into all but the last byte. */
	n += (int)pubd_log_escape(line + n, sizeof(line) - (size_t)n - 1, text, (size_t)m);
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}
