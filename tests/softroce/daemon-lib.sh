# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the daemon-level Soft-RoCE cases (tests/softroce/cases/[3-7]*):
# pubd daemons on rxa/rxb started from a config, queried through sr_query
# (or pubctl for the text tables), and stopped at the end. Sourced after lib.sh, inside the guest.
#
#   dl_init                          work dir $W (guest tmpfs), teardown trap
#   dl_need PROGRAM...               fail and end the case unless each is built ($ITEST: itest_client)
#   dl_conf NAME ADDRESS <YAML       $W/NAME.yaml: a verbs daemon on ADDRESS, the rest from stdin
#   dl_pubd NAME CONFIG_FILE         start pubd; socket $W/NAME.sock, log in the results dir
#   dl_conf_ab <YAML                 the same for A (rxa) and B (rxb)
#   dl_start_ab                      start A and B from $W/A.yaml, $W/B.yaml; wait until ready; SRC_A, SRC_B
#   dl_expect WHAT GOT WANT          PASS when GOT is WANT, else FAIL
#   dl_ready NAME SECS               wait until NAME answers and every group is joined
#   dl_ctl NAME ARGS...              pubctl -s $W/NAME.sock ARGS...
#   dl_sq NAME QUERY EXPR...         sr_query (tests/softroce/sr_query.c): one line per EXPR
#   dl_fab NAME KEY                  a row of NAME's `pubctl status` fabric table
#   dl_ctr NAME COUNTER              a row of NAME's `pubctl status` counters table
#   dl_kv NAME fabric|counters KEY...  "KEY VALUE, ..." from one status query
#   dl_wait SECS CMD...              poll CMD until it succeeds (deadline, not a sleep)
#   dl_gone PID                      the process has ended (for dl_wait)
#   dl_stop [NAME...]                SIGTERM the daemons (default: every one), check each exits 0
# Under TCG every exec over 9p costs most of a second: polls make one
# sr_query call and test its output with shell builtins.
# Every wait is a poll of a condition with a deadline.

PUBD=$BUILD/daemon/pubd
PUBCTL=$BUILD/cli/pubctl
SR_QUERY=$BUILD/tests/softroce/sr_query
ITEST=$BUILD/tests/integration/itest_client
DL_CASE=$(basename "${BASH_SOURCE[1]:-$0}" .sh)
# This run of it (a case runs once per libpub transport asked for).
DL_RUN=$DL_CASE${PUBD_TRANSPORT:+@$PUBD_TRANSPORT}
DL_FAILS=0
declare -A DL_PID=()
DL_BG=()

# lib.sh's fail(), counted: the teardown shows the daemons' logs when anything failed.
fail() {
	DL_FAILS=$((DL_FAILS + 1))
	echo "FAIL $DL_CASE: $*"
}
pass() { echo "PASS $DL_CASE: $*"; }

dl_init() {
	# Per transport too: a case run twice in one boot shares nothing.
	W=/tmp/$DL_CASE${PUBD_TRANSPORT:+-$PUBD_TRANSPORT}
	rm -rf "$W"
	mkdir -p "$W"
	DL_LOGS=${PUBD_RESULTS:-$W}
	trap dl_teardown EXIT
	dl_need "$PUBD" "$PUBCTL" "$SR_QUERY"
	# dl_wait's poll interval: read -t on a FIFO nobody writes (a builtin,
	# where /usr/bin/sleep would be one more exec per poll).
	mkfifo "$W/.tick" && exec {DL_TICK}<>"$W/.tick"
}

# dl_need PROGRAM...: each is built, else the case fails here and ends.
dl_need() {
	local p
	for p; do
		[ -x "$p" ] || { fail "not built: $p"; exit 0; }
	done
}

dl_log() { printf -- '-- %(%T)T [%ss] %s\n' -1 "$SECONDS" "$*"; }

dl_pubd() {
	local name=$1 conf=$2
	"$PUBD" -c "$conf" {DL_TICK}>&- 2>"$DL_LOGS/$DL_RUN-$name.pubd.log" &
	DL_PID[$name]=$!
	dl_log "pubd $name pid ${DL_PID[$name]} config $conf"
}

# dl_conf NAME ADDRESS: write $W/NAME.yaml for a verbs daemon on ADDRESS
# (socket $W/NAME.sock); stdin follows its fabric section (more fabric keys,
# indented, then limits:, groups:).
dl_conf() {
	{
		printf 'daemon:\n  socket: %s\nfabric:\n  type: verbs\n  address: %s\n' "$W/$1.sock" "$2"
		cat
	} >"$W/$1.yaml"
}

# dl_conf_ab: dl_conf for A (rxa, 192.168.77.1) and B (rxb, 192.168.77.2)
# with the same YAML from stdin.
dl_conf_ab() {
	local body
	body=$(cat)
	dl_conf A 192.168.77.1 <<<"$body"
	dl_conf B 192.168.77.2 <<<"$body"
}

# dl_expect WHAT GOT WANT: PASS when GOT is WANT.
dl_expect() {
	if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: got '$2', want '$3'"; fi
}

# dl_start_ab: start A (on rxa) and B (on rxb) from $W/A.yaml and $W/B.yaml
# and wait until both are ready (ends the case when one is not); their
# source ids in SRC_A and SRC_B.
dl_start_ab() {
	dl_pubd A "$W/A.yaml"
	dl_pubd B "$W/B.yaml"
	dl_ready A 60 && dl_ready B 60 || exit 0
	# shellcheck disable=SC2034 # for the cases
	{
		SRC_A=$(dl_sq A status status.source_id)
		SRC_B=$(dl_sq B status status.source_id)
	}
}

dl_ctl() {
	local name=$1
	shift
	"$PUBCTL" -s "$W/$name.sock" "$@"
}
dl_sq() {
	local name=$1
	shift
	"$SR_QUERY" "$W/$name.sock" "$@"
}
dl_fab() { dl_sq "$1" status "fabric.value[key=$2]"; }
dl_ctr() { dl_sq "$1" status "counters.value[counter=$2]"; }

dl_kv() {
	local name=$1 table=$2 col=key k i=0 out= vals
	shift 2
	[ "$table" = counters ] && col=counter
	local exprs=()
	for k in "$@"; do
		exprs+=("$table.value[$col=$k]")
	done
	mapfile -t vals <<<"$(dl_sq "$name" status "${exprs[@]}")"
	for k in "$@"; do
		out+="${out:+, }$k ${vals[$i]}"
		i=$((i + 1))
	done
	echo "$out"
}

# dl_stream NAME SOURCE GROUP: "inflight missing delivered dropped" from that
# row of NAME's `pubctl sources` (empty when there is no such row).
dl_stream() {
	local f="source=$2,group=$3" v
	v=$(dl_sq "$1" sources "sources.inflight[$f]" "sources.missing[$f]" "sources.delivered[$f]" "sources.dropped[$f]") || return 1
	v=${v//$'\n'/ }
	[ "$v" = "   " ] && v=
	echo "$v"
}

# dl_drops NAME SOURCE/GROUP: "SUM reason=count,..." of NAME's source-scope
# message drops for that stream (`pubctl drops`), "0 none" when there are none.
dl_drops() {
	local f="scope=source,name=$2,unit=messages" sum reasons counts out= i
	{
		read -r sum
		read -r -a reasons
		read -r -a counts
	} <<<"$(dl_sq "$1" drops "+drops.count[$f]" "drops.reason[$f]" "drops.count[$f]")"
	for i in "${!reasons[@]}"; do
		out+="${out:+,}${reasons[$i]}=${counts[$i]}"
	done
	echo "${sum:-?} ${out:-none}"
}

dl_wait() {
	local end=$((SECONDS + $1))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		read -r -t 0.1 -u "$DL_TICK" # poll interval, not a synchronisation
	done
	return 0 # (the loop's status is the last read's timeout)
}

dl_all_joined() {
	local v
	v=$(dl_sq "$1" groups groups.joined) || return 1
	[ -n "$v" ] && [[ " $v " != *" 0 "* ]]
}

dl_ready() {
	local name=$1 secs=$2 v
	if dl_wait "$secs" dl_all_joined "$name"; then
		v=$(dl_sq "$name" status status.fabric 'fabric.value[key=device]' status.mtu)
		v=${v//$'\n'/ }
		pass "pubd $name up, every group joined (fabric, device, mtu: $v)"
		return 0
	fi
	fail "pubd $name not ready (all groups joined) within ${secs}s"
	tail -n 20 "$DL_LOGS/$DL_RUN-$name.pubd.log"
	return 1
}

# dl_gone PID: the process has ended (for dl_wait).
dl_gone() { ! kill -0 "$1" 2>/dev/null; }

# dl_subs NAME GROUP N: the group has N local subscribers.
dl_subs() { [ "$(dl_sq "$1" groups "groups.subscribers[name=$2]")" = "$3" ]; }

dl_stop() {
	local name rc names=("$@")
	[ $# -gt 0 ] || names=("${!DL_PID[@]}")
	for name in "${names[@]}"; do
		kill -TERM "${DL_PID[$name]}" 2>/dev/null
	done
	for name in "${names[@]}"; do
		wait "${DL_PID[$name]}"
		rc=$?
		if [ $rc -eq 0 ]; then
			pass "pubd $name stopped cleanly"
		else
			fail "pubd $name exited with status $rc"
		fi
		unset "DL_PID[$name]"
	done
}

dl_teardown() {
	local p name
	for p in "${DL_BG[@]}"; do
		kill "$p" 2>/dev/null
	done
	# `dl_ctl ... &` puts a subshell in DL_BG (or a case's own pid list):
	# killing it leaves its pubctl running, reconnecting for ever. Every
	# pubctl on this case's sockets goes too.
	pkill -TERM -f -- "$PUBCTL -s $W/" 2>/dev/null
	for name in "${!DL_PID[@]}"; do
		kill -TERM "${DL_PID[$name]}" 2>/dev/null
		wait "${DL_PID[$name]}" 2>/dev/null
	done
	if [ "$DL_FAILS" -gt 0 ]; then
		for f in "$DL_LOGS/$DL_RUN"-*.pubd.log; do
			[ -f "$f" ] || continue
			echo "---- $f (tail)"
			tail -n 40 "$f"
		done
	fi
}
