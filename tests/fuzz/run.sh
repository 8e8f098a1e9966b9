#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run every libFuzzer target (every fuzz_* the build made: fuzz_wire,
# fuzz_reasm, fuzz_proto, fuzz_config, fuzz_repair, fuzz_udpeer, fuzz_ipc, fuzz_rxpath, fuzz_publog,
# fuzz_directlog) for a short time, starting from its seed corpus in
# tests/fuzz/corpus/<name without fuzz_>/ (copied, so the tree is never modified).
# A crash, leak or sanitizer report fails the run; the reproducer is kept.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS]
set -uo pipefail

build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
seconds=${2:-20}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="$build/fuzz-runs"
mkdir -p "$out"
passed=0
failed=0
targets=("$build"/tests/fuzz/fuzz_*)
[ -x "${targets[0]}" ] || {
	echo "fuzz: no targets in $build/tests/fuzz"
	exit 1
}
for t in "${targets[@]}"; do
	name=$(basename "$t")
	seeds="$here/corpus/${name#fuzz_}"
	work="$out/$name"
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts"
	[ -d "$seeds" ] && cp -r "$seeds"/. "$work/corpus/"
	echo "fuzz: $name for ${seconds}s ($(ls "$work/corpus" | wc -l) seeds)"
	if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$t" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
		"$work/corpus" >"$work/log" 2>&1; then
		echo "  PASS $name: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$') runs"
		passed=$((passed + 1))
	else
		echo "  FAIL $name (log: $work/log; reproducer in $work/artifacts/)"
		tail -n 40 "$work/log"
		failed=$((failed + 1))
	fi
done
echo "fuzz: $passed passed, $failed failed"
[ $failed -eq 0 ]
