#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Benchmarks 1-3, inside the Soft-RoCE VM, side by side with perftest's raw
# verbs on the same rxa -> rxb pair in the same boot:
#   1. throughput, 1 KiB messages:  bench_tput (pub on A/rxa, sub on B/rxb)
#      vs ib_send_bw -c UD -x 1 -s 1024 -M <group>          (messages/s)
#   2. throughput, 64 KiB messages (fragmented at the MTU: 1024, or VM_MTU)
#      vs the same ib_send_bw at the MTU size                (payload bytes/s)
#   3. latency, 64 B ping-pong through two groups (bench_lat), one-way p50/p99
#      vs ib_send_lat -c UD -x 1 -s 64                       (t_typical)
#   +  loss repair: a repair group at 1% loss (nftables on vb) vs the same
#      traffic with no loss and no repair (repair-bench.sh --verbs)
#
# A case of tests/softroce/run.sh (the guest has run guest-setup.sh: rxa
# 192.168.77.1, rxb 192.168.77.2); tests/bench/run.sh vm boots it so:
#   BUILD=<build> PUBD_SOFTROCE_KEEP=1 tests/softroce/run.sh $PWD/tests/bench/vm-bench.sh
# Figures go to $PUBD_RESULTS/bench-vm.jsonl (one JSON line per figure) and
# a table to the case log. Each benchmark that ran prints one PASS line;
# targets missed are figures, not failures. FAIL only when one could not run.
#
# On the host, for debugging the programs (not figures to report):
#   tests/bench/vm-bench.sh --udp      two daemons on the udp fabric (loopback), no perftest
#
# Settings: from $BUILD/bench/vm-params.sh when present (run.sh writes it;
# the guest sees only files), else the defaults below.
set -u

mode=verbs
[ "${1:-}" = --udp ] && mode=udp
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PUBD_REPO=${PUBD_REPO:-$(cd "$here/../.." && pwd)}
BUILD=${BUILD:-$PUBD_REPO/build-bench}
bin=$BUILD/tests/bench
PUBD=$BUILD/daemon/pubd
PUBCTL=$BUILD/cli/pubctl

# Defaults; vm-params.sh may override.
TPUT_1K_COUNT=20000
TPUT_64K_COUNT=400
LAT_COUNT=2000
LAT_WARMUP=100
PERF_BW_COUNT=20000
PERF_LAT_COUNT=2000
# VM_MTU: the RDMA MTU to run at (1024: the veth's 1500-byte default; 4096:
# jumbo frames, as production RoCE fabrics run).
VM_MTU=1024
# ONLY: run only these benchmarks (names: tput1k tput1dg tput1ks tput1kmore
# tput64k lat latso latlocal repair); the perftest baselines always run.
ONLY=
# PROFILE: see prof_start below.
PROFILE=${PROFILE:-0}
# ROUNDS: runs of each pubd benchmark; the figure is their median.
ROUNDS=1
# shellcheck source=/dev/null
[ -r "$BUILD/bench/vm-params.sh" ] && . "$BUILD/bench/vm-params.sh"

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }

work=$(mktemp -d /tmp/pubd-vmbench-XXXXXX)
if [ -n "${PUBD_RESULTS:-}" ]; then
	results=$PUBD_RESULTS
else
	results=$work
fi
jsonl=$results/bench-vm.jsonl
: >"$jsonl"
pids=()
client_env=() # the latency clients' environment (a variant's CLIENT_ENV)
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	cp "$work"/*.log "$work"/*.txt "$results"/ 2>/dev/null
	[ "$results" = "$work" ] || rm -rf "$work"
}
trap cleanup EXIT

# jget FILE KEY: a number or string from the last flat JSON line of FILE that has KEY.
jget() {
	grep "\"$2\":" "$1" 2>/dev/null | tail -n1 | sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p"
}

# wait_line FILE PATTERN SECONDS
wait_line() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# emit BENCH CASE METRIC PUBD BASELINE_NAME BASELINE [TARGET CMP]: one JSON figure line.
# CMP is ge (ratio >= target is met) or le.
emit() {
	local ratio verdict=""
	ratio=$(awk -v a="$4" -v b="$6" 'BEGIN { if (b + 0 > 0 && a != "") printf "%.4f", a / b; else print 0 }')
	if [ -n "${7:-}" ] && [ "$ratio" = 0 ]; then
		verdict=no-baseline
	elif [ -n "${7:-}" ]; then
		verdict=$(awk -v r="$ratio" -v t="$7" -v c="$8" 'BEGIN { ok = (c == "ge") ? r >= t : r <= t; print (r > 0 && ok) ? "met" : "missed" }')
	fi
	printf '{"bench":"%s","case":"%s","metric":"%s","pubd":%s,"baseline_name":"%s","baseline":%s,"ratio":%s%s%s,"fabric":"%s","mtu":%s}\n' \
		"$1" "$2" "$3" "${4:-0}" "$5" "${6:-0}" "$ratio" \
		"${7:+,\"target\":$7}" "${verdict:+,\"verdict\":\"$verdict\"}" "$mode" "$VM_MTU" | tee -a "$jsonl"
}

# ---- perftest baselines (verbs only) ----
# perf_pair NAME SERVER_ARGS... -- CLIENT_ARGS...: server on rxb, client on rxa
# (which connects to the server over TCP to exchange QP numbers).
perf_pair() {
	local name=$1 sargs=() cargs=() seen=0 a i
	shift
	for a in "$@"; do
		if [ "$a" = -- ]; then seen=1; continue; fi
		if [ $seen = 0 ]; then sargs+=("$a"); else cargs+=("$a"); fi
	done
	timeout 120 stdbuf -oL "${sargs[@]}" >"$work/$name-server.log" 2>&1 &
	local spid=$!
	pids+=("$spid")
	for ((i = 0; i < 100; i++)); do
		ss -ltn 2>/dev/null | grep -q ':18515 ' && break
		sleep 0.1
	done
	timeout 120 stdbuf -oL "${cargs[@]}" >"$work/$name-client.log" 2>&1
	local rc=$?
	wait "$spid"
	return $rc
}

# The last row of figures perftest printed (lines that start with two numbers).
perf_row() {
	grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]' "$1" 2>/dev/null | tail -n1
}

# perftest_run N: the raw-verbs figures of round N (1 before pubd's runs, 2
# after: the emulated fabric's speed drifts with the host's load, so each
# pubd figure is set against the better of two rounds in the same boot).
perftest_run() {
	local n=$1 row rate bytes typ p99
	if perf_pair "bw-mcast-$n" ib_send_bw -d rxb -c UD -x 1 -s 1024 -n "$PERF_BW_COUNT" -M 239.1.9.9 -- \
		ib_send_bw -d rxa -c UD -x 1 -s 1024 -n "$PERF_BW_COUNT" -M 239.1.9.9 192.168.77.2; then
		# Receiver's row when it printed one (what our subscriber measures), else the sender's.
		row=$(perf_row "$work/bw-mcast-$n-server.log")
		[ -n "$row" ] || row=$(perf_row "$work/bw-mcast-$n-client.log")
		rate=$(echo "$row" | awk '{ printf "%.0f", $5 * 1000000 }')
		bytes=$(echo "$row" | awk '{ printf "%.0f", $5 * 1000000 * $1 }')
		pass "perftest round $n: ib_send_bw UD multicast 1024 B: $rate msg/s"
		eval "bw_rate_$n=$rate bw_bytes_$n=$bytes"
		# At a larger MTU the bytes baseline is ib_send_bw at that size.
		if [ "$VM_MTU" != 1024 ] &&
			perf_pair "bw-mcast-mtu-$n" ib_send_bw -d rxb -c UD -x 1 -s "$VM_MTU" -n "$PERF_BW_COUNT" -M 239.1.9.9 -- \
				ib_send_bw -d rxa -c UD -x 1 -s "$VM_MTU" -n "$PERF_BW_COUNT" -M 239.1.9.9 192.168.77.2; then
			row=$(perf_row "$work/bw-mcast-mtu-$n-server.log")
			[ -n "$row" ] || row=$(perf_row "$work/bw-mcast-mtu-$n-client.log")
			bytes=$(echo "$row" | awk '{ printf "%.0f", $5 * 1000000 * $1 }')
			pass "perftest round $n: ib_send_bw UD multicast $VM_MTU B: $bytes B/s"
			eval "bw_bytes_$n=$bytes"
		fi
	else
		fail "perftest round $n: ib_send_bw UD multicast did not run"
		tail -n 20 "$work"/bw-mcast-$n-*.log
	fi
	if perf_pair "lat-$n" ib_send_lat -d rxb -c UD -x 1 -s 64 -n "$PERF_LAT_COUNT" -- \
		ib_send_lat -d rxa -c UD -x 1 -s 64 -n "$PERF_LAT_COUNT" 192.168.77.2; then
		row=$(perf_row "$work/lat-$n-client.log")
		[ -n "$row" ] || row=$(perf_row "$work/lat-$n-server.log")
		typ=$(echo "$row" | awk '{ print $5 }')
		p99=$(echo "$row" | awk '{ print $8 }')
		pass "perftest round $n: ib_send_lat UD 64 B: typical $typ us, p99 $p99 us"
		eval "lat_typ_$n=$typ lat_p99_$n=$p99"
	else
		fail "perftest round $n: ib_send_lat did not run"
		tail -n 20 "$work"/lat-$n-*.log
	fi
	# The same with completion events (-e) instead of polling: raw verbs that
	# sleep and wake per message, as pubd and its clients do. For scale.
	if perf_pair "latev-$n" ib_send_lat -d rxb -c UD -x 1 -s 64 -e -n "$PERF_LAT_COUNT" -- \
		ib_send_lat -d rxa -c UD -x 1 -s 64 -e -n "$PERF_LAT_COUNT" 192.168.77.2; then
		row=$(perf_row "$work/latev-$n-client.log")
		[ -n "$row" ] || row=$(perf_row "$work/latev-$n-server.log")
		typ=$(echo "$row" | awk '{ print $5 }')
		echo "perftest round $n: ib_send_lat -e (events) UD 64 B: typical $typ us, p99 $(echo "$row" | awk '{ print $8 }') us"
		eval "latev_typ_$n=$typ"
	fi
}
if [ $mode = verbs ]; then
	if [ "$VM_MTU" != 1024 ]; then
		# rxe follows its netdev's MTU (NETDEV_CHANGEMTU): jumbo frames give 4096.
		ip link set va mtu 9000 && ip link set vb mtu 9000 || fail "cannot set va/vb to MTU 9000"
		for ((i = 0; i < 50; i++)); do
			ibv_devinfo -d rxb | grep -q "active_mtu:[[:space:]]*$VM_MTU" &&
				ibv_devinfo -d rxa | grep -q "active_mtu:[[:space:]]*$VM_MTU" && break
			sleep 0.1
		done
		echo "RDMA MTU: $(ibv_devinfo -d rxa | sed -n 's/.*active_mtu:[[:space:]]*//p') (va/vb at MTU 9000)"
	fi
	perftest_run 1
	# Unicast for scale (not a baseline of a target).
	if perf_pair bw-ucast ib_send_bw -d rxb -c UD -x 1 -s 1024 -n "$PERF_BW_COUNT" -- \
		ib_send_bw -d rxa -c UD -x 1 -s 1024 -n "$PERF_BW_COUNT" 192.168.77.2; then
		row=$(perf_row "$work/bw-ucast-server.log")
		[ -n "$row" ] || row=$(perf_row "$work/bw-ucast-client.log")
		echo "perftest ib_send_bw UD unicast 1024 B: $(echo "$row" | awk '{ printf "%.0f msg/s", $5 * 1000000 }')"
	fi
fi

# record BENCH CASE METRIC VALUE BASELINE_KEY [TARGET CMP]: a pubd figure,
# emitted at the end against the baseline named by BASELINE_KEY.
record() {
	printf '%s|%s|%s|%s|%s|%s|%s\n' "$1" "$2" "$3" "${4:-0}" "$5" "${6:-}" "${7:-}" >>"$work/pending"
}

# ---- pubd: two daemons, A on rxa and B on rxb (or both on udp loopback) ----
if [ $mode = verbs ]; then
	fab_a="  type: verbs
  address: 192.168.77.1"
	fab_b="  type: verbs
  address: 192.168.77.2"
	g=239.1.2
else
	port=$((20000 + RANDOM % 20000))
	fab_a="  type: udp
  udp_port: $port"
	fab_b=$fab_a
	g=239.$((100 + RANDOM % 100)).$((RANDOM % 250))
fi

# start_daemon NAME PUBD_BIN FABRIC_YAML BUSY_POLL SEND_ONLY_GROUPS...
# Groups t1ks, pings and pongs are t1k, ping and pong again, joined
# send-only (`subscribe: []`) on the daemon whose clients only publish to
# them: rxe cannot block a QP's own multicast, so a full member receives
# every datagram it sends back.
start_daemon() {
	local extra= grp i=5
	for grp in t1ks pings pongs; do
		extra+="  - name: $grp"$'\n'"    address: $g.$i"$'\n'
		[[ " ${*:5} " == *" $grp "* ]] && extra+="    subscribe: []"$'\n'
		i=$((i + 1))
	done
	cat >"$work/$1.yaml" <<EOF
daemon:
  socket: $work/$1.sock
  log_level: notice
fabric:
$3
  busy_poll: $4
limits:
  max_message_size: 1MiB
groups:
  - name: t1k
    address: $g.1
  - name: t64k
    address: $g.2
  - name: ping
    address: $g.3
  - name: pong
    address: $g.4
$extra
EOF
	"$2" -c "$work/$1.yaml" >>"$work/pubd-$1.log" 2>&1 &
	eval "pid_$1=\$!"
	pids+=($!)
}
stop_daemon() { # NAME
	local p
	eval "p=\${pid_$1:-}"
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null
	timeout 20 tail --pid="$p" -f /dev/null
}
# all_joined SOCK: every group of the daemon reports joined.
all_joined() {
	local out
	out=$("$PUBCTL" -s "$1" --json groups 2>/dev/null) || return 1
	echo "$out" | grep -q '"joined":1' && ! echo "$out" | grep -q '"joined":0'
}

# Per-process cost while a benchmark runs (PROFILE=1): CPU time, context
# switches and system calls of each daemon, from perf stat attached to it.
# PROFILE=2 adds a system-wide perf record (kernel and rxe included) of each
# run, reported by command, object and symbol in perf-TAG.txt; PROFILE=3
# instead counts the main system calls one by one.
prof_pids=()
prof_start() { # TAG
	prof_pids=()
	[ "${PROFILE:-0}" -ge 1 ] || return 0
	local d p
	if [ "${PROFILE:-0}" = 2 ]; then
		perf record -a -g -F 499 -o "$work/perf-$1.data" >"$work/perf-$1-record.log" 2>&1 &
		prof_pids+=($!)
	fi
	local ev=task-clock,context-switches,raw_syscalls:sys_enter sc
	# PROFILE=3: which system calls, too.
	if [ "${PROFILE:-0}" -ge 3 ]; then
		for sc in read write writev readv epoll_wait ioctl clock_gettime sendmsg recvmsg; do
			ev+=",syscalls:sys_enter_$sc"
		done
	fi
	for d in a b; do
		eval "p=\${pid_$d:-}"
		perf stat -x, -e "$ev" -p "$p" -o "$work/perf-$1-$d.csv" >/dev/null 2>&1 &
		prof_pids+=($!)
	done
	sleep 0.5 # perf attaches asynchronously
}
prof_stop() { # TAG MESSAGES
	[ "${PROFILE:-0}" -ge 1 ] || return 0
	local p d
	for p in "${prof_pids[@]}"; do kill -INT "$p" 2>/dev/null; done
	# perf record writes its buffers out after the signal: slow under TCG.
	for p in "${prof_pids[@]}"; do timeout 120 tail --pid="$p" -f /dev/null; done
	for d in a b; do
		awk -F, -v d="$d" -v n="$2" -v tag="$1" '
			$3 == "task-clock" { cpu = $1 } $3 == "context-switches" { cs = $1 }
			$3 ~ /sys_enter/ { sc = $1 }
			$3 ~ /sys_enter_/ { sub(/.*sys_enter_/, "", $3); each = each sprintf(" %s %.2f", $3, $1 / n) }
			END { if (n > 0) printf "profile %s daemon %s: %.1f us CPU, %.2f syscalls, %.2f context switches per message%s\n", tag, toupper(d), cpu * 1000 / n, sc / n, cs / n, each ? ";" each : "" }' \
			"$work/perf-$1-$d.csv"
	done
	if [ -s "$work/perf-$1.data" ]; then
		{
			perf report -i "$work/perf-$1.data" --no-children -g none --sort comm 2>/dev/null | grep -v '^#' | grep . | head -12
			echo
			perf report -i "$work/perf-$1.data" --no-children -g none --sort comm,dso,sym 2>/dev/null |
				grep -v '^#' | grep . | head -60
		} >"$work/perf-$1.txt" 2>&1
		rm -f "$work/perf-$1.data"
	fi
}

# tput VARIANT NAME GROUP SIZE COUNT [PUB_ARG...]: subscriber on B, publisher on A.
tput() {
	local sub=$work/$1-$2-sub.log pub=$work/$1-$2-pub.log spid
	"$bin/bench_tput" sub -s "$work/b.sock" -g "$3" --size "$4" --count "$5" --idle-ms 3000 >"$sub" 2>&1 &
	spid=$!
	pids+=("$spid")
	wait_line "$sub" READY 30 || { fail "bench_tput sub $2 not ready"; cat "$sub"; return 1; }
	prof_start "$1-$2"
	timeout 600 "$bin/bench_tput" pub -s "$work/a.sock" -g "$3" --size "$4" --count "$5" "${@:6}" >"$pub" 2>&1
	timeout 60 tail --pid="$spid" -f /dev/null
	prof_stop "$1-$2" "$5"
	grep -v '^READY' "$sub"
	cat "$pub"
	grep -q '"case":"sub"' "$sub"
}

# median VALUE...: the middle value (the mean of the two middle ones for an
# even count); empty for none.
median() {
	[ $# -gt 0 ] || return 0
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# tput_case TITLE NAME GROUP SIZE COUNT CASE METRIC SUB_KEY BASELINE TARGET [PUB_ARG...]:
# ROUNDS throughput runs of variant $v, its PASS/FAIL line and its figure,
# the median of the rounds (SUB_KEY of the subscriber's JSON against
# BASELINE; TARGET "" for none).
tput_case() {
	local r vals=()
	selected "$2" || return 0
	for ((r = 1; r <= ROUNDS; r++)); do
		if tput "$v" "$2" "$3" "$4" "$5" "${@:11}"; then
			vals+=("$(jget "$work/$v-$2-sub.log" "$8")")
		else
			fail "$v bench $1 did not complete (round $r)"
		fi
	done
	[ ${#vals[@]} -gt 0 ] || return 0
	pass "$v bench $1 ran; $8 by round: ${vals[*]}"
	# shellcheck disable=SC2086 # no target: no TARGET CMP arguments
	record tput "$6$sfx" "$7" "$(median "${vals[@]}")" "$9" ${10:+${10} ge}
}

# lat_rounds NAME PONG_SOCK [PING_GROUP PONG_GROUP]: ROUNDS ping-pong runs
# (lat); the medians of their one-way p50 and p99 in LAT_P50 and LAT_P99
# (empty when none completed).
lat_rounds() {
	local r p50=() p99=() log=$work/$v-$1-ping.log
	for ((r = 1; r <= ROUNDS; r++)); do
		if lat "$v" "$@"; then
			p50+=("$(jget "$log" oneway_p50_us)")
			p99+=("$(jget "$log" oneway_p99_us)")
		fi
	done
	LAT_P50=$(median "${p50[@]}")
	LAT_P99=$(median "${p99[@]}")
	[ ${#p50[@]} -lt 2 ] || echo "$v $1: one-way p50 by round: ${p50[*]} us"
	[ -n "$LAT_P50" ]
}

# selected NAME: the run includes this benchmark (ONLY unset, or NAME in it).
selected() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

# lat VARIANT NAME PONG_SOCK [PING_GROUP PONG_GROUP]: ping from A, pong on PONG_SOCK (B: across the
# fabric; A: through one daemon, local fan-out only).
lat() {
	local pong=$work/$1-$2-pong.log ping=$work/$1-$2-ping.log ppid rc gping=${4:-ping} gpong=${5:-pong}
	env "${client_env[@]}" "$bin/bench_lat" pong -s "$3" --ping "$gping" --pong "$gpong" >"$pong" 2>&1 &
	ppid=$!
	pids+=("$ppid")
	if ! wait_line "$pong" READY 30; then
		cat "$pong"
		return 1
	fi
	prof_start "$1-$2"
	timeout 600 env "${client_env[@]}" "$bin/bench_lat" ping -s "$work/a.sock" --ping "$gping" --pong "$gpong" --count "$LAT_COUNT" \
		--warmup "$LAT_WARMUP" --size 64 >"$ping" 2>&1
	rc=$?
	prof_stop "$1-$2" $((2 * (LAT_COUNT + LAT_WARMUP)))
	timeout 30 tail --pid="$ppid" -f /dev/null
	cat "$ping"
	[ $rc = 0 ]
}

# run_variant NAME PUBD_BIN BUSY_POLL [BENCH_DIR]: benchmarks 1-3 with one
# build/config of pubd (and, when given, another build of the client programs).
run_variant() {
	local v=$1 sfx= up=0 i d bin=${4:-$bin} extra=${5:-}
	[ "$v" = pubd ] || sfx="_$v"
	# EXTRA: more fabric keys for this variant, ";" between them.
	[ -z "$extra" ] || extra=$'\n'"  ${extra//;/$'\n'  }"
	start_daemon a "$2" "$fab_a$extra" "$3" t1ks pings
	start_daemon b "$2" "$fab_b$extra" "$3" pongs
	for ((i = 0; i < 300; i++)); do
		if all_joined "$work/a.sock" && all_joined "$work/b.sock"; then
			up=1
			break
		fi
		sleep 0.1
	done
	if [ $up = 0 ]; then
		fail "$v: pubd daemons did not come up with every group joined in 30 s ($mode fabric)"
		tail -n 20 "$work"/pubd-*.log
		stop_daemon a
		stop_daemon b
		return 1
	fi
	echo "== $v: $2 (busy_poll $3): A and B up on the $mode fabric"

	tput_case "1: throughput 1 KiB" tput1k t1k 1024 "$TPUT_1K_COUNT" "1KiB_msgs" msgs_per_s msgs_per_s bw_rate 0.90
	# A 1 KiB message and pubd's 48-byte header do not fit one datagram at a
	# 1024-byte MTU: pubd sends two where ib_send_bw -s 1024 sends one. The
	# largest message that fits one (MTU - 48) shows the cost per datagram.
	one=$("$PUBCTL" -s "$work/a.sock" status | awk '$1 == "payload_per_datagram" { print $2; exit }')
	one=$((${one:-0}))
	if [ "$VM_MTU" = 1024 ] && [ "$one" -gt 0 ]; then
		tput_case "1: throughput at one datagram per message ($one B)" tput1dg t1k "$one" "$TPUT_1K_COUNT" \
			"${one}B_msgs_one_datagram" msgs_per_s msgs_per_s bw_rate ""
	fi
	# A publishing host configured as one (send-only join of the group).
	tput_case "1: throughput 1 KiB, publisher send-only" tput1ks t1ks 1024 "$TPUT_1K_COUNT" \
		"1KiB_msgs_sendonly_pub" msgs_per_s msgs_per_s bw_rate 0.90
	# The same with PUB_MORE: the publisher writes many messages at once.
	tput_case "1: throughput 1 KiB with PUB_MORE" tput1kmore t1k 1024 "$TPUT_1K_COUNT" \
		"1KiB_msgs_more" msgs_per_s msgs_per_s bw_rate 0.90 --more
	tput_case "2: throughput 64 KiB" tput64k t64k 65536 "$TPUT_64K_COUNT" \
		"64KiB_bytes" payload_bytes_per_s bytes_per_s bw_bytes 0.85
	if ! selected lat; then
		:
	elif lat_rounds lat "$work/b.sock"; then
		pass "$v bench 3: ping-pong latency ran"
		# Target: p50 <= 1.5 x ib_send_lat typical, i.e. ratio <= 1.5.
		record lat "64B_p50$sfx" oneway_p50_us "$LAT_P50" lat_typ 1.5 le
		record lat "64B_p99$sfx" oneway_p99_us "$LAT_P99" lat_p99
		record lat "64B_p50_vs_events$sfx" oneway_p50_us "$LAT_P50" latev_typ
	else
		fail "$v bench 3: ping-pong did not complete"
	fi
	# Each side's publishing group joined send-only: no looped-back copies.
	if selected latso && lat_rounds latso "$work/b.sock" pings pongs; then
		pass "$v bench 3: ping-pong latency, send-only publishers, ran"
		record lat "64B_p50_sendonly$sfx" oneway_p50_us "$LAT_P50" lat_typ 1.5 le
	fi
	# For the decomposition: the same ping-pong through A alone (no fabric).
	if selected latlocal && lat_rounds latlocal "$work/a.sock"; then
		record lat "64B_p50_local$sfx" oneway_p50_us "$LAT_P50" lat_typ
	fi
	for d in a b; do
		{
			echo "== $v"
			"$PUBCTL" -s "$work/$d.sock" status
			"$PUBCTL" -s "$work/$d.sock" drops
		} >>"$work/status-$d.log" 2>&1
	done
	stop_daemon a
	stop_daemon b
}

if [ "${PROFILE:-0}" -ge 1 ] && ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
fi

# The floor of a local hop in this boot: one Unix SOCK_SEQPACKET ping-pong.
if "$bin/bench_lat" pair --count "$LAT_COUNT" --warmup "$LAT_WARMUP" --size 64 >"$work/lat-pair.log" 2>&1; then
	cat "$work/lat-pair.log"
	record lat 64B_p50_unix_pair oneway_p50_us "$(jget "$work/lat-pair.log" oneway_p50_us)" lat_typ
fi

# Variants: "NAME|PUBD_BIN|BUSY_POLL[|BENCH_DIR[|FABRIC_KEYS[|CLIENT_ENV]]]" entries
# (vm-params.sh may set VARIANTS to compare builds or settings in the same boot;
# FABRIC_KEYS like "rx_linger_us: 0;receive: always"; CLIENT_ENV, variables for the
# latency clients separated by spaces, like "PUBD_RECV_LINGER_US=500"); the first
# gives the figures.
if [ -z "${VARIANTS+x}" ] || [ ${#VARIANTS[@]} -eq 0 ]; then
	VARIANTS=("pubd|$PUBD|false")
fi
for v in "${VARIANTS[@]}"; do
	IFS='|' read -r vname vbin vbusy vbench vkeys venv <<<"$v"
	# CLIENT_ENV: the latency clients' environment (e.g. PUBD_RECV_LINGER_US=500).
	read -r -a client_env <<<"${venv:-}"
	run_variant "$vname" "$vbin" "${vbusy:-false}" "$vbench" "$vkeys"
done

# Loss repair over verbs (its own daemons, its own baseline: the same
# traffic with no loss and no repair, in this boot).
if [ $mode = verbs ] && selected repair; then
	if BUILD=$BUILD REPAIR_JSONL=$jsonl REPAIR_1K_COUNT=$TPUT_1K_COUNT REPAIR_64K_COUNT=$TPUT_64K_COUNT \
		"$here/repair-bench.sh" --verbs >"$work/repair-bench.log" 2>&1; then
		pass "repair bench ran, every message checked"
	else
		fail "repair bench did not complete, or a message was missing or wrong"
	fi
	grep -v '^{' "$work/repair-bench.log"
fi

# The baselines again, and each pubd figure against the better round.
bw_rate= bw_bytes= lat_typ= lat_p99= latev_typ=
if [ $mode = verbs ]; then
	perftest_run 2
	best() { # max|min A B: the better of two figures, either may be missing
		awk -v m="$1" -v a="$2" -v b="$3" 'BEGIN {
			if (a == "") { print b; exit } if (b == "") { print a; exit }
			print (m == "max") == (a + 0 > b + 0) ? a : b }'
	}
	bw_rate=$(best max "${bw_rate_1:-}" "${bw_rate_2:-}")
	bw_bytes=$(best max "${bw_bytes_1:-}" "${bw_bytes_2:-}")
	lat_typ=$(best min "${lat_typ_1:-}" "${lat_typ_2:-}")
	lat_p99=$(best min "${lat_p99_1:-}" "${lat_p99_2:-}")
	emit perftest bw_drift msgs_per_s "${bw_rate_2:-0}" ib_send_bw_round_1 "${bw_rate_1:-0}"
	emit perftest lat_drift typical_us "${lat_typ_2:-0}" ib_send_lat_round_1 "${lat_typ_1:-0}"
	latev_typ=$(best min "${latev_typ_1:-}" "${latev_typ_2:-}")
	emit perftest lat_events typical_us "${latev_typ:-0}" ib_send_lat_ud_typical "${lat_typ:-0}"
fi
declare -A base_name=([bw_rate]=ib_send_bw_ud_mcast_1024 [bw_bytes]=ib_send_bw_ud_mcast_$VM_MTU
	[lat_typ]=ib_send_lat_ud_typical [lat_p99]=ib_send_lat_ud_p99 [latev_typ]=ib_send_lat_events_typical)
while IFS='|' read -r b c m v k t cmp; do
	emit "$b" "$c" "$m" "$v" "${base_name[$k]}" "${!k:-0}" "$t" "$cmp"
done <"$work/pending"

echo
echo "Benchmarks 1-3 ($mode fabric; ratio = pubd / baseline)"
printf '%-8s %-30s %-20s %12s %12s %8s %6s %s\n' bench case metric pubd baseline ratio target verdict
while IFS= read -r l; do
	printf '%-8s %-30s %-20s %12s %12s %8s %6s %s\n' \
		"$(echo "$l" | sed -n 's/.*"bench":"\([^"]*\)".*/\1/p')" \
		"$(echo "$l" | sed -n 's/.*"case":"\([^"]*\)".*/\1/p')" \
		"$(echo "$l" | sed -n 's/.*"metric":"\([^"]*\)".*/\1/p')" \
		"$(echo "$l" | sed -n 's/.*"pubd":\([^,]*\).*/\1/p')" \
		"$(echo "$l" | sed -n 's/.*"baseline":\([^,]*\).*/\1/p')" \
		"$(echo "$l" | sed -n 's/.*"ratio":\([^,}]*\).*/\1/p')" \
		"$(echo "$l" | sed -n 's/.*"target":\([^,}]*\).*/\1/p')" \
		"$(echo "$l" | sed -n 's/.*"verdict":"\([^"]*\)".*/\1/p')"
done <"$jsonl"
echo "figures: $jsonl"
exit 0
