#!/bin/bash
# SPDX-License-Identifier: MIT
# Link flap mid-stream: A (rxa on va) publishes a paced stream to B (rxb on
# vb); `ip link set va down` (which also takes vb's carrier, so both ports go
# down), then up. Both daemons must see the port go down and come back, join
# the group again, and the stream must resume at B's subscriber. Afterwards
# the stream balances: A's published == B's delivered + dropped, the loss
# (if any) counted as seq_gap/reasm_timeout in `pubctl drops`.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

COUNT=6000
RATE=500
dl_conf_ab <<EOF
limits:
  reassembly_timeout_ms: 300
groups:
  - {name: l1, address: 239.77.50.1}
EOF
dl_start_ab
# Whatever happens below, the link must be up again for the later cases.
trap 'ip link set va up; dl_teardown' EXIT

list=$W/B.l1.list
dl_ctl B sub l1 --timeout 240 >"$list" 2>"$W/B.sub.err" &
subpid=$!
DL_BG+=($subpid)
dl_wait 30 dl_subs B l1 1 || fail "subscriber of l1 on B not there within 30s"

dl_ctl A pub l1 --count $COUNT --rate $RATE --size 100 >"$W/pub.out" 2>&1 &
pubpid=$!
DL_BG+=($pubpid)

# What B delivered to its subscriber (one query; counting the list's lines
# would be another exec per poll).
received() { dl_sq B groups 'groups.delivered[name=l1]'; }
at_least() { [ "$(received)" -ge "$1" ]; }
if dl_wait 60 at_least 300; then
	pass "stream flowing before the flap: B's subscriber has $(received) messages"
else
	fail "B's subscriber got only $(received) messages in 60s before the flap"
fi

# Down.
n_down=$(received)
dl_log "ip link set va down at $n_down messages"
ip link set va down
port_is() { [ "$(dl_fab "$1" port_state)" = "$2" ]; }
for d in A B; do
	if dl_wait 30 port_is $d down; then
		pass "pubd $d saw its port go down ($(dl_kv $d fabric port_err_events groups_up))"
	else
		fail "pubd $d's port_state is '$(dl_fab $d port_state)' 30s after va went down"
	fi
done
dl_log "both ports down"
ip -br link show va
ip -br link show vb

# Up.
n_up=$(received)
dl_log "ip link set va up at $n_up messages"
ip link set va up
rejoined() {
	local st rj jn
	{
		read -r st
		read -r rj
		read -r jn
	} <<<"$(dl_sq "$1" status 'fabric.value[key=port_state]' 'fabric.value[key=rejoins]' 'fabric.value[key=groups_up]')"
	[ "$st" = ACTIVE ] && [ "${rj:-0}" -ge 1 ] && [ "$jn" = 1 ] && dl_all_joined "$1"
}
for d in A B; do
	if dl_wait 60 rejoined $d; then
		pass "pubd $d rejoined after the flap: port ACTIVE, group l1 joined ($(dl_kv $d fabric rejoins port_active_events))"
	else
		fail "pubd $d did not rejoin within 60s: $(dl_kv $d fabric port_state rejoins groups_up)"
	fi
done
n_rejoined=$(received)
dl_log "both rejoined at $n_rejoined messages; UD QPs (rdma resource show qp):"
rdma resource show qp 2>&1 | grep -w UD
if dl_wait 30 at_least $((n_rejoined + 100)); then
	pass "traffic resumed after the flap: B's subscriber went from $n_rejoined to $(received) messages"
else
	fail "traffic did not resume: B's subscriber at $(received), was $n_rejoined when both had rejoined"
fi

if wait $pubpid; then
	pass "A's publisher finished: $(cat "$W/pub.out")"
else
	fail "A's publisher failed: $(cat "$W/pub.out")"
fi
published=$(dl_sq A groups 'groups.published[name=l1]')
settled() {
	local inf mis del drp
	read -r inf mis del drp <<<"$(dl_stream B "$SRC_A" l1)"
	[ "$inf $mis" = "0 0" ] && [ $((del + drp)) = "$published" ]
}
dl_wait 30 settled || fail "B's stream from A did not settle within 30s"
dl_ctl A status | grep -E '^  (port_state|port_err_events|port_active_events|joins|rejoins|multicast_errors|groups_up|tx_datagrams|tx_completion_errors) '
dl_ctl B sources
dl_ctl B drops

read -r _ _ del drp <<<"$(dl_stream B "$SRC_A" l1)"
read -r named reasons <<<"$(dl_drops B "$SRC_A/l1")"
if [ "$published" = "$COUNT" ] && [ -n "$del" ] && [ $((del + drp)) -eq "$COUNT" ] && [ "$named" = "$drp" ]; then
	if [ "$drp" -gt 0 ]; then
		pass "the gap is counted: published $COUNT = delivered $del + dropped $drp ($reasons)"
	else
		pass "published $COUNT = delivered $del + dropped 0: no message lost, back-pressure held them across the flap"
	fi
else
	fail "identity: published '$published' (want $COUNT) vs B delivered '$del' + dropped '$drp'; drops rows '$named' ($reasons)"
fi

# The subscriber got exactly what B delivered for it, once each.
kill -TERM $subpid
wait $subpid
dups=$(awk '{print $2, $3}' "$list" | sort | uniq -d | wc -l)
lines=$(wc -l <"$list")
if [ "$lines" = "$del" ] && [ "$dups" = 0 ]; then
	pass "B's subscriber got the $del delivered messages, no duplicates"
else
	fail "B's subscriber got $lines messages ($dups duplicated), B delivered '$del'"
fi
dl_stop
