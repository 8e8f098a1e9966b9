#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The loss repair benchmark (issue 13): delivered messages/s on a repair
# group with 1% loss on the path, against the same traffic on a group with
# no loss and no repair, 1 KiB and 64 KiB messages, side by side in one run.
# Two repair groups: one with the defaults, one with nak_backoff_ms: 0. The
# default random back-off before a NAK (up to 60 ms, RFC 5401's, there to
# let one multicast NAK stand for many) buys nothing when NAKs are unicast,
# and at 1 KiB it holds a gap open for thousands of messages, all held
# back for in-order delivery and released in bursts (README, Tests: Benchmarks).
# Two daemons: A publishes (bench_tput pub), B subscribes (bench_tput sub,
# which checks every message whole, its index and order). Target: >= 0.85x,
# with every message delivered.
#
#   tests/bench/repair-bench.sh --host [--quick]
#       udp fabric, A and B in two network namespaces joined by a veth pair
#       (root); the loss an nftables rule in B's namespace on the group's
#       multicast datagrams (numgen random mod 100 < 1).
#   tests/bench/repair-bench.sh --verbs [--quick]
#       inside the Soft-RoCE VM (vm-bench.sh runs it): A on rxa, B on rxb,
#       the loss an nftables rule on RoCE v2 (UDP 4791) arriving on vb.
#
# Prints a table and one JSON line per figure (bench "repair") to stdout and,
# with REPAIR_JSONL set, to that file. Exit 0 when every run completed and
# every message of the repair runs arrived intact and in order; 1 otherwise.
# BUILD: the build dir (default <repo>/build-bench).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$repo/build-bench}
PUBD=$BUILD/daemon/pubd
PUBCTL=$BUILD/cli/pubctl
TPUT=$BUILD/tests/bench/bench_tput
mode=
quick=0
for a in "$@"; do
	case $a in
	--host) mode=host ;;
	--verbs) mode=verbs ;;
	--quick) quick=1 ;;
	*) echo "repair-bench: unknown argument $a" >&2; exit 2 ;;
	esac
done
[ -n "$mode" ] || { echo "usage: repair-bench.sh --host|--verbs [--quick]" >&2; exit 2; }
for p in "$PUBD" "$PUBCTL" "$TPUT"; do
	[ -x "$p" ] || { echo "repair-bench: not built: $p" >&2; exit 1; }
done
command -v nft >/dev/null || { echo "repair-bench: needs nft (nftables)" >&2; exit 1; }

if [ $mode = host ]; then
	N1K=${REPAIR_1K_COUNT:-200000} N64K=${REPAIR_64K_COUNT:-4000}
	[ $quick = 1 ] && N1K=20000 N64K=400
else
	N1K=${REPAIR_1K_COUNT:-20000} N64K=${REPAIR_64K_COUNT:-400}
	[ $quick = 1 ] && N1K=5000 N64K=100
fi
LOSS=1
# Both groups paced (groups[].rate, publishers held back) at a rate B takes
# without loss of its own: unpaced, A overruns B (the baseline loses
# messages on the udp fabric's socket buffer), and what repair costs would
# drown in what overload costs. The figure is then what repair keeps of
# that rate.
if [ $mode = host ]; then RATE=${REPAIR_RATE:-48MiB}; else RATE=${REPAIR_RATE:-6MiB}; fi
work=$(mktemp -d /tmp/pubd-repairbench-XXXXXX)
NS_A= NS_B= PORT=$((20000 + RANDOM % 20000)) T=pubd_repair_bench_$$
pids=()
failed=0

cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ $mode = host ]; then
		[ -z "$NS_A" ] || ip netns del "$NS_A" 2>/dev/null
		[ -z "$NS_B" ] || ip netns del "$NS_B" 2>/dev/null
	else
		nft delete table inet $T 2>/dev/null
	fi
	[ -n "${REPAIR_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# on A|B CMD...: run CMD where that daemon's clients run.
on() {
	local ns=NS_$1
	shift
	if [ $mode = host ]; then ip netns exec "${!ns}" "$@"; else "$@"; fi
}
nft_b() { if [ $mode = host ]; then ip netns exec "$NS_B" nft "$@"; else nft "$@"; fi; }

if [ $mode = host ]; then
	NS_A=prb-$$-a NS_B=prb-$$-b
	ip netns add "$NS_A" && ip netns add "$NS_B" &&
		ip -n "$NS_A" link add eth0 type veth peer name eth0 netns "$NS_B" || exit 1
	i=1
	for ns in "$NS_A" "$NS_B"; do
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 up
		ip -n "$ns" addr add "10.213.0.$i/24" dev eth0
		ip -n "$ns" route add 224.0.0.0/4 dev eth0
		i=$((i + 1))
	done
	fab_a="  type: udp
  address: 10.213.0.1
  udp_port: $PORT"
	fab_b="  type: udp
  address: 10.213.0.2
  udp_port: $PORT"
	G=239.213.0
	match="udp dport $PORT"
else
	fab_a="  type: verbs
  address: 192.168.77.1
  srq_depth: 16384
  srq_low_watermark: 4096"
	fab_b="  type: verbs
  address: 192.168.77.2
  srq_depth: 16384
  srq_low_watermark: 4096"
	G=239.77.97
	match="iifname vb udp dport 4791"
fi

# The same configuration on both: "plain" without repair, "rep" with it.
conf() { # NAME FABRIC
	cat >"$work/$1.yaml" <<YAML
daemon:
  socket: $work/$1.sock
  log_level: notice
fabric:
$2
limits:
  max_message_size: 1MiB
  reassembly_budget: 256MiB
  reassembly_inflight: 4096
  subscriber_queue: 65536
  subscriber_queue_bytes: 256MiB
groups:
  - {name: plain, address: $G.1, rate: $RATE}
  - {name: rep, address: $G.2, rate: $RATE, repair: {window: 256MiB, max_age_ms: 30000, nak_retries: 20}}
  - {name: rep0, address: $G.3, rate: $RATE, repair: {window: 256MiB, max_age_ms: 30000, nak_retries: 20, nak_backoff_ms: 0}}
YAML
}
conf a "$fab_a"
conf b "$fab_b"
on A "$PUBD" -c "$work/a.yaml" >"$work/pubd-a.log" 2>&1 &
pids+=($!)
on B "$PUBD" -c "$work/b.yaml" >"$work/pubd-b.log" 2>&1 &
pids+=($!)
joined() { # NAME
	local out
	out=$(on "${1^^}" "$PUBCTL" -s "$work/$1.sock" --json groups 2>/dev/null) || return 1
	echo "$out" | grep -q '"joined":1' && ! echo "$out" | grep -q '"joined":0'
}
for ((i = 0; i < 600; i++)); do
	joined a && joined b && break
	sleep 0.1
done
joined a && joined b || {
	echo "repair-bench: daemons not up with every group joined in 60 s" >&2
	tail -n 20 "$work"/pubd-*.log >&2
	exit 1
}

nft_b add table inet $T && nft_b add chain inet $T in '{ type filter hook input priority 0; }' || exit 1
# loss PERCENT: drop that share of the rep group's multicast datagrams at B (0: none).
loss() {
	nft_b flush chain inet $T in || return 1
	[ "$1" = 0 ] || nft_b add rule inet $T in $match ip daddr "{ $G.2, $G.3 }" numgen random mod 100 '<' "$1" counter drop
}
nft_dropped() { nft_b list chain inet $T in | sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | head -n1; }

# jget FILE KEY: a number from the JSON line of FILE.
jget() { grep '^{' "$1" | tail -n1 | sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p"; }
# src GROUP FIELD: B's sources row for A on GROUP (JSON).
src() {
	on B "$PUBCTL" -s "$work/b.sock" --json sources 2>/dev/null |
		tr '{' '\n' | grep "\"group\":\"$1\"" | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" | head -n1
}

# run TAG GROUP SIZE COUNT: one bench_tput run; its sub figures in $work/TAG-sub.log.
run() {
	local sub=$work/$1-sub.log pub=$work/$1-pub.log spid i
	on B "$TPUT" sub -s "$work/b.sock" -g "$2" --size "$3" --count "$4" --idle-ms 10000 >"$sub" 2>&1 &
	spid=$!
	pids+=("$spid")
	for ((i = 0; i < 300; i++)); do
		grep -q READY "$sub" && break
		sleep 0.1
	done
	on A timeout 900 "$TPUT" pub -s "$work/a.sock" -g "$2" --size "$3" --count "$4" >"$pub" 2>&1
	timeout 120 tail --pid="$spid" -f /dev/null
	grep -q '"case":"sub"' "$sub"
}

printf '%s\n' "repair-bench ($mode): $LOSS% loss on the repair groups vs no loss on plain, all paced at $RATE/s;" \
	"every message checked"
rows=()
# src_rep GROUP FIELD: B's sources row for A on a repair group.
# variant TAG GROUP SIZE COUNT NAME BASE BRECV: one repair run at the loss,
# its row and JSON line against the baseline rate BASE.
variant() {
	local tag=$1 grp=$2 sz=$3 n=$4 name=$5 base=$6 brecv=$7 r0 u0 rate dropped rep unrec chk ok ratio verdict line
	r0=$(src "$grp" repaired)
	u0=$(src "$grp" unrecovered)
	loss "$LOSS" || failed=1
	run "$tag-$name" "$grp" "$sz" "$n" || { echo "repair-bench: $tag run $name did not complete" >&2; failed=1; }
	rate=$(jget "$work/$tag-$name-sub.log" msgs_per_s)
	dropped=$(nft_dropped)
	rep=$(($(src "$grp" repaired) - ${r0:-0}))
	unrec=$(($(src "$grp" unrecovered) - ${u0:-0}))
	# (No process substitution: the VM's guest has no /dev/fd.)
	chk=()
	for k in received seq_gaps wrong_size wrong_bytes out_of_order; do
		chk+=("$(jget "$work/$tag-$name-sub.log" $k)")
	done
	ok=yes
	[ "${chk[0]:-0}" = "$n" ] && [ "${chk[1]:-1}${chk[2]:-1}${chk[3]:-1}${chk[4]:-1}" = 0000 ] && [ "$unrec" = 0 ] &&
		[ "${dropped:-0}" -gt 0 ] || ok=no
	[ $ok = yes ] || failed=1
	ratio=$(awk -v a="${rate:-0}" -v b="${base:-0}" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print 0 }')
	verdict=$(awk -v r="$ratio" 'BEGIN { if (r >= 0.85) print "met"; else print "missed" }')
	rows+=("$(printf '%-6s %-9s %7s %10.0f %10.0f %7s %6s  %s' "$name" "$tag" "$n" "${base:-0}" "${rate:-0}" "$ratio" \
		"$verdict" "baseline got ${brecv:-?}; repair run: got ${chk[0]:-?}, gaps ${chk[1]:-?}, wrong ${chk[2]:-?}/${chk[3]:-?}, late ${chk[4]:-?}, nft dropped ${dropped:-0}, repaired $rep, unrecovered $unrec, all checked: $ok")")
	line=$(printf '{"bench":"repair","case":"%s_1pct_loss%s","metric":"msgs_per_s","pubd":%s,"baseline_name":"no_loss_no_repair","baseline":%s,"ratio":%s,"target":0.85,"verdict":"%s","fabric":"%s","rate":"%s","count":%s,"nft_dropped":%s,"repaired":%s,"unrecovered":%s,"all_checked":"%s"}' \
		"$name" "$([ "$tag" = repair ] || echo "_$tag")" "${rate:-0}" "${base:-0}" "$ratio" "$verdict" \
		"$([ $mode = host ] && echo udp || echo verbs)" "$RATE" "$n" "${dropped:-0}" "$rep" "$unrec" "$ok")
	echo "$line"
	[ -z "${REPAIR_JSONL:-}" ] || echo "$line" >>"$REPAIR_JSONL"
}
for sz in ${REPAIR_SIZES:-1024 65536}; do
	if [ "$sz" = 1024 ]; then n=$N1K name=1KiB; else n=$N64K name=64KiB; fi
	loss 0
	run "base-$name" plain "$sz" "$n" || { echo "repair-bench: baseline $name did not complete" >&2; failed=1; }
	base=$(jget "$work/base-$name-sub.log" msgs_per_s)
	brecv=$(jget "$work/base-$name-sub.log" received)
	# The group's defaults, and the same with no NAK back-off (see the top).
	variant repair rep "$sz" "$n" "$name" "$base" "$brecv"
	variant backoff0 rep0 "$sz" "$n" "$name" "$base" "$brecv"
done
echo
printf '%-6s %-9s %7s %10s %10s %7s %6s  %s\n' size repair count "no loss" "1% loss" ratio target checks
printf '%s\n' "${rows[@]}"
for d in a b; do
	echo "== $d: $(on "${d^^}" "$PUBCTL" -s "$work/$d.sock" status | grep -E '^  (tx_unicast|peer_ahs|tx_out_of_credits|rx_datagrams|tx_datagrams|[a-z_]*drop[a-z_]*) ' | tr -s ' ' | tr '\n' ';')"
done
on B "$PUBCTL" -s "$work/b.sock" drops
on B "$PUBCTL" -s "$work/b.sock" sources
exit $failed
