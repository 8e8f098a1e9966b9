#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Prometheus metrics (metrics.listen): pubd serves /metrics on loopback;
# after traffic the text is clean for `promtool check metrics`, carries the
# group's counts, matches `pubctl metrics` name for name, and a real
# Prometheus server (Debian's) scrapes it: the published count is read back
# through its query API. Other paths are 404, other methods 405. Idle
# connections from one address are bounded while pubd keeps answering
# pubctl at once. A reload moves the listener; one whose address cannot be
# bound keeps the old listener. A bad metrics.listen is a config error with
# its place, and an address already in use stops pubd at start naming it.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup metrics

HTTP="python3 $(dirname "$0")/metrics_http.py"
for t in prometheus promtool python3; do
	command -v "$t" >/dev/null || it_die "needs $t (packages: prometheus python3)"
done
N=25

# ---- a bad value: the config error with its place ----
printf 'metrics:\n  listen: "localhost:9477"\n' >"$IT_WORK/bad.yaml"
out=$("$PUBD" --check-config "$IT_WORK/bad.yaml" 2>&1)
it_check "bad metrics.listen is a config error with its place" \
	grep -q "bad.yaml:2:11: metrics.listen: expected an IP address and port to serve /metrics on" <<<"$out"

it_host_lo h1
ns=$(it_ns h1)
in_ns() { ip netns exec "$ns" "$@"; }
write_conf() { # LISTEN
	it_conf_write h1 - <<-EOF2
		metrics:
		  listen: "$1"
		groups:
		  - name: mt
		    address: 239.81.10.1
	EOF2
}
write_conf 127.0.0.1:9477
it_pubd_start h1 "$ns" || it_die "pubd did not start"
it_check "log says where /metrics is served" grep -q "metrics: serving http://127.0.0.1:9477/metrics" "$IT_WORK/h1.log"
URL=http://127.0.0.1:9477/metrics

# ---- a second daemon on the same metrics address: a startup error ----
sed -e "s|h1.sock|h2.sock|" "$(it_conf h1)" >"$IT_WORK/h2.yaml"
if in_ns timeout 20 "$PUBD" -c "$IT_WORK/h2.yaml" >"$IT_WORK/h2.log" 2>&1; then
	it_fail "a pubd whose metrics.listen is in use started"
else
	it_check "metrics.listen in use stops pubd at start, naming the address" \
		grep -q "metrics.listen 127.0.0.1:9477: cannot listen: Address already in use" "$IT_WORK/h2.log"
fi

# ---- traffic ----
it_bg sub "$ns" "$ITEST_CLIENT" sub -s "$(it_sock h1)" -g mt --log "$IT_WORK/sub.log" --timeout-ms 60000
it_wait "subscriber" 20 it_subscribers_at_least h1 mt 1 || it_die "no subscriber"
it_ctl h1 pub mt --count "$N" --size 100 >/dev/null || it_fail "pubctl pub"
it_wait "subscriber got $N" 20 it_lines_at_least "$IT_WORK/sub.log" '^msg mt ' "$N"

# ---- the scrape ----
in_ns $HTTP get "$URL" >"$IT_WORK/scrape.txt" || it_fail "GET /metrics"
it_check "published count of the group in the scrape" \
	grep -qx "pubd_group_messages_published_total{group=\"mt\"} $N" "$IT_WORK/scrape.txt"
it_check "subscriber series in the scrape" \
	grep -q "^pubd_subscriber_messages_delivered_total{group=\"mt\",client=\"[0-9]*\",name=\"[^\"]*\"} $N\$" \
	"$IT_WORK/scrape.txt"
pt=$(promtool check metrics <"$IT_WORK/scrape.txt" 2>&1)
it_eq "promtool check metrics is clean" "$?:$pt" "0:"
it_ctl h1 metrics >"$IT_WORK/ctl.txt" || it_fail "pubctl metrics"
names() { grep -v '^#' "$1" | sed 's/[{ ].*//' | sort -u; }
it_check "pubctl metrics has the scrape's metric names" diff <(names "$IT_WORK/scrape.txt") <(names "$IT_WORK/ctl.txt")
it_check "pubctl metrics has the group's count" \
	grep -qx "pubd_group_messages_published_total{group=\"mt\"} $N" "$IT_WORK/ctl.txt"
it_check "pubctl --help lists metrics" grep -q "^  metrics " <("$PUBCTL" --help)
it_eq "GET /other is 404" "$(in_ns $HTTP code http://127.0.0.1:9477/other GET)" 404
it_eq "POST /metrics is 405" "$(in_ns $HTTP code "$URL" POST)" 405
it_eq "HEAD /metrics is 200" "$(in_ns $HTTP code "$URL" HEAD)" 200

# ---- a real Prometheus server scrapes it ----
mkdir -p "$IT_WORK/prom"
cat >"$IT_WORK/prometheus.yml" <<-EOF2
	global:
	  scrape_interval: 1s
	  scrape_timeout: 1s
	scrape_configs:
	  - job_name: pubd
	    static_configs:
	      - targets: ['127.0.0.1:9477']
EOF2
it_bg prometheus "$ns" prometheus --config.file="$IT_WORK/prometheus.yml" \
	--storage.tsdb.path="$IT_WORK/prom" --web.listen-address=127.0.0.1:9090
prom_pid=$IT_BG_PID
prom_value() { in_ns $HTTP promq http://127.0.0.1:9090 "$1"; }
prom_is() { [ "$(prom_value "$1")" = "$2" ]; }
if it_wait "Prometheus has the group's published count" 40 \
	prom_is "pubd_group_messages_published_total{group=\"mt\",job=\"pubd\"}" "$N"; then
	it_pass "Prometheus query API: pubd_group_messages_published_total{group=\"mt\"} = $N"
fi
it_check "Prometheus sees the target up" prom_is "up{job=\"pubd\"}" 1
kill -TERM "$prom_pid" 2>/dev/null
it_reap "$prom_pid" 10

# ---- idle connections are bounded; pubd stays responsive ----
coproc HOLD { in_ns $HTTP hold 127.0.0.1 9477 100; }
read -r -t 20 held <&"${HOLD[0]}" || held=timeout
if [[ $held =~ ^[0-9]+$ ]] && [ "$held" -le 16 ]; then
	it_pass "100 idle connections from one address: $held kept (per-address limit 16)"
else
	it_fail "100 idle connections from one address: $held kept, want at most 16"
fi
t0=$(date +%s%N)
it_ctl h1 status >/dev/null || it_fail "pubctl status while connections are held"
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$ms" -lt 2000 ]; then it_pass "pubctl status answered in ${ms} ms"; else it_fail "pubctl status took ${ms} ms"; fi
exec {HOLD[1]}>&-
wait "$HOLD_PID" 2>/dev/null
scrape_ok() { in_ns $HTTP get "$URL" >/dev/null; }
it_wait "scrapes again once they are closed" 20 scrape_ok

# ---- reload: moved, then a bind that fails keeps the listener ----
write_conf 127.0.0.1:9478
it_ctl h1 reload >/dev/null || it_fail "reload"
it_eq "after reload, the new address serves" "$(in_ns $HTTP code http://127.0.0.1:9478/metrics GET)" 200
it_eq "after reload, the old address is closed" "$(in_ns $HTTP code "$URL" GET)" 0
write_conf 192.0.2.1:9479 # not an address of this host
out=$(it_ctl h1 reload 2>&1) && it_fail "pubctl reload said all was applied: $out"
it_check "pubctl reload says the listener was not moved" \
	grep -q "but not all of it (pubd: metrics.listen 192.0.2.1:9479: cannot listen: .*; still serving on the previous address)" <<<"$out"
it_check "a failed bind at reload is logged" grep -q "metrics.listen 192.0.2.1:9479: .*still serving on the previous address" \
	"$IT_WORK/h1.log"
it_eq "and the previous listener still serves" "$(in_ns $HTTP code http://127.0.0.1:9478/metrics GET)" 200
# The same port on every address: the kernel refuses the wildcard bind while
# 127.0.0.1:9478 listens, so the old listener must give the port up first.
write_conf 0.0.0.0:9478
it_ctl h1 reload >/dev/null || it_fail "reload"
it_check "moved to the wildcard address on the same port" \
	grep -q "metrics: serving http://0.0.0.0:9478/metrics (metrics.listen 0.0.0.0:9478)" "$IT_WORK/h1.log"
it_eq "which serves" "$(in_ns $HTTP code http://127.0.0.1:9478/metrics GET)" 200
# The port is taken by someone else: pubd keeps what it had.
coproc SQUAT { in_ns python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 9480)); s.listen(1)
print("ready", flush=True); sys.stdin.read()'; }
read -r -t 10 _ <&"${SQUAT[0]}" || it_fail "the squatter did not start"
write_conf 127.0.0.1:9480
it_ctl h1 reload >/dev/null 2>&1 && it_fail "pubctl reload said all was applied"
it_check "a port in use elsewhere at reload is logged" \
	grep -q "metrics.listen 127.0.0.1:9480: .*still serving on the previous address" "$IT_WORK/h1.log"
it_eq "and the wildcard listener still serves" "$(in_ns $HTTP code http://127.0.0.1:9478/metrics GET)" 200
exec {SQUAT[1]}>&-
wait "$SQUAT_PID" 2>/dev/null

it_finish
