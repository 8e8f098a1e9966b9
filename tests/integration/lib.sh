# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Sourced by every test of the host integration tier (tests/integration/*.sh).
#
# A test calls it_setup NAME, builds hosts with it_hosts (network namespaces
# on a bridge) or it_host_lo (one namespace with only lo), starts daemons
# with it_pubd_start, checks with it_check / it_wait, and ends with
# it_finish. Everything it creates (namespaces, processes, files) is torn
# down by the EXIT trap, also when a check fails or the test is interrupted.
#
# Where the programs are: $PUBD, $PUBCTL, $ITEST_CLIENT, or BUILD=<cmake
# build dir> (ctest sets all of them).
#
# No sleeps as synchronisation: it_wait polls a condition until a deadline.
# Timing constants are deadlines (how long before calling it a failure), never
# how long something is expected to take.

set -uo pipefail

BUILD=${BUILD:-}
PUBD=${PUBD:-${BUILD:+$BUILD/daemon/pubd}}
PUBCTL=${PUBCTL:-${BUILD:+$BUILD/cli/pubctl}}
ITEST_CLIENT=${ITEST_CLIENT:-${BUILD:+$BUILD/tests/integration/itest_client}}
PUB_SMOKE=${PUB_SMOKE:-${BUILD:+$BUILD/libpub/pub_smoke}}
# Where a test leaves output worth keeping (the loss run's pubctl tables).
IT_ARTIFACTS=${IT_ARTIFACTS:-${BUILD:+$BUILD/tests/integration}}
# The whole test's deadline (seconds); ctest's TIMEOUT is set above it so
# our own teardown runs first.
IT_LIMIT=${IT_LIMIT:-240}

# Sanitizer builds: any report fails the test (the process aborts, its exit
# status says so, and it_finish also scans the daemons' logs). Harmless in
# other builds.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1:${UBSAN_OPTIONS:-}"

IT_FAILS=0
IT_PIDS=()     # background processes: killed at teardown
IT_NETNS=()    # namespaces: deleted at teardown
IT_DAEMONS=()  # daemon names
IT_WATCHDOG=

it_log() {
	printf '%s [%s] %s\n' "$(date +%T.%3N)" "${IT_NAME:-it}" "$*" >&2
}

it_fail() {
	IT_FAILS=$((IT_FAILS + 1))
	printf 'FAIL [%s] %s\n' "${IT_NAME:-it}" "$*" >&2
}

it_pass() {
	printf 'ok   [%s] %s\n' "${IT_NAME:-it}" "$*" >&2
}

# it_die MSG: a failure the test cannot go on from.
it_die() {
	it_fail "$*"
	exit 1
}

# it_check DESC CMD...: record a failure (and go on) unless CMD succeeds.
it_check() {
	local desc=$1
	shift
	if "$@"; then
		it_pass "$desc"
	else
		it_fail "$desc (failed: $*)"
		return 1
	fi
}

# it_eq DESC GOT WANT
it_eq() {
	if [ "$2" == "$3" ]; then
		it_pass "$1 ($2)"
	else
		it_fail "$1: got '$2', want '$3'"
		return 1
	fi
}

# it_wait DESC SECONDS CMD...: poll CMD until it succeeds; fail after SECONDS.
it_wait() {
	local desc=$1 secs=$2 end
	shift 2
	end=$(($(date +%s%N) + secs * 1000000000))
	while ! "$@" >/dev/null 2>&1; do
		if [ "$(date +%s%N)" -ge "$end" ]; then
			it_fail "timed out after ${secs}s waiting for: $desc"
			return 1
		fi
		sleep 0.05 # poll interval, not a synchronisation
	done
	return 0
}

# A condition for it_wait, in one string evaluated afresh on every try:
# it_wait DESC SECS it_holds '[ "$(it_group_val h r received)" -ge 2 ]'
# ("test "$(...)"" among it_wait's own words is expanded once, before the
# first try, and then waits out its whole time).
it_holds() { eval "$1"; }

it_require() {
	local t
	[ "$(id -u)" = 0 ] || it_die "needs root (network namespaces, nftables)"
	for t in ip jq sha256sum timeout; do
		command -v "$t" >/dev/null || it_die "needs $t (packages: iproute2 jq coreutils)"
	done
	for t in "$PUBD" "$PUBCTL" "$ITEST_CLIENT"; do
		if [ -z "$t" ] || [ ! -x "$t" ]; then
			it_die "program not found: '$t' (set BUILD=<cmake build dir>)"
		fi
	done
}

# Namespaces of runs that died without their teardown (SIGKILL): their
# names carry the pid of the test that made them.
it_reap_stale() {
	local ns pid
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^pit-' || true); do
		pid=${ns#pit-}
		pid=${pid%%-*}
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
			ip netns del "$ns" 2>/dev/null || true
		fi
	done
}

it_setup() {
	IT_NAME=$1
	it_require
	it_reap_stale
	IT_ID=$$
	IT_WORK=$(mktemp -d "/tmp/pubd-it-$IT_NAME.XXXXXX")
	trap it_teardown EXIT
	trap 'it_fail "interrupted (signal)"; exit 1' INT TERM
	# Our own deadline, below ctest's, so the teardown always runs.
	(
		exec >/dev/null 2>&1
		sleep "$IT_LIMIT" # a watchdog, not a synchronisation
		kill -TERM $$
	) &
	IT_WATCHDOG=$!
	it_log "work dir $IT_WORK; pubd $PUBD"
}

it_teardown() {
	local rc=$? p ns n
	trap - EXIT INT TERM
	[ -n "$IT_WATCHDOG" ] && kill "$IT_WATCHDOG" 2>/dev/null
	for p in "${IT_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${IT_PIDS[@]}"; do
		it_reap "$p" 5
	done
	for ns in "${IT_NETNS[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if [ "$rc" != 0 ] || [ "$IT_FAILS" != 0 ]; then
		for n in "${IT_DAEMONS[@]}"; do
			echo "---- last lines of pubd $n's log ($IT_WORK/$n.log) ----" >&2
			tail -n 40 "$IT_WORK/$n.log" >&2 2>/dev/null
		done
		echo "FAILED [$IT_NAME]: $IT_FAILS check(s); files kept in $IT_WORK" >&2
		[ "$rc" != 0 ] || rc=1
	else
		[ "${IT_KEEP:-0}" = 1 ] || rm -rf "$IT_WORK"
		echo "PASSED [$IT_NAME]" >&2
	fi
	exit "$rc"
}

# it_reap PID SECONDS: wait for a child process to end (bounded); sets
# IT_STATUS to its exit status. Kills it when the deadline passes (status
# 137 then). Not in $(...): a subshell cannot wait for our children.
it_reap() {
	local pid=$1 secs=$2 end
	end=$(($(date +%s%N) + secs * 1000000000))
	while kill -0 "$pid" 2>/dev/null && [ "$(date +%s%N)" -lt "$end" ]; do
		# Our own child: reaped by wait; a zombie still answers kill -0.
		if [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = Z ]; then
			break
		fi
		sleep 0.05 # poll interval
	done
	if kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" != Z ]; then
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	IT_STATUS=$?
}

# it_bg NAME NS CMD...: run CMD in namespace NS (or "-" for none) in the
# background, output to $IT_WORK/NAME.out; sets IT_BG_PID.
it_bg() {
	local name=$1 ns=$2
	shift 2
	if [ "$ns" = - ]; then
		"$@" >"$IT_WORK/$name.out" 2>&1 &
	else
		ip netns exec "$ns" "$@" >"$IT_WORK/$name.out" 2>&1 &
	fi
	IT_BG_PID=$!
	IT_PIDS+=("$IT_BG_PID")
}

# ---- hosts ----

it_ns() { echo "pit-$IT_ID-$1"; }

it_host_lo() { # NAME: a namespace with only lo, up
	local ns
	ns=$(it_ns "$1")
	ip netns add "$ns" || it_die "ip netns add $ns"
	IT_NETNS+=("$ns")
	ip -n "$ns" link set lo up
}

# it_hosts SUBNET NAME...: one namespace per host, each with eth0 on one
# bridge (in a namespace of its own) and address 10.SUBNET.0.<i>/24, plus
# lo; multicast routed to eth0. Sets IT_ADDR_<NAME>.
it_hosts() {
	local subnet=$1 sw i=0 h ns
	shift
	sw=$(it_ns sw)
	ip netns add "$sw" || it_die "ip netns add $sw"
	IT_NETNS+=("$sw")
	ip -n "$sw" link add br0 type bridge || it_die "bridge"
	# No IGMP snooping: the bridge floods multicast to every port, so
	# delivery does not hang on a querier the test does not run.
	ip -n "$sw" link set br0 type bridge mcast_snooping 0
	ip -n "$sw" link set br0 up
	for h in "$@"; do
		i=$((i + 1))
		ns=$(it_ns "$h")
		ip netns add "$ns" || it_die "ip netns add $ns"
		IT_NETNS+=("$ns")
		ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$ns" || it_die "veth for $h"
		ip -n "$sw" link set "p$i" master br0 up
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 up
		ip -n "$ns" addr add "10.$subnet.0.$i/24" dev eth0
		ip -n "$ns" route add 224.0.0.0/4 dev eth0
		printf -v "IT_ADDR_$h" '%s' "10.$subnet.0.$i"
	done
}

# ---- pubd ----

it_sock() { echo "$IT_WORK/$1.sock"; }
it_conf() { echo "$IT_WORK/$1.yaml"; }

# it_conf_write NAME ADDRESS [extra fabric/limits lines via stdin as YAML
# sections]: writes $IT_WORK/NAME.yaml with daemon and fabric sections,
# then whatever comes on stdin (limits:, groups:).
it_conf_write() {
	local name=$1 addr=$2
	{
		echo "daemon:"
		echo "  socket: $(it_sock "$name")"
		echo "  log_level: ${IT_LOG_LEVEL:-info}"
		echo "fabric:"
		echo "  type: udp"
		[ "$addr" = - ] || echo "  address: $addr"
		echo "  udp_port: ${IT_PORT:-7470}"
		cat
	} >"$(it_conf "$name")"
}

# it_pubd_start NAME NS [CONFIG]: start pubd in namespace NS, wait until it
# answers pubctl status and every group is joined.
it_pubd_start() {
	local name=$1 ns=$2 conf=${3:-$(it_conf "$1")} pid
	ip netns exec "$ns" "$PUBD" -c "$conf" >>"$IT_WORK/$name.log" 2>&1 &
	pid=$!
	IT_PIDS+=("$pid")
	printf -v "IT_PID_$name" '%s' "$pid"
	[[ " ${IT_DAEMONS[*]} " == *" $name "* ]] || IT_DAEMONS+=("$name")
	it_wait "pubd $name answers" 30 it_ctl "$name" status || return 1
	it_wait "pubd $name joined its groups" 30 it_all_joined "$name" || return 1
	it_log "pubd $name up (pid $pid) in $ns"
}

it_pid() { local v="IT_PID_$1"; echo "${!v}"; }

it_all_joined() {
	[ "$(it_q "$1" groups '[.groups[] | select(.joined != 1)] | length')" = 0 ]
}

# it_pubd_stop NAME: SIGTERM; the daemon must exit 0 (sanitizers: no leak).
it_pubd_stop() {
	local name=$1 pid
	pid=$(it_pid "$name")
	kill -TERM "$pid" 2>/dev/null
	it_reap "$pid" 30
	it_eq "pubd $name stops on SIGTERM with status 0" "$IT_STATUS" 0
}

# it_ctl NAME ARGS...: pubctl against daemon NAME.
it_ctl() {
	local name=$1
	shift
	"$PUBCTL" -s "$(it_sock "$name")" "$@"
}

# it_q NAME QUERY [ARG] JQ: one value from pubctl --json.
it_q() {
	local name=$1 jq_expr=${*: -1}
	local args=("${@:2:$#-2}")
	it_ctl "$name" --json "${args[@]}" | jq -r "$jq_expr"
}

# it_counter NAME COUNTER: a counter of `pubctl status`.
it_counter() {
	it_q "$1" status ".counters[] | select(.counter == \"$2\") | .value"
}

# it_group_val NAME GROUP COLUMN: a column of `pubctl groups` for one group.
it_group_val() {
	it_q "$1" groups ".groups[] | select(.name == \"$2\") | .$3"
}

# it_counter_is NAME COUNTER VALUE (for it_wait: re-evaluated on each poll)
it_counter_is() {
	[ "$(it_counter "$1" "$2")" = "$3" ]
}

# it_group_absent NAME GROUP (for it_wait)
it_group_absent() {
	[ -z "$(it_group_val "$1" "$2" name)" ]
}

# it_group_is NAME GROUP COLUMN VALUE (for it_wait)
it_group_is() {
	[ "$(it_group_val "$1" "$2" "$3")" = "$4" ]
}

# it_subscribers_at_least NAME GROUP N
it_subscribers_at_least() {
	local v
	v=$(it_group_val "$1" "$2" subscribers)
	[ -n "$v" ] && [ "$v" -ge "$3" ]
}

# it_lines FILE PATTERN: how many lines of FILE match PATTERN (0 if none).
it_lines() {
	grep -c -- "$2" "$1" 2>/dev/null || true
}

it_lines_at_least() { # FILE PATTERN N
	[ "$(it_lines "$1" "$2")" -ge "$3" ]
}

# it_finish: stop the daemons (each must exit 0) and look for sanitizer
# reports in their logs.
it_finish() {
	local n
	for n in "${IT_DAEMONS[@]}"; do
		if kill -0 "$(it_pid "$n")" 2>/dev/null; then
			it_pubd_stop "$n"
		fi
	done
	for n in "$IT_WORK"/*.log "$IT_WORK"/*.out; do
		[ -f "$n" ] || continue
		if grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$n"; then
			it_fail "sanitizer report in $n:"
			grep -E -A20 'AddressSanitizer|LeakSanitizer|runtime error:' "$n" | head -40 >&2
		fi
	done
	[ "$IT_FAILS" = 0 ]
}
