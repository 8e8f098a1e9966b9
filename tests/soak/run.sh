#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The soak: two pubd daemons (udp fabric, network namespaces a and b on a
# bridge, a third namespace f for the forger) under a mixed load for the
# whole run, then an accounting check and a resource summary. Not in CI.
#
#   tests/soak/run.sh [--minutes N] [--build DIR] [--forge-rate R] [--forge-kinds K,...]
#                     [--keep-groups] [--out DIR]
#
#   --minutes N     load duration (default 30)
#   --build DIR     the cmake build to use (default build); the soak's
#                   programs are built in it first
#   --forge-rate R  forged datagrams per second (default 200)
#   --forge-kinds   only these kinds of forgery (soak_forge.c: whole, partial,
#                   badfrag, badhdr, seqjump, foreign; default all)
#   --keep-groups   reloads change ACLs and limits only (group churn is never
#                   removed), to tell a defect of group removal from others
#   --out DIR       also copy the summary and the samples there
#
# The load, all at once for the whole duration:
#  - per daemon three long-lived libpub publishers (s1+s2: 64 B-4 KiB at
#    300/s in PUB_MORE batches of 16; s2+acl+churn: 1-64 KiB at 40/s; big:
#    64 KiB-1 MiB at 3/s);
#  - per daemon a fast subscriber (s1, s2, big) and a slow one (s1, s2, 50
#    messages a second), there from before the first message (the checked
#    subscribers), plus unchecked ones on acl and churn;
#  - churn: short publishers and subscribers (soak_client, pubctl), clients
#    killed with SIGKILL mid-stream, unsubscribes mid-delivery, queries;
#  - a reload every minute (a fifth of the run when shorter), alternating
#    two configurations per daemon: group churn added/removed, the acl
#    group's ACLs open / closed to uid 4242, subscriber_queue 256 / 128;
#    a SIGHUP on a, `pubctl reload` on b;
#  - soak_forge in f: forged datagrams to every group address.
# Every second the daemons' RSS (VmRSS) and open fds go to samples.csv;
# every 5 s `pubctl status` must answer within 10 s (liveness.csv).
#
# At the end (load stopped, reassembly deadlines past, counters steady,
# checked subscribers drained) it checks, from `pubctl --json`:
#  - streams: for each daemon X and group g in s1 s2 big acl, X's
#    `published` = the other daemon's (X's source, g) row: delivered +
#    dropped (+ nothing left in flight);
#  - checked subscribers: delivered + dropped = its group's published +
#    received, and what the client counted = delivered, no damaged payload;
#  - totals: status `dropped` = the drops table's message rows (scopes
#    daemon, group and group-subscribers), and no drop count above 10^12
#    (a value a peer sent must not make a counter absurd);
#  - resources: RSS and fds over three windows of the load (5 minutes each,
#    or a fifth of the run when shorter): the first, the second and the
#    last. The first is the daemons warming up (queues, group logs, the
#    reassembly budget and the heap growing to what the load needs; on a
#    10-minute run the heap's step has come as late as 150 s), so the
#    second is the baseline. FAIL when the last window's mean RSS is above
#    the second window's maximum by more than 25% + 16 MiB (the reassembly
#    budget, which may fill at any time), or when the last window's
#    *minimum* fd count is above the second window's maximum by more than 8
#    (a leak, not churn). Judged only when the windows are 2 minutes or
#    longer (runs of 10 minutes and more); short runs show the figures
#    without a verdict on them;
#  - both daemons stayed up, answered every liveness probe, and stop with
#    status 0 on SIGTERM.
# Prints the summary and PASS or FAIL (exit status 0 or 1). Everything it
# starts (namespaces, processes) is removed on exit, Ctrl-C included; its
# own deadline (duration + 10 minutes) ends it whatever happens. The work
# directory (logs, samples.csv, tables/, summary.txt) is kept.

# One compound command, read whole before it runs: editing this file during
# a half-hour soak cannot change the run under way. (Its functions called
# through it_wait look unreachable to shellcheck.)
# shellcheck disable=SC2317
{
set -uo pipefail

MINUTES=30
BUILD_ARG=build
FORGE_RATE=200
FORGE_KINDS=whole,partial,badfrag,badhdr,seqjump,foreign
OUT=
KEEP_GROUPS=0
while [ $# -gt 0 ]; do
	case $1 in
	--minutes) MINUTES=$2; shift 2 ;;
	--build) BUILD_ARG=$2; shift 2 ;;
	--forge-rate) FORGE_RATE=$2; shift 2 ;;
	--forge-kinds) FORGE_KINDS=$2; shift 2 ;;
	--keep-groups) KEEP_GROUPS=1; shift ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '4,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
case $MINUTES in '' | *[!0-9.]*) echo "run.sh: --minutes takes a number" >&2; exit 2 ;; esac
DURATION=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 }')
[ "$DURATION" -ge 30 ] || { echo "run.sh: at least half a minute, please" >&2; exit 2; }

SOAK_SRC=$(cd "$(dirname "$0")" && pwd)
BUILD=$(realpath "$BUILD_ARG") || exit 2
[ -f "$BUILD/CMakeCache.txt" ] || { echo "run.sh: $BUILD is not a cmake build directory" >&2; exit 2; }
cmake --build "$BUILD" -j2 --target pubd pubctl itest_client soak_client soak_forge >/dev/null ||
	{ echo "run.sh: build failed (cmake --build $BUILD)" >&2; exit 2; }
SOAK_CLIENT=$BUILD/tests/soak/soak_client
SOAK_FORGE=$BUILD/tests/soak/soak_forge
export BUILD

# lib.sh's deadline: the load, then up to 10 minutes for the wind-down.
IT_LIMIT=$((DURATION + 600))
IT_KEEP=1
# shellcheck source=tests/integration/lib.sh
. "$SOAK_SRC/../integration/lib.sh"

# Our namespaces are soak-<pid>-<host>, apart from the integration tier's.
it_ns() { echo "soak-$IT_ID-$1"; }
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^soak-[0-9]*-' || true); do
	pid=${ns#soak-}
	pid=${pid%%-*}
	if ! kill -0 "$pid" 2>/dev/null; then
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	fi
done

it_setup soak
# lib.sh's teardown ends the watchdog's shell, whose sleep would linger for
# the whole limit: end the shell first (so it cannot go on to its kill),
# then its sleep, then tear down.
soak_teardown() {
	local rc=$? sleeper=
	if [ -n "$IT_WATCHDOG" ]; then
		sleeper=$(pgrep -P "$IT_WATCHDOG" -x sleep)
		kill "$IT_WATCHDOG" 2>/dev/null
		[ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null
	fi
	(exit "$rc")
	it_teardown
}
trap soak_teardown EXIT
W=$IT_WORK
mkdir -p "$W/tables" "$W/stats"

HOSTS=(a b)
CHECKED_GROUPS=(s1 s2 big acl)
PORT=7470
it_hosts 83 a b f
# Read indirectly (${!ns_var}, ${!pid_var}).
# shellcheck disable=SC2034
NS_a=$(it_ns a)
# shellcheck disable=SC2034
NS_b=$(it_ns b)
NS_f=$(it_ns f)

# write_conf HOST VARIANT: the two configurations a reload alternates.
write_conf() {
	local h=$1 v=$2 addr_var="IT_ADDR_$1"
	{
		echo "  receive: always"
		echo "limits:"
		echo "  reassembly_budget: 16MiB"
		echo "  max_message_size: 2MiB"
		echo "  slow_subscriber: drop-oldest"
		if [ "$v" = 0 ]; then echo "  subscriber_queue: 256"; else echo "  subscriber_queue: 128"; fi
		echo "groups:"
		printf '  - name: %s\n    address: 239.83.0.%d\n' s1 1 s2 2 big 3
		printf '  - name: acl\n    address: 239.83.0.4\n'
		if [ "$v" = 1 ]; then
			echo "    publish: [uid:4242]"
			echo "    subscribe: [uid:4242]"
		fi
		if [ "$v" = 0 ] || [ "$KEEP_GROUPS" = 1 ]; then
			printf '  - name: churn\n    address: 239.83.0.5\n'
		fi
	} | IT_PORT=$PORT it_conf_write "$h" "${!addr_var}"
}

for h in "${HOSTS[@]}"; do
	write_conf "$h" 0
	ns_var="NS_$h"
	it_pubd_start "$h" "${!ns_var}" || it_die "pubd $h did not start"
done
PID_a=$(it_pid a)
# shellcheck disable=SC2034
PID_b=$(it_pid b)

# ---- checked subscribers: there before the first message ----

# soak_bg NAME HOST ARGS...: a soak_client in HOST's namespace, on its pubd.
soak_bg() {
	local name=$1 h=$2 ns_var="NS_$2"
	shift 2
	it_bg "$name" "${!ns_var}" "$SOAK_CLIENT" "$1" -s "$(it_sock "$h")" "${@:2}" --stats "$W/stats/$name"
}

declare -A CHECKED_PID CHECKED_GROUPS_OF
for h in "${HOSTS[@]}"; do
	soak_bg "fast-$h" "$h" sub -g s1 -g s2 -g big
	CHECKED_PID[fast-$h]=$IT_BG_PID
	CHECKED_GROUPS_OF[fast-$h]="s1 s2 big"
	soak_bg "slow-$h" "$h" sub -g s1 -g s2 --slow-ms 1000 --slow-batch 50
	CHECKED_PID[slow-$h]=$IT_BG_PID
	CHECKED_GROUPS_OF[slow-$h]="s1 s2"
done
for h in "${HOSTS[@]}"; do
	it_wait "checked subscribers on $h" 30 it_subscribers_at_least "$h" s1 2 || it_die "subscribers on $h"
	it_wait "checked subscribers on $h" 30 it_subscribers_at_least "$h" big 1 || it_die "subscribers on $h"
done
# Unchecked: a reload closes acl to uid 4242 and removes churn under them.
for h in "${HOSTS[@]}"; do
	soak_bg "acl-sub-$h" "$h" sub -g acl
done
soak_bg churn-sub-a a sub -g churn -g s1 --slow-ms 300 --slow-batch 20

# ---- long-lived publishers and the forger ----

LONG_PUBS=()
for h in "${HOSTS[@]}"; do
	soak_bg "pub-small-$h" "$h" pub -g s1 -g s2 --min-size 64 --max-size 4096 --rate 300 --batch 16 --seed 1
	LONG_PUBS+=("$IT_BG_PID")
	soak_bg "pub-mid-$h" "$h" pub -g s2 -g acl -g churn --min-size 1024 --max-size 65536 --rate 40 --seed 2
	LONG_PUBS+=("$IT_BG_PID")
	soak_bg "pub-big-$h" "$h" pub -g big --min-size 65536 --max-size 1048576 --rate 3 --seed 3
	LONG_PUBS+=("$IT_BG_PID")
done
it_bg forge "$NS_f" "$SOAK_FORGE" --port "$PORT" --rate "$FORGE_RATE" --kinds "$FORGE_KINDS" --stats "$W/stats/forge" \
	--addr 239.83.0.1 --addr 239.83.0.2 --addr 239.83.0.3 --addr 239.83.0.4 --addr 239.83.0.5 \
	--group s1 --group s2 --group big --group acl --group churn
FORGE_PID=$IT_BG_PID

T0=$(date +%s)
T_END=$((T0 + DURATION))
STOP=$W/stop
it_log "load started: ${DURATION}s; work dir $W"

# ---- samplers ----

# Every second: t,host,pid,rss_kb,fds (rss_kb "dead" once the daemon is gone).
(
	echo "t,host,pid,rss_kb,fds"
	while [ ! -e "$STOP.samplers" ]; do
		t=$(($(date +%s) - T0))
		for h in "${HOSTS[@]}"; do
			pid_var="PID_$h"
			p=${!pid_var}
			rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null)
			fds=$(find "/proc/$p/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
			echo "$t,$h,$p,${rss:-dead},$fds"
		done
		sleep 1 # the sampling period
	done
) >"$W/samples.csv" &
IT_PIDS+=("$!")

# Every 5 s: does each daemon answer `pubctl status` within 10 s?
(
	echo "t,host,ok,ms"
	while [ ! -e "$STOP.samplers" ]; do
		for h in "${HOSTS[@]}"; do
			s=$(date +%s%N)
			if timeout 10 "$PUBCTL" -s "$(it_sock "$h")" status >/dev/null 2>&1; then ok=1; else ok=0; fi
			echo "$(($(date +%s) - T0)),$h,$ok,$((($(date +%s%N) - s) / 1000000))"
		done
		sleep 5 # the probe period
	done
) >"$W/liveness.csv" &
IT_PIDS+=("$!")

# ---- reloads ----

RELOAD_EVERY=60
[ "$DURATION" -ge 300 ] || RELOAD_EVERY=$((DURATION / 5))
(
	v=0
	while [ ! -e "$STOP" ]; do
		for ((i = 0; i < RELOAD_EVERY; i++)); do
			[ -e "$STOP" ] && break 2
			sleep 1 # the reload period, a second at a time to stop promptly
		done
		v=$((1 - v))
		for h in "${HOSTS[@]}"; do
			before=$(it_counter "$h" reloads)
			write_conf "$h" "$v"
			if [ "$h" = a ]; then
				kill -HUP "$PID_a"
				res=sighup
			else
				res=$(it_ctl b reload 2>&1 && echo ok)
			fi
			if it_wait "reload of $h applied" 20 eval "[ \"\$(it_counter $h reloads)\" -gt \"$before\" ]" 2>/dev/null; then
				echo "$(($(date +%s) - T0)) $h variant $v applied ($res)"
			else
				echo "$(($(date +%s) - T0)) $h variant $v NOT APPLIED ($res)"
			fi
		done
	done
) >"$W/reloads.log" 2>&1 &
IT_PIDS+=("$!")

# ---- churn ----

# Every short-lived client runs under `timeout -s KILL`: the longest one
# cannot outlive 20 s, and the kill -9 cases are the same tool with a short
# deadline. Their pids go to churn.pids for the wind-down.
(
	n=0
	pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }
	while [ ! -e "$STOP" ]; do
		if [ "$(jobs -rp | wc -l)" -lt 10 ]; then
			h=$(pick a b)
			ns_var="NS_$h"
			ns=${!ns_var}
			sock=$(it_sock "$h")
			n=$((n + 1))
			case $((RANDOM % 9)) in
			0) # a short publisher, sometimes in batches
				ip netns exec "$ns" timeout -s KILL 20 "$SOAK_CLIENT" pub -s "$sock" -g "$(pick s1 s2 big acl churn)" \
					--count $((1 + RANDOM % 200)) --min-size 64 --max-size "$(pick 1024 65536 1048576)" \
					--batch "$(pick 0 8)" --rate "$(pick 0 200)" --seed "$n" ;;
			1) # a short subscriber
				ip netns exec "$ns" timeout -s KILL 20 "$SOAK_CLIENT" sub -s "$sock" -g "$(pick s1 s2 big)" \
					--seconds $((1 + RANDOM % 5)) ;;
			2) # a publisher killed with SIGKILL mid-stream
				ip netns exec "$ns" timeout -s KILL "0.$((2 + RANDOM % 8))" "$SOAK_CLIENT" pub -s "$sock" -g big -g s2 \
					--min-size 65536 --max-size 1048576 --seed "$n" ;;
			3) # a publisher of small batches killed mid-batch
				ip netns exec "$ns" timeout -s KILL "0.$((1 + RANDOM % 9))" "$SOAK_CLIENT" pub -s "$sock" -g s1 \
					--min-size 64 --max-size 512 --batch 32 --rate 2000 --seed "$n" ;;
			4) # a subscriber killed with SIGKILL while large deliveries are under way
				ip netns exec "$ns" timeout -s KILL "$((1 + RANDOM % 3)).$((RANDOM % 10))" "$SOAK_CLIENT" sub -s "$sock" \
					-g big -g s2 ;;
			5) # unsubscribe mid-delivery, then stay a while
				ip netns exec "$ns" timeout -s KILL 20 "$SOAK_CLIENT" sub -s "$sock" -g big -g s1 \
					--unsub-after-ms $((100 + RANDOM % 900)) --seconds 3 ;;
			6) # a slow subscriber that leaves with its queue full
				ip netns exec "$ns" timeout -s KILL 20 "$SOAK_CLIENT" sub -s "$sock" -g s1 -g big \
					--slow-ms 2000 --slow-batch 1 --seconds $((2 + RANDOM % 6)) ;;
			7) # pubctl, as a person would
				timeout -s KILL 20 "$PUBCTL" -s "$sock" pub "$(pick s1 s2 acl)" "churn $n" ;
				timeout -s KILL 20 "$PUBCTL" -s "$sock" sub "$(pick s1 s2)" --count 3 --timeout 2 ;;
			8) # the queries, under load and with many sources
				timeout -s KILL 20 "$PUBCTL" -s "$sock" "$(pick sources drops clients groups status)" ;;
			esac >/dev/null 2>&1 &
			echo "$!" >>"$W/churn.pids"
		fi
		sleep "0.$((2 + RANDOM % 6))" # pacing of the churn, not a synchronisation
	done
	wait
) >/dev/null 2>&1 &
CHURN_PID=$!
IT_PIDS+=("$CHURN_PID")

# ---- the run ----

DIED=()
daemons_alive() {
	local h pid_var
	for h in "${HOSTS[@]}"; do
		pid_var="PID_$h"
		if ! kill -0 "${!pid_var}" 2>/dev/null; then
			return 1
		fi
	done
}
last_report=$T0
while [ "$(date +%s)" -lt "$T_END" ]; do
	if ! daemons_alive; then
		for h in "${HOSTS[@]}"; do
			pid_var="PID_$h"
			kill -0 "${!pid_var}" 2>/dev/null || DIED+=("$h")
		done
		it_fail "pubd ${DIED[*]} died after $(($(date +%s) - T0))s of load"
		break
	fi
	if [ $(($(date +%s) - last_report)) -ge 60 ]; then
		last_report=$(date +%s)
		it_log "$((last_report - T0))s: $(tail -n 2 "$W/samples.csv" | tr '\n' ' ')"
	fi
	sleep 1 # the run's clock, not a synchronisation
done
T_LOAD_END=$(($(date +%s) - T0))

# ---- wind-down ----

it_log "load ends; winding down"
touch "$STOP"
kill -TERM "$CHURN_PID" 2>/dev/null
it_reap "$CHURN_PID" 30
# The churn's clients end within their timeout (20 s at most).
churn_alive() {
	local p
	while read -r p; do
		kill -0 "$p" 2>/dev/null && return 0
	done < <(tail -n 60 "$W/churn.pids") # at most 10 run at once, none for more than 20 s
	return 1
}
[ -f "$W/churn.pids" ] || : >"$W/churn.pids"
it_wait "the churn's clients end" 40 eval '! churn_alive' || it_fail "churn clients still running"
kill -TERM "$FORGE_PID" 2>/dev/null
it_reap "$FORGE_PID" 10
for p in "${LONG_PUBS[@]}"; do
	kill -TERM "$p" 2>/dev/null
done
for p in "${LONG_PUBS[@]}"; do
	it_reap "$p" 30
done

if [ ${#DIED[@]} = 0 ]; then
	# Steady: nothing queued or in reassembly, the message counters unchanged
	# for 2 s on both daemons, and past the reassembly timeout.
	snapshot() {
		local h
		for h in "${HOSTS[@]}"; do
			it_ctl "$h" --json status |
				jq -c '[.status[0] | .published, .received, .delivered, .dropped, .tx_queued, .reasm_inflight]'
		done
	}
	steady() {
		local a b
		a=$(snapshot) || return 1
		sleep 2 # the interval over which the counters must stay still
		b=$(snapshot) || return 1
		[ "$a" = "$b" ] && ! grep -qv ',0,0\]$' <<<"$b"
	}
	it_wait "counters steady, nothing queued or in reassembly" 120 steady ||
		it_log "not steady: $(snapshot | tr '\n' ' ')"
	# The checked subscribers read everything still coming to them.
	for n in "${!CHECKED_PID[@]}"; do
		kill -USR1 "${CHECKED_PID[$n]}" 2>/dev/null
	done
	drained() {
		local n
		for n in "${!CHECKED_PID[@]}"; do
			grep -q '^drained 1' "$W/stats/$n" 2>/dev/null || return 1
		done
	}
	it_wait "checked subscribers drained" 120 drained || it_fail "checked subscribers did not drain"
	for h in "${HOSTS[@]}"; do
		for q in status groups drops sources clients; do
			it_ctl "$h" --json "$q" >"$W/tables/$h-$q.json" 2>"$W/tables/$h-$q.err"
		done
		for g in "${CHECKED_GROUPS[@]}"; do
			it_ctl "$h" --json group "$g" >"$W/tables/$h-group-$g.json" 2>/dev/null
		done
	done
fi
# The checked subscribers' own tallies, final.
for n in "${!CHECKED_PID[@]}"; do
	kill -TERM "${CHECKED_PID[$n]}" 2>/dev/null
	it_reap "${CHECKED_PID[$n]}" 10
done
touch "$STOP.samplers"
STOPPED_OK=()
for h in "${HOSTS[@]}"; do
	if kill -0 "$(it_pid "$h")" 2>/dev/null; then
		fails_before=$IT_FAILS
		it_pubd_stop "$h"
		[ "$IT_FAILS" = "$fails_before" ] && STOPPED_OK+=("$h")
	fi
done

# ---- the checks and the summary ----

SUMMARY=$W/summary.txt
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
VERDICT=PASS
bad() {
	VERDICT=FAIL
	say "  FAIL: $*"
	it_fail "$*"
}
tbl() { # HOST TABLE: the saved JSON (empty object when missing)
	local f="$W/tables/$1-$2.json"
	if [ -s "$f" ]; then cat "$f"; else echo '{}'; fi
}

say "==== pubd soak: ${T_LOAD_END}s of load (asked ${DURATION}s), forger at ${FORGE_RATE}/s ($FORGE_KINDS)$([ "$KEEP_GROUPS" = 0 ] || echo ', no group removal') ===="
say "work dir: $W"
say "reloads: $(grep -c ' applied' "$W/reloads.log" 2>/dev/null) applied, $(grep -c 'NOT APPLIED' "$W/reloads.log" 2>/dev/null) not applied"
[ "$(grep -c 'NOT APPLIED' "$W/reloads.log" 2>/dev/null)" = 0 ] || bad "a reload was not applied (reloads.log)"
say "forged datagrams: $(tr '\n' ' ' <"$W/stats/forge" 2>/dev/null)"
say "churn clients started: $(wc -l <"$W/churn.pids")"

# Resources, per daemon: the first and last windows of the load.
WIN=300
[ "$T_LOAD_END" -ge 1500 ] || WIN=$((T_LOAD_END / 5))
[ "$WIN" -ge 1 ] || WIN=1
say ""
say "resources (window ${WIN}s: first = [0,${WIN}), second = [${WIN},$((2 * WIN))) the baseline, last = [$((T_LOAD_END - WIN)),${T_LOAD_END}))"
# judge MSG: a resource verdict, binding only with windows of 2 minutes or more.
judge() {
	if [ "$WIN" -ge 120 ]; then
		bad "$*"
	else
		say "  (not judged, windows under 2 minutes: $*)"
	fi
}
say "  host window    rss_min_MiB rss_max_MiB rss_mean_MiB   fds_min fds_max fds_mean"
for h in "${HOSTS[@]}"; do
	stats=$(awk -F, -v h="$h" -v w="$WIN" -v end="$T_LOAD_END" '
		$2 == h && $4 != "dead" && $1 ~ /^[0-9]+$/ {
			# A sample may fall in the second window and the last (short runs).
			for (i = 1; i <= 3; i++) {
				k = (i == 1) ? "f" : (i == 2) ? "s" : "l"
				if (i == 1 && $1 >= w) continue
				if (i == 2 && ($1 < w || $1 >= 2 * w)) continue
				if (i == 3 && ($1 < end - w || $1 >= end)) continue
				n[k]++; r = $4 / 1024; s[k] += r; fsum[k] += $5
				if (!(k in rmin) || r < rmin[k]) rmin[k] = r
				if (!(k in rmax) || r > rmax[k]) rmax[k] = r
				if (!(k in dmin) || $5 < dmin[k]) dmin[k] = $5
				if (!(k in dmax) || $5 > dmax[k]) dmax[k] = $5
			}
		}
		END {
			for (i = 1; i <= 3; i++) {
				k = (i == 1) ? "f" : (i == 2) ? "s" : "l"
				if (!n[k]) { printf "%s 0 0 0 0 0 0\n", k; continue }
				printf "%s %.1f %.1f %.1f %d %d %.1f\n", k, rmin[k], rmax[k], s[k] / n[k], dmin[k], dmax[k], fsum[k] / n[k]
			}
		}' "$W/samples.csv")
	read -r _ f_rmin f_rmax f_rmean f_dmin f_dmax f_dmean <<<"$(sed -n 1p <<<"$stats")"
	read -r _ s_rmin s_rmax s_rmean s_dmin s_dmax s_dmean <<<"$(sed -n 2p <<<"$stats")"
	read -r _ l_rmin l_rmax l_rmean l_dmin l_dmax l_dmean <<<"$(sed -n 3p <<<"$stats")"
	say "$(printf '  %-4s first  %11s %11s %12s   %7s %7s %8s' "$h" "$f_rmin" "$f_rmax" "$f_rmean" "$f_dmin" "$f_dmax" "$f_dmean")"
	say "$(printf '  %-4s second %11s %11s %12s   %7s %7s %8s' "$h" "$s_rmin" "$s_rmax" "$s_rmean" "$s_dmin" "$s_dmax" "$s_dmean")"
	say "$(printf '  %-4s last   %11s %11s %12s   %7s %7s %8s' "$h" "$l_rmin" "$l_rmax" "$l_rmean" "$l_dmin" "$l_dmax" "$l_dmean")"
	say "$(printf '  %-4s growth (last mean - second mean): RSS %+.1f MiB, fds %+.1f; warm-up (second - first): RSS %+.1f MiB' "$h" \
		"$(awk -v a="$l_rmean" -v b="$s_rmean" 'BEGIN { print a - b }')" \
		"$(awk -v a="$l_dmean" -v b="$s_dmean" 'BEGIN { print a - b }')" \
		"$(awk -v a="$s_rmean" -v b="$f_rmean" 'BEGIN { print a - b }')")"
	if awk -v l="$l_rmean" -v f="$s_rmax" 'BEGIN { exit !(l > f * 1.25 + 16) }'; then
		judge "$h: RSS grew: last window mean ${l_rmean} MiB > second window max ${s_rmax} MiB x 1.25 + 16 MiB"
	fi
	if [ "$l_dmin" -gt $((s_dmax + 8)) ]; then
		judge "$h: fds grew: last window min ${l_dmin} > second window max ${s_dmax} + 8"
	fi
done
probes_failed=$(awk -F, 'NR > 1 && $3 == 0' "$W/liveness.csv" | wc -l)
probe_max=$(awk -F, 'NR > 1 && $4 > m { m = $4 } END { print m + 0 }' "$W/liveness.csv")
say "  liveness: $(($(wc -l <"$W/liveness.csv") - 1)) probes, ${probes_failed} unanswered within 10 s, slowest ${probe_max} ms"
[ "$probes_failed" = 0 ] || bad "pubd did not answer pubctl status within 10 s ${probes_failed} times (see liveness.csv)"
for h in "${DIED[@]}"; do
	bad "pubd $h died during the load (log: $W/$h.log)"
done
for h in "${HOSTS[@]}"; do
	[[ " ${STOPPED_OK[*]} " == *" $h "* ]] || bad "pubd $h did not stop with status 0 on SIGTERM"
done

if [ ${#DIED[@]} = 0 ]; then
	say ""
	say "messages (status counters)"
	for h in "${HOSTS[@]}"; do
		say "$(tbl "$h" status | jq -r --arg h "$h" '
			def c(n): ([.counters[]? | select(.counter == n) | .value] | first) // 0;
			"  \($h): published \(c("published")), received \(c("received")), delivered \(c("delivered")), dropped \(c("dropped")); clients accepted \(c("clients_accepted")), reloads \(c("reloads")), rx_datagrams \(c("rx_datagrams")), rx_malformed \(c("rx_malformed")), rx_foreign_group \(c("rx_foreign_group"))"')"
		say "    sources kept: $(tbl "$h" sources | jq '.sources // [] | length')"
	done
	say ""
	say "drops by reason (message rows of scopes daemon, group, group-subscribers; datagram rows apart)"
	for h in "${HOSTS[@]}"; do
		say "$(tbl "$h" drops | jq -r --arg h "$h" '
			[.drops[]? | select(.scope == "daemon" or .scope == "group" or .scope == "group-subscribers")]
			| group_by(.reason) | map("\(.[0].reason)=\(map(.count) | add) \(.[0].unit)")
			| "  \($h): " + (if length == 0 then "none" else join(", ") end)')"
	done

	say ""
	say "identity 1: streams, published at X = at the other daemon (X's source, group): delivered + dropped"
	for x in "${HOSTS[@]}"; do
		for y in "${HOSTS[@]}"; do
			[ "$x" != "$y" ] || continue
			src=$(tbl "$x" status | jq -r '.status[0].source_id // empty')
			for g in "${CHECKED_GROUPS[@]}"; do
				pub=$(tbl "$x" groups | jq --arg g "$g" '[.groups[]? | select(.name == $g) | .published] | first // empty')
				row=$(tbl "$y" sources | jq -c --arg s "$src" --arg g "$g" \
					'[.sources[]? | select(.source == $s and .group == $g)] | first // empty')
				if [ -z "$pub" ] || [ -z "$row" ]; then
					cut=$(tbl "$y" sources | jq -r '[.more[]? | "\(.rows_not_shown) rows of \(.table) not shown"] | join(", ")')
					bad "$x->$y $g: no figures (published '${pub}', source row '${row}': the stream was forgotten?${cut:+ the reply said: $cut})"
					continue
				fi
				read -r del drp infl <<<"$(jq -r '"\(.delivered) \(.dropped) \(.inflight)"' <<<"$row")"
				line=$(printf '  %s->%s %-4s published %9d = delivered %9d + dropped %7d (in flight %d)' \
					"$x" "$y" "$g" "$pub" "$del" "$drp" "$infl")
				why=$(tbl "$y" drops | jq -r --arg n "$src/$g" \
					'[.drops[]? | select(.scope == "source" and .name == $n) | "\(.reason)=\(.count)"] | join(" ")')
				[ -z "$why" ] || line="$line [$why]"
				if [ "$pub" = $((del + drp)) ]; then
					say "$line ok"
				else
					say "$line MISMATCH by $((pub - del - drp))"
					bad "$x->$y $g: published $pub != delivered $del + dropped $drp"
				fi
			done
		done
	done

	say ""
	say "identity 2: checked subscribers, group published + received = delivered + dropped; client count = delivered"
	for n in $(printf '%s\n' "${!CHECKED_PID[@]}" | sort); do
		h=${n##*-}
		pid=${CHECKED_PID[$n]}
		for g in ${CHECKED_GROUPS_OF[$n]}; do
			in=$(tbl "$h" "group-$g" | jq '.group[0] // {} | (.published // 0) + (.received // 0)')
			row=$(tbl "$h" "group-$g" | jq -c --argjson p "$pid" '[.subscribers[]? | select(.pid == $p)] | first // empty')
			got=$(awk -v k="recv_$g" '$1 == k { print $2 }' "$W/stats/$n" 2>/dev/null)
			if [ -z "$row" ]; then
				bad "$n $g: no subscriber row for pid $pid (it was disconnected?)"
				continue
			fi
			read -r del drp q <<<"$(jq -r '"\(.delivered) \(.dropped) \(.queued)"' <<<"$row")"
			line=$(printf '  %-6s %-3s in %9d = delivered %9d + dropped %7d (queued %d); client got %s' \
				"$n" "$g" "$in" "$del" "$drp" "$q" "${got:-?}")
			ok=1
			if [ "$in" != $((del + drp)) ]; then
				ok=0
				bad "$n $g: published+received $in != delivered $del + dropped $drp"
			fi
			if [ "${got:-x}" != "$del" ]; then
				ok=0
				bad "$n $g: the client counted ${got:-nothing}, pubd says delivered $del"
			fi
			if [ "$ok" = 1 ]; then say "$line ok"; else say "$line MISMATCH"; fi
		done
		for k in bad errors reconnects; do
			v=$(awk -v k="$k" '$1 == k { print $2 }' "$W/stats/$n" 2>/dev/null)
			if [ "${v:-0}" != 0 ]; then
				bad "$n: $k = $v (a checked subscriber must see every message intact, no error, no reconnect)"
			fi
		done
	done

	say ""
	say "identity 3: status dropped = the drops table's message rows; no absurd counts"
	for h in "${HOSTS[@]}"; do
		total=$(tbl "$h" status | jq '.status[0].dropped // -1')
		rows=$(tbl "$h" drops | jq '[.drops[]? | select(.unit == "messages" and
			(.scope == "daemon" or .scope == "group" or .scope == "group-subscribers")) | .count] | add // 0')
		if [ "$total" = "$rows" ]; then
			say "  $h: dropped $total = drops table $rows ok"
		else
			say "  $h: dropped $total != drops table $rows (by $(jq -n "$total - $rows"))"
			! grep -q ': removed$' "$W/$h.log" ||
				say "    (groups were removed by reloads here: if their rows left the table, --keep-groups passes)"
			bad "$h: status dropped $total != sum of the drops table's message rows $rows"
		fi
		absurd=$(tbl "$h" drops | jq -r '[.drops[]? | select(.count > 1000000000000)] | select(length > 0)
			| "\(length) rows, reasons \(map(.reason) | unique | join(",")), largest \(max_by(.count) | "\(.scope) \(.name) \(.count)")"')
		[ -z "$absurd" ] || bad "$h: drop counts above 10^12 (a peer's values made them absurd): $absurd"
		ctr=$(tbl "$h" status | jq '[.counters[]? | select(.counter == "rx_malformed") | .value] | first // -1')
		rows=$(tbl "$h" drops | jq '[.drops[]? | select(.reason == "malformed" and
			(.scope == "daemon" or .scope == "group")) | .count] | add // 0')
		if [ "$ctr" = "$rows" ]; then
			say "  $h: rx_malformed $ctr = malformed rows (daemon, group) $rows ok"
		else
			say "  $h: rx_malformed $ctr != malformed rows $rows (by $((ctr - rows)))"
			bad "$h: counter rx_malformed $ctr != the drops table's malformed rows $rows"
		fi
		[ ! -s "$W/tables/$h-drops.err" ] || bad "$h: pubctl drops failed: $(head -c 300 "$W/tables/$h-drops.err")"
		[ ! -s "$W/tables/$h-sources.err" ] || bad "$h: pubctl sources failed: $(head -c 300 "$W/tables/$h-sources.err")"
	done
fi

say ""
say "samples: $W/samples.csv   summary: $SUMMARY"
say "RESULT: $VERDICT"
if [ -n "$OUT" ]; then
	mkdir -p "$OUT" && cp -r "$SUMMARY" "$W/samples.csv" "$W/liveness.csv" "$W/reloads.log" "$W/tables" "$OUT/"
fi
it_finish
exit
}
