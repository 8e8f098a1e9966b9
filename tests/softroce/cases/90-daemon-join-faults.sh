#!/bin/bash
# SPDX-License-Identifier: MIT
# Join faults (issue 10, defect 1): pubd A runs under the fault shim
# (tests/softroce/fault_shim.c, LD_PRELOAD), which turns A's first
# MULTICAST_JOIN event into a MULTICAST_ERROR and makes A's second
# ibv_create_ah fail. Both make the verbs fabric leave the group
# (rdma_leave_multicast), which waits until every event of the join is
# acknowledged: a handler that leaves before it acks hangs the daemon for
# ever. A must log both faults, keep answering `pubctl status`, count them
# (multicast_errors, join_errors), rejoin every group, and then carry a
# stream to B (rxb) with published == delivered on each group.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

SHIM=$BUILD/tests/softroce/libfault_shim.so
[ -f "$SHIM" ] || {
	fail "not built: $SHIM"
	exit 0
}
GRPS=(j1 j2 j3)
COUNT=50
dl_conf_ab <<EOF
groups:
  - {name: j1, address: 239.77.90.1}
  - {name: j2, address: 239.77.90.2}
  - {name: j3, address: 239.77.90.3}
EOF
# A hung pubd ignores SIGTERM (it never returns to its loop): end it for
# good before dl_teardown waits for it.
trap '[ -z "${DL_PID[A]:-}" ] || kill -KILL "${DL_PID[A]}" 2>/dev/null; dl_teardown' EXIT

dl_pubd B "$W/B.yaml"
logA=$DL_LOGS/$DL_RUN-A.pubd.log
env LD_PRELOAD="$SHIM" PUBD_FAULT_JOIN_ERROR=1 PUBD_FAULT_AH_FAIL=2 \
	"$PUBD" -c "$W/A.yaml" {DL_TICK}>&- 2>"$logA" &
DL_PID[A]=$!
dl_log "pubd A pid ${DL_PID[A]} under $SHIM (join event 1 -> MULTICAST_ERROR, ibv_create_ah call 2 fails)"
dl_ready B 60 || exit 0

# Both faults are injected within A's first joins.
if wait_for_file "$logA" 'fault_shim: MULTICAST_JOIN event #1' 60 &&
	wait_for_file "$logA" 'fault_shim: ibv_create_ah call #2' 60; then
	pass "both faults injected into A's joins"
else
	fail "the shim did not inject both faults within 60s"
fi

# Responsive: a status query answers within 15 s of the faults. A daemon
# blocked in rdma_leave_multicast answers nothing, ever.
t0=$SECONDS
if v=$(timeout 15 "$SR_QUERY" "$W/A.sock" status status.source_id 2>&1); then
	SRC_A=$v
	pass "pubd A answers pubctl status after the faults ($((SECONDS - t0))s, source ${v})"
else
	fail "pubd A does not answer pubctl status within 15s of the faults (hung?): '$v'"
	echo "pubd A: state $(awk '/^State:/ {print $2, $3}' "/proc/${DL_PID[A]}/status" 2>/dev/null), waiting in $(cat "/proc/${DL_PID[A]}/wchan" 2>/dev/null)"
	grep -E 'verbs|fault_shim' "$logA" | tail -n 10
	exit 0
fi

for pat in 'verbs: multicast error on 239\.77\.90\.' 'joined but ibv_create_ah failed'; do
	if grep -q -- "$pat" "$logA"; then
		pass "A logs it: $(grep -m1 -- "$pat" "$logA")"
	else
		fail "A's log has no line matching '$pat'"
	fi
done

# Recovered: every group joined again (the retry backs off from 0.5 s).
dl_ready A 60 || exit 0
read -r mce jer <<<"$(dl_sq A status 'fabric.value[key=multicast_errors]' 'fabric.value[key=join_errors]' | tr '\n' ' ')"
if [ "${mce:-0}" -ge 1 ] && [ "${jer:-0}" -ge 1 ]; then
	pass "faults counted: multicast_errors $mce, join_errors $jer ($(dl_kv A fabric joins rejoins groups_up))"
else
	fail "faults not counted: multicast_errors '$mce', join_errors '$jer'"
fi

# Accounting: each group carries a stream from A to B, all of it.
for g in "${GRPS[@]}"; do
	dl_ctl B sub "$g" --count $COUNT --timeout 120 --output "$W/B.$g.out" 2>"$W/B.$g.err" &
	DL_BG+=("$!")
done
for g in "${GRPS[@]}"; do
	dl_wait 30 dl_subs B "$g" 1 || fail "subscriber of $g on B not there within 30s"
done
for g in "${GRPS[@]}"; do
	dl_ctl A pub "$g" --count $COUNT --size 200 >"$W/A.$g.pub" 2>&1 || fail "publishing to $g on A: $(cat "$W/A.$g.pub")"
done
for g in "${GRPS[@]}"; do
	settled() {
		local v
		v=$(dl_sq B groups "groups.delivered[name=$1]")
		[ "${v:-0}" -ge $COUNT ]
	}
	dl_wait 60 settled "$g" || true
	pubd_a=$(dl_sq A groups "groups.published[name=$g]")
	del_b=$(dl_sq B groups "groups.delivered[name=$g]")
	read -r drops _ <<<"$(dl_drops B "$SRC_A/$g" 2>/dev/null)"
	if [ "$pubd_a" = $COUNT ] && [ "$del_b" = $COUNT ]; then
		pass "$g: A published $pubd_a, B delivered $del_b"
	else
		fail "$g: A published '$pubd_a', B delivered '$del_b' (want $COUNT each; B's drops ${drops:-?})"
	fi
done

# SIGTERM ends A promptly (a hung daemon would not).
kill -TERM "${DL_PID[A]}"
if dl_wait 20 dl_gone "${DL_PID[A]}"; then
	wait "${DL_PID[A]}"
	rc=$?
	dl_expect "pubd A's exit status after SIGTERM" "$rc" 0
else
	fail "pubd A still running 20s after SIGTERM"
fi
unset "DL_PID[A]"
dl_stop B
