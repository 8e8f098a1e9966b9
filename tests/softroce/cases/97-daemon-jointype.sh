#!/bin/bash
# SPDX-License-Identifier: MIT
# The verbs join type follows listening (daemon/fabric/verbs/join_type.c):
# a group B only publishes to is joined send-only; B's first subscriber
# makes it a full member, its SUBSCRIBE answered once the full join's event
# came, and what A publishes then arrives; after the subscriber leaves B
# stays a full member for fabric.sendonly_hold_ms, then goes back to
# send-only. A subscriber that comes and goes within the hold-off changes
# nothing. Same for an IPv6 group (joined without rdma_cm). Polls pubctl.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

ip -6 addr add fd00:77::1/64 dev va nodad 2>/dev/null
ip -6 addr add fd00:77::2/64 dev vb nodad 2>/dev/null
HOLD=5000
dl_conf_ab <<EOF
  sendonly_hold_ms: $HOLD
groups:
  - {name: jt, address: 239.77.97.1}
  - {name: j6, address: 'ff15::77:97'}
EOF
dl_start_ab

join_is() { [ "$(dl_sq "$1" groups "groups.join[name=$2]")" = "$3" ]; }
for d in A B; do
	for g in jt j6; do
		dl_wait 20 join_is $d $g sendonly || true
		dl_expect "$d $g: nobody subscribes: send-only" "$(dl_sq $d groups "groups.join[name=$g]")" sendonly
	done
done
dl_expect "B: no QP attached while send-only" "$(dl_fab B groups_attached)" 0
if grep -q 'joined 239.77.97.1 on rxb as send-only full member' "$DL_LOGS/$DL_RUN-B.pubd.log"; then
	pass "rxe accepts the send-only join (RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)"
else
	fail "B's log: $(grep -m1 'joined 239.77.97.1' "$DL_LOGS/$DL_RUN-B.pubd.log")"
fi

COUNT=30
for g in jt j6; do
	j0=$(dl_fab B joins)
	t0=$SECONDS
	# pubctl sub returns from its SUBSCRIBE only with the answer: once the
	# subscriber is counted and the group is full, the answer came after
	# the join (the daemon logs "full member: receiving" first).
	dl_ctl B sub "$g" --count $COUNT --timeout 60 --output "$W/B.$g.out" 2>"$W/B.$g.err" &
	SUB=$!
	DL_BG+=("$SUB")
	dl_wait 30 dl_subs B "$g" 1 || fail "B's subscriber of $g not there"
	dl_wait 30 join_is B "$g" full || fail "$g: B did not become a full member"
	dl_expect "$g: B is a full member with its subscriber ($((SECONDS - t0))s, joins $j0 -> $(dl_fab B joins))" \
		"$(dl_sq B groups "groups.join[name=$g]") $(dl_sq B groups "groups.receiving[name=$g]")" "full 1"
	# rdma_cm's join completes with an event, the SUBSCRIBE waits for it;
	# an IPv6 group's join (mcast6.c) is complete when listen() returns.
	want="group $g ([^)]*): full member: receiving"
	[ $g = j6 ] && want="group $g ([^)]*): started receiving$"
	if grep -q "$want" "$DL_LOGS/$DL_RUN-B.pubd.log"; then
		pass "$g: B answered the SUBSCRIBE once the full join was complete ($(grep -m1 "$want" "$DL_LOGS/$DL_RUN-B.pubd.log"))"
	else
		fail "$g: B's log has no line matching '$want'"
	fi
	dl_ctl A pub "$g" --count $COUNT --size 200 >/dev/null || fail "publish $COUNT on $g"
	if dl_wait 60 dl_gone "$SUB" && wait "$SUB"; then
		pass "$g: B's subscriber got its $COUNT messages"
	else
		fail "$g: B's subscriber did not get $COUNT messages: $(cat "$W/B.$g.err")"
	fi
	# The subscriber left: full for the hold-off, then send-only.
	t0=$SECONDS
	dl_wait 10 dl_subs B "$g" 0 || fail "$g: the subscriber did not leave"
	dl_expect "$g: B still a full member right after the last subscriber left" \
		"$(dl_sq B groups "groups.join[name=$g]")" full
	dl_wait 30 join_is B "$g" sendonly || fail "$g: B not back to send-only within 30s"
	took=$((SECONDS - t0))
	if [ "$(dl_sq B groups "groups.join[name=$g]")" = sendonly ] && [ $took -ge $((HOLD / 1000 - 1)) ]; then
		pass "$g: B back to send-only after the hold-off (${took}s, hold ${HOLD} ms)"
	else
		fail "$g: B's join after ${took}s: $(dl_sq B groups "groups.join[name=$g]") (hold $HOLD ms)"
	fi
done

# Comes and goes within the hold-off: one full join, no flapping.
j0=$(dl_fab B joins)
for i in 1 2 3; do
	dl_ctl B sub jt --count 1 --timeout 1 >/dev/null 2>&1
done
dl_wait 10 dl_subs B jt 0 || true
j1=$(dl_fab B joins)
dl_expect "three short subscriptions within the hold-off: one full join (joins $j0 -> $j1)" "$((j1 - j0))" 1
dl_wait 30 join_is B jt sendonly || fail "jt: B not back to send-only after the short subscriptions"
dl_ctl B groups | head -n 4
dl_stop
