/* SPDX-License-Identifier: MIT */
/*
 * The configuration, first read and reloaded: groups added, removed or
 * changed in place, ACLs applied to live clients, what needs a restart
 * refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "log.h"

/* ---- config ---- */
void engine_reasm_config_from(const struct pubd_config *c, struct pubd_reasm_config *rc)
{
	pubd_reasm_config_defaults(rc);
	rc->budget_bytes = c->reassembly_budget;
	rc->timeout_ns = (uint64_t)c->reassembly_timeout_ms * MS;
	rc->max_message_size = c->max_message_size;
	rc->max_inflight_per_source = c->reassembly_inflight;
	/* On repair groups, reassembly waits for every NAK retry (and a
	 * heartbeat or two for the stuck-partial scan) before it gives up;
	 * other groups keep limits.reassembly_timeout_ms (rx.c's
	 * engine_reasm_ops.repairs puts each stream in its class). */
	rc->repair_timeout_ns = rc->timeout_ns;
	for (size_t i = 0; i < c->ngroups; i++) {
		const struct pubd_repair_config *r = &c->groups[i].repair;
		uint64_t need = ((uint64_t)r->nak_backoff_ms + (uint64_t)r->nak_interval_ms * (r->nak_retries + 1) +
				 2ull * c->heartbeat_ms) *
				MS;

		if (r->on && need > rc->repair_timeout_ns)
			rc->repair_timeout_ns = need;
		/* Gaps wait that long, so more of them are open at once (each
		 * still charged to the reassembly budget). */
		if (r->on && rc->max_missing_ranges < 4096)
			rc->max_missing_ranges = 4096;
	}
}

/* What "... and N more" takes at the end of a reload's error text. */
#define MORE_ROOM 48

int engine_load_config(const char *path, struct pubd_config *cfg, char *errtext, size_t errcap)
{
	struct pubd_config_errors errs = {0};
	char line[1024];
	size_t i, used = 0, shown = 0;
	int err;

	err = pubd_config_load(cfg, path, &pubd_nss_resolver, &errs);
	if (err == 0)
		return 0;
	for (i = 0; i < errs.n; i++) {
		pubd_config_error_format(&errs, i, line, sizeof(line));
		log_err("%s", line);
		/* Whole lines only, with room kept to say how many did not fit. */
		if (errtext && shown == i && used + strlen(line) + 1 + MORE_ROOM < errcap) {
			used += (size_t)snprintf(errtext + used, errcap - used, "%s%s", used ? "\n" : "", line);
			shown++;
		}
	}
	if (errtext && shown < errs.n)
		snprintf(errtext + used, errcap - used, "\n... and %zu more (each in pubd's log)", errs.n - shown);
	if (!errs.n) {
		log_err("%s: %s", path, strerror(-err));
		if (errtext)
			snprintf(errtext, errcap, "%s: %s", path, strerror(-err));
	}
	pubd_config_errors_free(&errs);
	return err;
}

static bool same_address(const struct pubd_group_config *a, const struct pubd_group *g)
{
	return a->address_len == g->addrlen && memcmp(&a->address, &g->addr, g->addrlen) == 0 && a->raw == g->raw &&
	       (a->scope == PUBD_SCOPE_HOST) == g->host && pubd_group_join_mode(a) == g->mode;
}

/* remade: the config still has a group of that name (its subscribers are
 * told to subscribe again), else it was removed. */
static void group_destroy(struct pubd *d, struct pubd_group *g, bool remade)
{
	uint64_t unsent;

	pubd_ipc_group_removed(&d->ipc, g, remade);
	unsent = pubd_tx_group_flush(d, g);
	if (unsent)
		log_warn("group %s: %" PRIu64 " accepted message%s not yet sent to the fabric dropped (group_reloaded)",
			 g->name, unsent, unsent == 1 ? "" : "s");
	if (!g->host)
		d->fops->leave(d->fabric, g->slot);
	pubd_reasm_forget_group(d->reasm, g->id);
	pubd_source_map_forget_group(&d->sources, g->id);
	engine_repair_free(d, g);
	engine_order_forget(d, g->id);
	/* Its drops outlive it in the daemon scope, so the drops table keeps
	 * adding up to the daemon's totals (dropped, rx_malformed). */
	pubd_drops_merge(&d->drops, &g->drops);
	pubd_drops_merge(&d->drops, &g->sub_drops);
	pubd_groups_remove(&d->groups, g);
}

int engine_apply_groups(struct pubd *d, struct pubd_config *cfg)
{
	const struct pubd_group_config *gc;
	struct pubd_group *g;
	unsigned i;
	size_t k, failed = 0;

	/* Removed, or changed in a way that needs a new join. */
	pubd_groups_foreach(&d->groups, g, i)
	{
		gc = pubd_config_group(cfg, g->name, g->name_len);
		if (gc && same_address(gc, g)) {
			const struct pubd_group_config *was = g->cfg; /* d->cfg's, freed after this */

			/* New ACLs take effect at once, for live clients too. */
			pubd_ipc_acl_changing(&d->ipc, g, gc);
			g->cfg = gc;
			pubd_ipc_acl_changed(&d->ipc, g, was);
			/* Order is kept no more: nothing would release what
			 * the group holds for it. */
			if (was->repair.on && !gc->repair.on)
				engine_order_flush_group(d, g->id);
			if (g->pacer.rate != gc->rate)
				pubd_tx_pace_config(d, g);
			continue;
		}
		log_notice("group %s: %s", g->name, gc ? "address, scope or mode changed: made anew" : "removed");
		group_destroy(d, g, gc != NULL);
	}
	for (k = 0; k < cfg->ngroups; k++) {
		gc = &cfg->groups[k];
		if (pubd_groups_by_name(&d->groups, gc->name, strlen(gc->name)))
			continue;
		g = pubd_groups_add(&d->groups, gc);
		if (!g)
			return -ENOMEM;
		log_info("group %s: %s%s", g->name, g->host ? "on this host only" : gc->address_text,
			 g->raw ? " (raw)" : "");
		pubd_tx_pace_config(d, g);
		if (pubd_group_join(d, g) < 0)
			failed++;
	}
	if (!failed)
		return 0;
	/* Each failure was logged where it happened; at start the next line
	 * is pubd's last, which must say what went wrong. */
	log_err("%zu of %zu groups could not be joined or could not start receiving (see above)", failed, cfg->ngroups);
	return -EIO;
}

/* What an applied reload could not do, for whoever asked (pubctl reload):
 * appended to errtext, each also logged where it happened. */
__attribute__((format(printf, 3, 4))) static void reload_note(char *errtext, size_t errcap, const char *fmt, ...)
{
	size_t n = errtext ? strnlen(errtext, errcap) : 0;
	va_list ap;

	if (!errtext || n + 3 >= errcap)
		return;
	if (n)
		n += (size_t)snprintf(errtext + n, errcap - n, "; ");
	va_start(ap, fmt);
	vsnprintf(errtext + n, errcap - n, fmt, ap);
	va_end(ap);
}

/* The socket's mode follows the config (a tightened mode must not be left
 * open while the reload says it worked). */
static void apply_socket_mode(struct pubd *d, uint32_t old_mode, char *errtext, size_t errcap)
{
	int r;

	if (d->cfg.socket_mode == old_mode)
		return;
	r = pubd_ipc_apply_socket_mode(&d->ipc);
	if (r == -ENOTSUP) {
		log_warn("daemon.socket_mode changed, but systemd passed the socket: its unit's SocketMode= applies");
		reload_note(errtext, errcap, "daemon.socket_mode is ignored: systemd passed the socket (SocketMode=)");
	} else if (r < 0) {
		const char *why = r == -ESTALE ? "the socket file is no longer the one pubd made" : strerror(-r);

		log_err("daemon.socket_mode %04o: %s", d->cfg.socket_mode, why);
		reload_note(errtext, errcap, "daemon.socket_mode %04o not applied: %s", d->cfg.socket_mode, why);
	}
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/*
 * The settings a reload cannot apply (the fabric is opened, the socket
 * bound, at start): the names of those next changes from what runs, in
 * buf (empty when none), and next made to keep what runs, so the next
 * reload compares with what runs too (it compared with the last file read:
 * a change put back was reported as a change, and one after it was not).
 * Strings are swapped, not copied: next's go with the old config.
 */
static void keep_running(struct pubd_config *next, struct pubd_config *run, char *buf, size_t cap)
{
	size_t len = 0;

#define RESTART_ONLY(changed, key, keep)                                                                          \
	do {                                                                                                      \
		if (changed) {                                                                                    \
			len += (size_t)snprintf(buf + (len < cap ? len : cap), len < cap ? cap - len : 0, "%s%s", \
						len ? ", " : "", key);                                            \
			keep;                                                                                     \
		}                                                                                                 \
	} while (0)
#define SWAP(a, b)                      \
	do {                            \
		__typeof__(a) t_ = (a); \
		(a) = (b);              \
		(b) = t_;               \
	} while (0)

	if (cap)
		buf[0] = 0;
	RESTART_ONLY(next->fabric_type != run->fabric_type, "fabric.type", next->fabric_type = run->fabric_type);
	RESTART_ONLY(!same_str(next->fabric_address, run->fabric_address), "fabric.address", {
		SWAP(next->fabric_address, run->fabric_address);
		next->fabric_sockaddr = run->fabric_sockaddr;
		next->fabric_sockaddr_len = run->fabric_sockaddr_len;
	});
	RESTART_ONLY(next->udp_port != run->udp_port, "fabric.udp_port", next->udp_port = run->udp_port);
	RESTART_ONLY(next->mtu != run->mtu, "fabric.mtu", next->mtu = run->mtu);
	RESTART_ONLY(next->srq_depth != run->srq_depth, "fabric.srq_depth", next->srq_depth = run->srq_depth);
	RESTART_ONLY(next->srq_low_watermark != run->srq_low_watermark, "fabric.srq_low_watermark",
		     next->srq_low_watermark = run->srq_low_watermark);
	RESTART_ONLY(next->send_queue_depth != run->send_queue_depth, "fabric.send_queue_depth",
		     next->send_queue_depth = run->send_queue_depth);
	RESTART_ONLY(next->rx_linger_us != run->rx_linger_us, "fabric.rx_linger_us",
		     next->rx_linger_us = run->rx_linger_us);
	next->rx_linger_auto_us = run->rx_linger_auto_us; /* sized at start, not read */
	RESTART_ONLY(next->sendonly_hold_ms != run->sendonly_hold_ms, "fabric.sendonly_hold_ms",
		     next->sendonly_hold_ms = run->sendonly_hold_ms);
	RESTART_ONLY(!same_str(next->socket_path, run->socket_path), "daemon.socket",
		     SWAP(next->socket_path, run->socket_path));
#undef SWAP
#undef RESTART_ONLY
}

/* A reload that applied nothing: counted, and systemd told pubd is ready
 * again, on the configuration it ran. */
static int reload_refused(struct pubd *d, int err)
{
	d->counters[PUBD_CTR_RELOAD_FAILURES]++;
	pubd_notify_ready(d);
	return err;
}

/* An empty file is the classic failed edit (truncated, or saved before it
 * was written): applied, it would take every group away from its
 * subscribers and every key back to its default, socket_mode included. */
static int refuse_empty(struct pubd *d, struct pubd_config *cfg, char *errtext, size_t errcap)
{
	log_err("reload rejected: %s holds no settings (empty, or only comments); keeping the running "
		"configuration (a file of {} means every default)",
		d->config_path);
	if (errtext && errcap)
		snprintf(errtext, errcap,
			 "%s: holds no settings (empty, or only comments); reload refused, "
			 "the running configuration stays (a file of {} means every default)",
			 d->config_path);
	pubd_config_free(cfg);
	return reload_refused(d, -EINVAL);
}

/* What only a restart applies is kept as it runs, and said. */
static void note_restart_only(struct pubd *d, struct pubd_config *cfg, char *errtext, size_t errcap)
{
	char changed[256];

	keep_running(cfg, &d->cfg, changed, sizeof(changed));
	if (changed[0]) {
		log_warn("%s changed; applied when pubd restarts (running on as before)", changed);
		reload_note(errtext, errcap, "%s changed; applied when pubd restarts", changed);
	}
}

/* cfg becomes the running configuration (the groups already point into
 * it: engine_apply_groups), and what reads it is told. */
static void take_config(struct pubd *d, struct pubd_config *cfg)
{
	struct pubd_config old = d->cfg;
	struct pubd_reasm_config rc;
	struct pubd_group *g;
	unsigned i;

	d->cfg = *cfg;
	d->sources.max = cfg->max_sources;
	pubd_config_free(&old);
	pubd_log_set_level(d->cfg.log_level);
	/* fabric.receive may have changed. */
	pubd_groups_foreach(&d->groups, g, i) pubd_group_listen_sync(d, g);
	engine_reasm_config_from(&d->cfg, &rc);
	pubd_reasm_set_config(d->reasm, &rc);
}

int pubd_reload(struct pubd *d, char *errtext, size_t errcap)
{
	struct pubd_config cfg;
	uint32_t old_mode;
	int err, r;

	if (errtext && errcap)
		errtext[0] = 0;
	pubd_notify_reloading(d);
	log_notice("reloading %s", d->config_path);
	err = engine_load_config(d->config_path, &cfg, errtext, errcap);
	if (err < 0) {
		log_err("reload rejected; keeping the running configuration");
		return reload_refused(d, err);
	}
	if (cfg.empty)
		return refuse_empty(d, &cfg, errtext, errcap);
	note_restart_only(d, &cfg, errtext, errcap);
	old_mode = d->cfg.socket_mode;
	/* Who may read a direct log (server/direct.c) follows these: every
	 * log is retired, and made anew on its writer's next message (for a
	 * client told another size limit at HELLO, not at all). */
	if (cfg.shm != d->cfg.shm || cfg.shm_direct != d->cfg.shm_direct ||
	    cfg.slow_subscriber != d->cfg.slow_subscriber || cfg.max_message_size != d->cfg.max_message_size)
		pubd_ipc_direct_reconfigured(&d->ipc);
	/* Groups point into the config they were made from: swap, then fix. */
	err = engine_apply_groups(d, &cfg);
	if (err < 0)
		reload_note(errtext, errcap, "some groups failed to join (see the log)");
	take_config(d, &cfg);
	/* metrics.listen: reopened when it changed; a failed bind is logged
	 * and leaves the listener there was. */
	r = pubd_metrics_apply(d, false);
	if (r < 0)
		reload_note(errtext, errcap, "metrics.listen %s: cannot listen: %s; %s", d->cfg.metrics_listen,
			    strerror(-r),
			    d->metrics_http ? "still serving on the previous address" : "no /metrics listener");
	apply_socket_mode(d, old_mode, errtext, errcap);
	d->counters[PUBD_CTR_RELOADS]++;
	log_notice("reload applied: %zu groups", d->cfg.ngroups);
	pubd_notify_ready(d);
	pubd_notify_status(d);
	return errtext && errtext[0] ? 1 : 0;
}
