#!/bin/bash
# SPDX-License-Identifier: MIT
# Send posts failing for a while (THREATS.md "the fabric itself": send queue
# exhaustion, ENOMEM from verbs): pubd A runs under the fault shim with
# every ibv_post_send failing (ENOMEM) for 3 s from its 40th call, while a
# paced stream of 400 messages goes to B. A post the device refuses is not
# the message's fault: A must hold the stream back (back-pressure, retried
# with back-off) rather than drop it, log the fault once per period rather
# than once per failure, and deliver all of it: published == delivered, no
# drops.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

SHIM=$BUILD/tests/softroce/libfault_shim.so
[ -f "$SHIM" ] || {
	fail "not built: $SHIM"
	exit 0
}
COUNT=400
dl_conf_ab <<EOF
limits:
  reassembly_timeout_ms: 10000
groups:
  - {name: t1, address: 239.77.93.1}
EOF
dl_pubd B "$W/B.yaml"
logA=$DL_LOGS/$DL_RUN-A.pubd.log
env LD_PRELOAD="$SHIM" PUBD_FAULT_SEND_FAIL=40:3 "$PUBD" -c "$W/A.yaml" {DL_TICK}>&- 2>"$logA" &
DL_PID[A]=$!
dl_log "pubd A pid ${DL_PID[A]} under $SHIM (ibv_post_send fails for 3 s from call 40)"
dl_ready A 60 && dl_ready B 60 || exit 0
SRC_A=$(dl_sq A status status.source_id)

dl_ctl B sub t1 --count $COUNT --timeout 120 >"$W/B.list" 2>"$W/B.err" &
subpid=$!
DL_BG+=("$subpid")
dl_wait 30 dl_subs B t1 1 || fail "subscriber of t1 on B not there within 30s"
dl_ctl A pub t1 --count $COUNT --rate 100 --size 300 >"$W/pub.out" 2>&1 || fail "publishing on A: $(cat "$W/pub.out")"

if wait_for_file "$logA" 'fault_shim: ibv_post_send works again' 60; then
	pass "the fault window passed: $(grep 'fault_shim: ibv_post_send works again' "$logA")"
else
	fail "the shim's fault window did not end within 60s: $(grep fault_shim "$logA")"
fi
if dl_wait 60 dl_gone "$subpid"; then
	pass "B's subscriber got its $COUNT messages"
else
	fail "B's subscriber got $(dl_sq B groups 'groups.delivered[name=t1]') of $COUNT within 60s"
fi
published=$(dl_sq A groups 'groups.published[name=t1]')
read -r _ _ del drp <<<"$(dl_stream B "$SRC_A" t1)"
read -r adrops _ <<<"$(dl_sq A status status.dropped)"
if [ "$published" = $COUNT ] && [ "$del" = $COUNT ] && [ "$drp" = 0 ] && [ "$adrops" = 0 ]; then
	pass "nothing lost: A published $published, B delivered $del, dropped $drp; A dropped $adrops"
else
	fail "A published '$published', B delivered '$del' dropped '$drp', A dropped '$adrops' (want $COUNT $COUNT 0 0)"
	dl_ctl A drops
fi
read -r perr <<<"$(dl_fab A tx_post_errors)"
lines=$(grep -c 'verbs: ibv_post_send on' "$logA")
if [ "${perr:-0}" -ge 1 ] && [ "$lines" -ge 1 ] && [ "$lines" -le 2 ]; then
	pass "the failures are counted (tx_post_errors $perr) and logged $lines time(s): $(grep -m1 'verbs: ibv_post_send on' "$logA")"
else
	fail "tx_post_errors '$perr', $lines log lines for them (want >= 1 counted, 1..2 lines)"
fi
dl_stop
