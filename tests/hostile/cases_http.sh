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

# h_metrics_pubd PORT [HELLO_TIMEOUT_MS]: pubd serving /metrics on
# 127.0.0.1:PORT in H_NS.
h_metrics_pubd() {
	h_pubd d <<-EOF2
		limits:
		  hello_timeout_ms: ${2:-2000}
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
	# The idle clients say nothing and must hold their fds throughout:
	# not closed at the HELLO deadline.
	h_metrics_pubd $port 600000
	url=http://127.0.0.1:$port/metrics
	lim=$(($(h_fds "$H_PID") + 16))
	prlimit --pid "$H_PID" --nofile="$lim" || it_die "prlimit"
	it_bg idle - "$HC" idle -s "$(it_sock d)" -n 70 --ready "$IT_WORK/idle.ready"
	it_wait "70 connections tried" 30 h_ready idle || return
	# Every fd number below the limit taken (one free one, and the scrape
	# would simply be served).
	it_wait "pubd has run out of fds" 10 it_holds "[ \"\$(h_fds $H_PID)\" -ge $lim ]" || return
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

# h_reopened NAME: how many connections slowloris NAME has opened again.
h_reopened() { sed -n 's/^reopened //p' "$IT_WORK/$1.out" | tail -n 1 | grep . || echo 0; }

# ---- class: slow clients hold every /metrics slot ----
# 16 connections from 127.0.0.1 and 16 from 127.0.0.2 (each address's
# limit, the listener's 32 in all) send a header line every 5 s and never
# end their requests, opening again whatever pubd closes. A scraper at a
# third address, then at the first one, must be answered within seconds
# (before: never, as long as the attack went on), and the slow connections
# are closed once their requests are late.
case_c_metrics_slowloris() {
	local port=9483 url a b t3 t1 fds
	h_metrics_pubd $port
	fds=$(h_fds "$H_PID")
	url=http://127.0.0.1:$port/metrics
	it_bg slow1 "$H_NS" python3 "$H_HTTP_PY" slowloris 127.0.0.1 $port 16 127.0.0.1 5
	a=$IT_BG_PID
	it_bg slow2 "$H_NS" python3 "$H_HTTP_PY" slowloris 127.0.0.1 $port 16 127.0.0.2 5
	b=$IT_BG_PID
	it_wait "the slow clients hold their connections" 20 \
		it_holds 'grep -q ready "$IT_WORK/slow1.out" && grep -q ready "$IT_WORK/slow2.out"' || return
	it_wait "pubd has taken them" 10 it_holds "[ \"\$(h_fds $H_PID)\" -ge $((fds + 32)) ]" || return
	t3=$(h_http until_ok "$url" 15 127.0.0.3)
	t1=$(h_http until_ok "$url" 15 127.0.0.1)
	it_check "pubd answers a query during the attack" it_ctl d status >/dev/null
	it_wait "the slow connections are closed at their deadline" 10 \
		it_holds '[ "$(h_reopened slow1)" -ge 16 ] && [ "$(h_reopened slow2)" -ge 16 ]'
	kill -TERM "$a" "$b"
	it_reap "$a" 10
	it_reap "$b" 10
	h_fig "32 slow clients (16 each from 127.0.0.1 and .2): a scrape from 127.0.0.3 answered after $t3 s, from 127.0.0.1 after $t1 s; pubd closed and the attackers reopened $(h_reopened slow1) + $(h_reopened slow2) connections"
	it_check "a scrape from another address gets through within 5 s ($t3)" \
		awk -v s="$t3" 'BEGIN { exit !(s != "none" && s < 5) }'
	it_check "a scrape from an attacker's address gets through within 5 s ($t1)" \
		awk -v s="$t1" 'BEGIN { exit !(s != "none" && s < 5) }'
	it_check "connections closed unanswered are logged with their count" \
		grep -q "metrics: .* [1-9][0-9]* closed without an answer" "$IT_WORK/d.log"
}
