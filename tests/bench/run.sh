#!/bin/bash
# SPDX-License-Identifier: MIT
#
# pubd's benchmarks, one command: builds what they need, runs them, prints
# one table of every figure with its baseline and ratio, and writes the
# figures as JSON lines.
#
#   tests/bench/run.sh [host|vm|all|peers] [--quick] [--mtu 1024|4096] [--only NAMES] [--profile N]
#                      [--rounds N] [--out FILE] [--memory-seconds N]
#
#   host  on this machine, no RDMA needed:
#           4. local fan-out vs a SOCK_SEQPACKET pair     (bench_fanout)
#           7. local latency vs a SOCK_SEQPACKET pair and a
#              bare shared-memory ring                    (bench_locallat)
#           5. RSS under a flood vs configured buffers    (bench_memory, 60 s; 12 s with --quick)
#           6. instructions per message, callgrind        (bench_rxcost)
#           +  reassembly vs memcpy                       (bench_reasm)
#           +  loss repair: a repair group at 1% loss vs no loss and no
#              repair, udp daemons in namespaces          (repair-bench.sh --host)
#   vm    1-3 inside the Soft-RoCE VM against perftest on the same rxa/rxb
#         pair in the same boot (tests/softroce/run.sh with vm-bench.sh),
#         and loss repair over verbs (repair-bench.sh --verbs)
#   all   both (the default)
#   peers pubd against ZeroMQ PGM/NORM and Aeron on three namespace hosts
#         (tests/bench/peers/run.sh; installs libzmq3-dev, builds Aeron)
#   --mtu 4096  run the VM benchmarks at an RDMA MTU of 4096 (the veths at
#         9000, jumbo frames as production RoCE runs) instead of 1024
#   --only "NAMES"  VM: only these (tput1k tput1dg tput1ks tput1kmore tput64k
#         lat latso latlocal repair), beside the perftest baselines
#   --rounds N  VM: run each pubd benchmark N times (default 3) and report the median
#         (emulation swings single runs by +-15%)
#   --profile 1|2|3  VM: perf stat on each daemon (CPU, context switches and
#         system calls per message: "profile" lines in vm-bench.log); 2 adds
#         a system-wide perf record, by command and symbol in perf-*.txt; 3,
#         instead, counts the main system calls one by one
#
# Environment: BUILD (default <repo>/build-bench), PUBD_SOFTROCE_TIMEOUT
# (the VM's overall limit, default 1800 here).
#
# These are measurements, not tests: the exit status is 0 when every
# benchmark ran, whatever the figures; 1 when one could not run. Timing
# figures on a shared host are noisy; the ratios are measured side by side
# in the same run, and the instruction counts (6) are repeatable.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$repo/build-bench}
what=all
quick=0
out=
mem_s=60
vm_mtu=1024
vm_only=
vm_profile=0
vm_rounds=3
while [ $# -gt 0 ]; do
	case $1 in
	host | vm | all) what=$1 ;;
	peers) shift; exec "$here/peers/run.sh" "$@" ;;
	--quick) quick=1 ;;
	--out) out=$2; shift ;;
	--memory-seconds) mem_s=$2; shift ;;
	--mtu) vm_mtu=$2; shift ;;
	--only) vm_only=$2; shift ;;
	--profile) vm_profile=$2; shift ;;
	--rounds) vm_rounds=$2; shift ;;
	-h | --help) sed -n '3,42p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done
[ $quick = 1 ] && [ "$mem_s" = 60 ] && mem_s=12
qflag=()
[ $quick = 1 ] && qflag=(--quick)

mkdir -p "$BUILD/bench"
[ -n "$out" ] || out=$BUILD/bench/results-$(date +%Y%m%d-%H%M%S).jsonl
: >"$out" || exit 2
log=${out%.jsonl}.log
: >"$log"
failed=0

say() { echo "$*" | tee -a "$log" >&2; }

# ---- build ----
# Release, as shipped. maybe-uninitialized is a warning here, not an error:
# gcc's -O3 reports false positives in libpub/src/client.c that -O2 does not.
say "bench: building in $BUILD"
if ! { cmake -S "$repo" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_C_FLAGS=-Wno-error=maybe-uninitialized >>"$log" 2>&1 &&
	ninja -C "$BUILD" -j2 pubd pubctl bench_reasm bench_fanout bench_locallat bench_memory bench_rxcost bench_tput bench_lat >>"$log" 2>&1; }; then
	echo "bench: build failed; see $log" >&2
	tail -n 30 "$log" >&2
	exit 2
fi

# run NAME CMD...: run a benchmark, its table to the terminal, JSON lines to $out.
run() {
	local name=$1 tmp rc
	shift
	tmp=$(mktemp)
	say ""
	say "bench: $name: $*"
	"$@" 2> >(tee -a "$log" >&2) | tee "$tmp" | grep -v '^{' | tee -a "$log"
	rc=${PIPESTATUS[0]}
	grep '^{' "$tmp" >>"$out"
	rm -f "$tmp"
	if [ "$rc" -ne 0 ]; then
		say "bench: $name exited with status $rc"
		failed=1
	fi
}

if [ $what = host ] || [ $what = all ]; then
	b=$BUILD/tests/bench
	run fanout "$b/bench_fanout" "${qflag[@]}"
	run locallat "$b/bench_locallat" "${qflag[@]}"
	run memory "$b/bench_memory" --seconds "$mem_s"
	if command -v valgrind >/dev/null && command -v callgrind_control >/dev/null; then
		run rxcost "$b/bench_rxcost" "${qflag[@]}"
	else
		say "bench: rxcost needs valgrind (apt-get install valgrind); not run"
		failed=1
	fi
	run reasm "$b/bench_reasm"
	# Loss repair: udp daemons in two network namespaces, 1% nftables loss.
	run repair env BUILD="$BUILD" "$here/repair-bench.sh" --host "${qflag[@]}"
fi

if [ $what = vm ] || [ $what = all ]; then
	# What the guest reads: it sees the host's files, not our environment.
	printf 'VM_MTU=%s\nONLY="%s"\nPROFILE=%s\nROUNDS=%s\n' "$vm_mtu" "$vm_only" "$vm_profile" "$vm_rounds" \
		>"$BUILD/bench/vm-params.sh"
	if [ $quick = 1 ]; then
		cat >>"$BUILD/bench/vm-params.sh" <<-'EOF'
			TPUT_1K_COUNT=5000
			TPUT_64K_COUNT=100
			LAT_COUNT=500
			PERF_BW_COUNT=5000
			PERF_LAT_COUNT=500
		EOF
	fi
	say ""
	say "bench: vm: tests/softroce/run.sh $here/vm-bench.sh"
	vmout=$(mktemp)
	BUILD=$BUILD PUBD_SOFTROCE_KEEP=1 PUBD_SOFTROCE_TIMEOUT=${PUBD_SOFTROCE_TIMEOUT:-1800} \
		PUBD_SOFTROCE_CASE_TIMEOUT=1500 "$repo/tests/softroce/run.sh" "$here/vm-bench.sh" 2>&1 | tee "$vmout" | tee -a "$log"
	rc=${PIPESTATUS[0]}
	results=$(sed -n 's/.*results in \(.*\)$/\1/p' "$vmout" | head -n1)
	rm -f "$vmout"
	if [ -n "$results" ] && [ -s "$results/bench-vm.jsonl" ]; then
		cat "$results/bench-vm.jsonl" >>"$out"
		cat "$results/vm-bench.log" >>"$log" 2>/dev/null
		say "bench: vm: logs in $results"
	else
		say "bench: vm: no figures came back (softroce exit $rc; logs in ${results:-?})"
		failed=1
	fi
	[ "$rc" -eq 0 ] || failed=1
fi

# ---- one table of everything ----
{
	echo
	echo "pubd benchmarks: $(date -u +%FT%TZ), $(uname -n), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
	if command -v jq >/dev/null; then
		jq -r '
		  def f: if type == "number" then (if . >= 1000 then (round | tostring) else (. * 1000 | round / 1000 | tostring) end)
		         else (. // "" | tostring) end;
		  if .bench == "reasm" then
		    .results[] | ["reasm", "mtu\(.mtu)", "GB/s", (.reasm_gbps|f), "memcpy", (.memcpy_gbps|f), (.ratio|f), "", ""]
		  else
		    [.bench, .case, (.metric // ""), (.pubd|f), (.baseline_name // ""), (.baseline|f), (.ratio|f),
		     (.target|f), (.verdict // "")]
		  end | @tsv' "$out" |
			(printf 'bench\tcase\tmetric\tpubd\tbaseline\tbaseline_value\tratio\ttarget\tverdict\n'; cat) |
			column -t -s $'\t'
	else
		cat "$out"
	fi
	echo
	echo "figures: $out"
	echo "log:     $log"
} | tee -a "$log"
exit $failed
