/* SPDX-License-Identifier: MIT */
/*
 * systemd notification through libsystemd's sd_notify: READY once every
 * group is joined and the socket listens, STATUS kept current, WATCHDOG
 * pings from the loop at half of WATCHDOG_USEC (so a stuck loop is what
 * stops them), RELOADING/READY around a reload, STOPPING at exit.
 * Without NOTIFY_SOCKET every call is a cheap no-op.
 */
#include <inttypes.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "log.h"

void pubd_notify_init(struct pubd *d)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) > 0 && usec) {
		d->watchdog_usec = usec;
		log_info("systemd watchdog: %" PRIu64 " ms, pinging every %" PRIu64 " ms", usec / 1000, usec / 2000);
	}
}

static void status_line(struct pubd *d, char *buf, size_t cap)
{
	unsigned n = d->groups.count, up = d->groups.up;

	snprintf(buf, cap,
		 "STATUS=fabric %s, groups %u/%u joined, clients %u, published %" PRIu64 ", delivered %" PRIu64
		 ", dropped %" PRIu64,
		 d->fops ? d->fops->name : "none", up, n, d->ipc.nclients, d->counters[PUBD_CTR_MSG_PUBLISHED],
		 d->counters[PUBD_CTR_MSG_DELIVERED], d->counters[PUBD_CTR_MSG_DROPPED]);
}

/*
 * The first READY=1 promises that the socket listens and every configured
 * group is joined: units ordered after pubd.service rely on it. Checked here
 * rather than trusted to the caller, because a group's "up" may be reported
 * while pubd_init is still adding the later groups (a fabric that reports a
 * join synchronously); pubd_init asks again once it has added them all.
 */
static bool fully_up(const struct pubd *d)
{
	return pubd_ipc_listening(&d->ipc) && d->groups.up == d->groups.count && d->groups.count == d->cfg.ngroups;
}

void pubd_notify_ready(struct pubd *d)
{
	char status[512];

	/* Later READY=1s end a reload: they report the state, whatever it is. */
	if (!d->ready && !fully_up(d))
		return;
	status_line(d, status, sizeof(status));
	if (!d->ready)
		log_notice("ready: %s", status + 7);
	d->ready = true;
	sd_notifyf(0, "READY=1\n%s", status);
}

void pubd_notify_status(struct pubd *d)
{
	char status[512];

	status_line(d, status, sizeof(status));
	sd_notify(0, status);
}

void pubd_notify_reloading(struct pubd *d)
{
	(void)d;
	sd_notify(0, "RELOADING=1\nSTATUS=reloading the configuration");
}

void pubd_notify_stopping(struct pubd *d)
{
	(void)d;
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}

void pubd_notify_watchdog(struct pubd *d)
{
	(void)d;
	sd_notify(0, "WATCHDOG=1");
}
