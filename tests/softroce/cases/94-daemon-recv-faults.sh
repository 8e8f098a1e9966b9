#!/bin/bash
# SPDX-License-Identifier: MIT
# Receive posts failing for a while (THREATS.md "the fabric itself": SRQ
# starvation, ENOMEM from verbs): pubd B, with a 16-buffer SRQ, runs under
# the fault shim with every ibv_post_srq_recv failing (ENOMEM) for 2 s from
# its 5th call, while A sends it a paced stream. The SRQ runs dry in the
# window, and a dry SRQ completes nothing, so no completion will ever ask for
# a refill: B must retry by itself (back-off), take the rest of the stream
# once posts work again, count what was lost (published == delivered +
# dropped) and log the fault once per period rather than once per failure.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

SHIM=$BUILD/tests/softroce/libfault_shim.so
[ -f "$SHIM" ] || {
	fail "not built: $SHIM"
	exit 0
}
COUNT=600
dl_conf_ab <<EOF
  srq_depth: 16
  srq_low_watermark: 4
limits:
  reassembly_timeout_ms: 300
groups:
  - {name: r1, address: 239.77.94.1}
EOF
dl_pubd A "$W/A.yaml"
logB=$DL_LOGS/$DL_RUN-B.pubd.log
env LD_PRELOAD="$SHIM" PUBD_FAULT_RECV_FAIL=5:2 "$PUBD" -c "$W/B.yaml" {DL_TICK}>&- 2>"$logB" &
DL_PID[B]=$!
dl_log "pubd B pid ${DL_PID[B]} under $SHIM (ibv_post_srq_recv fails for 2 s from call 5)"
dl_ready A 60 && dl_ready B 60 || exit 0
SRC_A=$(dl_sq A status status.source_id)

dl_ctl B sub r1 --timeout 120 >"$W/B.list" 2>"$W/B.err" &
subpid=$!
DL_BG+=("$subpid")
dl_wait 30 dl_subs B r1 1 || fail "subscriber of r1 on B not there within 30s"
dl_ctl A pub r1 --count $COUNT --rate 100 --size 100 >"$W/pub.out" 2>&1 || fail "publishing on A: $(cat "$W/pub.out")"

if grep -q 'fault_shim: ibv_post_srq_recv works again' "$logB"; then
	pass "the fault window passed: $(grep 'fault_shim: ibv_post_srq_recv' "$logB" | paste -sd' ')"
else
	fail "the shim's fault window did not pass while A published: $(grep fault_shim "$logB")"
fi
# The tail of the stream (published after the window) reaches B's subscriber.
last_seq() { awk 'END { print $3 }' "$W/B.list"; }
tail_in() { [ "$(last_seq)" = $((COUNT - 1)) ]; }
if dl_wait 30 tail_in; then
	pass "B took the stream again after the window: its subscriber has seq $(last_seq)"
else
	fail "B's subscriber stops at seq '$(last_seq)' (want $((COUNT - 1))): B took nothing after the window ($(dl_kv B fabric srq_fill rx_post_errors rx_datagrams))"
fi
published=$(dl_sq A groups 'groups.published[name=r1]')
settled() {
	local inf mis del drp
	read -r inf mis del drp <<<"$(dl_stream B "$SRC_A" r1)"
	[ "$inf $mis" = "0 0" ] && [ $((del + drp)) = "$published" ]
}
dl_wait 30 settled || true
read -r _ _ del drp <<<"$(dl_stream B "$SRC_A" r1)"
read -r named reasons <<<"$(dl_drops B "$SRC_A/r1")"
if [ "$published" = $COUNT ] && [ -n "$del" ] && [ $((del + drp)) = $COUNT ] && [ "$named" = "$drp" ]; then
	pass "counted: published $COUNT = delivered $del + dropped $drp ($reasons)"
else
	fail "identity: published '$published' vs B delivered '$del' + dropped '$drp'; drops rows '$named' ($reasons)"
fi
read -r perr <<<"$(dl_fab B rx_post_errors)"
lines=$(grep -c 'verbs: posting receives on' "$logB")
if [ "${perr:-0}" -ge 1 ] && [ "$lines" -ge 1 ] && [ "$lines" -le 2 ]; then
	pass "the failures are counted (rx_post_errors $perr) and logged $lines time(s): $(grep -m1 'verbs: posting receives on' "$logB")"
else
	fail "rx_post_errors '$perr', $lines log lines for them (want >= 1 counted, 1..2 lines)"
fi
dl_stop
