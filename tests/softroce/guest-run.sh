#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Stage 2, PID 1 inside the Soft-RoCE VM (run.sh passes it on the kernel
# command line). The root is the host's / over 9p; /tmp and /run are fresh
# tmpfs. Sets up rxa/rxb, runs every case listed by the host, prints one
# PUBD-SOFTROCE-RESULT line on the console and powers off.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

passed=0
failed=0
finish() {
	echo "PUBD-SOFTROCE-RESULT: passed=$passed failed=$failed"
	sync
	# As PID 1 we must never exit (that panics the guest): power off hard.
	busybox poweroff -f 2>/dev/null
	echo o >/proc/sysrq-trigger
	sleep 60
}

mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /dev/shm 2>/dev/null
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts 2>/dev/null
ulimit -l unlimited # registered memory is pinned
hostname softroce

results=${pubd_results:-}
if [ -z "$results" ] || [ ! -r "$results/env.sh" ]; then
	echo "PUBD-SOFTROCE-RESULT: boot-failed (no results dir '$results' from the host)"
	failed=1
	finish
fi
# shellcheck source=/dev/null
. "$results/env.sh"
export PUBD_REPO BUILD PUBD_RESULTS PUBD_CASE_TIMEOUT
here=$PUBD_REPO/tests/softroce

echo "softroce: guest up: kernel $(uname -r), $(nproc) cpus"
if ! "$here/guest-setup.sh" >"$results/setup.log" 2>&1; then
	echo "FAIL guest-setup (see $results/setup.log)"
	sed 's/^/  /' "$results/setup.log" | tail -n 20
	failed=1
	finish
fi
sed -n 's/^fabric: /softroce: fabric: /p' "$results/setup.log"
echo "softroce: RDMA devices:"
rdma link show 2>&1 | sed 's/^/  /'

# One case, its log and its tally; $2 names a libpub transport to run it with.
run_case() {
	local c=$1 transport=$2 name log t0 t1 rc np nf

	name=$(basename "$c" .sh)${transport:+@$transport}
	log=$results/$name.log
	t0=$(date +%s)
	(cd /tmp && if [ -n "$transport" ]; then export PUBD_TRANSPORT=$transport; fi &&
		timeout -k 5 "$PUBD_CASE_TIMEOUT" bash ${PUBD_TRACE:+-x} "$c") >"$log" 2>&1 </dev/null
	rc=$?
	t1=$(date +%s)
	np=$(grep -c '^PASS' "$log")
	nf=$(grep -c '^FAIL' "$log")
	grep -E '^(PASS|FAIL)' "$log"
	if [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
		if [ "$rc" -eq 124 ]; then
			echo "FAIL $name: timed out after ${PUBD_CASE_TIMEOUT}s" | tee -a "$log"
		else
			echo "FAIL $name: exited with status $rc" | tee -a "$log"
		fi
		nf=1
	elif [ "$np" -eq 0 ] && [ "$nf" -eq 0 ]; then
		echo "FAIL $name: reported nothing" | tee -a "$log"
		nf=1
	fi
	passed=$((passed + np))
	failed=$((failed + nf))
	echo "softroce: case $name: $np passed, $nf failed, $((t1 - t0))s"
}

while read -r c; do
	[ -n "$c" ] || continue
	case "$(basename "$c")" in
	*-daemon-*)
		# The daemon's cases go through libpub: once per transport asked for.
		for t in ${PUBD_SOFTROCE_TRANSPORTS:-}; do
			run_case "$c" "$t"
		done
		[ -n "${PUBD_SOFTROCE_TRANSPORTS:-}" ] || run_case "$c" ""
		;;
	*) run_case "$c" "" ;;
	esac
done <"$results/cases.list"

finish
