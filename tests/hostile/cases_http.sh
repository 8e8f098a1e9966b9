# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Hostile cases against pubd's /metrics listener (metrics.listen): one
# function case_NAME each, run like those of cases.sh (case.sh sources
# this file; run.sh lists its cases).
# shellcheck disable=SC2016 # it_holds conditions are single-quoted: evaluated on each try

H_HTTP_PY=$(cd "$(dirname "${BASH_SOURCE[0]}")/../integration" && pwd)/metrics_http.py

# h_http ARGS...: the standard-library HTTP client, inside pubd's namespace.
h_http() { ip netns exec "$H_NS" python3 "$H_HTTP_PY" "$@"; }

# h_metrics_pubd PORT: pubd serving /metrics on 127.0.0.1:PORT in H_NS.
h_metrics_pubd() {
	h_pubd d <<-EOF2
		metrics:
		  listen: "127.0.0.1:$1"
		$(h_groups)
	EOF2
}

# ---- class: the fd limit reached, then a scrape ----
# Idle local clients take pubd's last fds; a scrape's connection then could
# not be accepted (EMFILE), stayed in the backlog and kept the listener
# readable: pubd spun at 100% CPU, logging nothing, for as long as it sat
# there. Now it is accepted with a reserve fd and closed at once (503), and
# the refusals are one log line with a count.
case_c_metrics_emfile() {
	local port=9482 url lim c0 c1 l0 l1 got secs
	h_metrics_pubd $port
	url=http://127.0.0.1:$port/metrics
	lim=$(($(h_fds "$H_PID") + 16))
	prlimit --pid "$H_PID" --nofile="$lim" || it_die "prlimit"
	it_bg idle - "$HC" idle -s "$(it_sock d)" -n 70 --ready "$IT_WORK/idle.ready"
	it_wait "70 connections tried" 30 h_ready idle || return
	it_wait "pubd has run out of fds" 10 it_holds "[ \"\$(h_fds $H_PID)\" -ge $((lim - 1)) ]" || return
	c0=$(h_cpu "$H_PID")
	l0=$(wc -l <"$IT_WORK/d.log")
	got=$(h_http attempt "$url" 1)
	sleep 2 # the span over which CPU time and log lines are measured
	c1=$(h_cpu "$H_PID")
	l1=$(wc -l <"$IT_WORK/d.log")
	secs=${got#* }
	h_fig "fd limit $lim, 70 idle clients: a scrape got status ${got% *} in $secs s; then pubd used $((c1 - c0)) CPU ticks in $secs + 2 s; wrote $((l1 - l0)) log lines"
	it_check "pubd does not spin (CPU ticks $((c1 - c0)) < 30 of about 300)" test $((c1 - c0)) -lt 30
	it_check "the scrape is refused at once, not left in the backlog ($secs s)" \
		awk -v s="$secs" 'BEGIN { exit !(s < 0.9) }'
	it_check "the refusal is logged with its count" grep -q "metrics: [1-9][0-9]* connections refused" "$IT_WORK/d.log"
	it_check "the log stays short ($((l1 - l0)) lines < 5)" test $((l1 - l0)) -lt 5
	kill -TERM "$IT_BG_PID"
	it_reap "$IT_BG_PID" 10
	it_wait "a scrape is answered once the fds are free" 15 h_http get "$url" ||
		it_fail "no scrape after the fds were freed"
}
