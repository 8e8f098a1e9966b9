#!/bin/bash
# SPDX-License-Identifier: MIT
# Only joined groups, by their path (issue 10, the class "a datagram is
# delivered only if it arrived on a group this daemon joined, by the path
# that group uses"). pubd A on rxa subscribes to u1 (QP attached) and has u2
# joined but not listened to (receive: on-demand, no subscriber: detached).
# A group nobody subscribes to is joined send-only (the join type follows
# listening), and a send-only member's host does not take the group's
# traffic at all; so u2 has had a subscriber that left, and a long
# fabric.sendonly_hold_ms keeps it a full member, detached, for part b.
# ud_send (tests/softroce/ud_send.c) on rxb sends well-formed pubd datagrams
# straight to A's QP number with rdmacm's Q_Key:
#   a. naming u1, to A's unicast address;
#   b. naming u2, to u2's group address (A's host joined it, so they reach
#      A's QP even though the QP is not attached to u2: not by u2's path).
# Both must be counted rx_unjoined (the fabric gives them no group slot) and
# never delivered. Then, as a control,
#   c. the same datagrams to u1's group by multicast (QPN 0xffffff) are
#      delivered, all of them.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

UD_SEND=$BUILD/tests/softroce/ud_send
[ -x "$UD_SEND" ] || {
	fail "not built: $UD_SEND"
	exit 0
}
N=20
dl_conf A 192.168.77.1 <<EOF
  receive: on-demand
  sendonly_hold_ms: 600000
groups:
  - {name: u1, address: 239.77.92.1}
  - {name: u2, address: 239.77.92.2}
EOF
dl_pubd A "$W/A.yaml"
dl_ready A 60 || exit 0

dl_ctl A sub u1 --timeout 120 >"$W/A.u1.list" 2>"$W/A.u1.err" &
DL_BG+=("$!")
dl_wait 30 dl_subs A u1 1 || fail "subscriber of u1 on A not there within 30s"
QPN=$(dl_fab A qp_num)
dl_expect "A: u1 attached (subscriber), u2 not (groups_attached)" "$(dl_fab A groups_attached)" 1
join_is() { [ "$(dl_sq A groups "groups.join[name=$1]")" = "$2" ]; }
# u2: a subscriber comes and goes; the group stays a full member (hold-off).
dl_ctl A sub u2 --timeout 1 >/dev/null 2>&1 || true
dl_wait 30 join_is u2 full || fail "u2 not a full member after its subscriber ($(dl_sq A groups 'groups.join[name=u2]'))"
attached_is() { [ "$(dl_fab A groups_attached)" = "$1" ]; }
dl_wait 30 attached_is 1 || fail "u2 still attached after its subscriber left (groups_attached $(dl_fab A groups_attached))"
unjoined() { dl_ctr A rx_unjoined; }
delivered() { dl_sq A groups 'groups.delivered[name=u1]'; }
at_least() { [ "$("$1")" -ge "$2" ]; }

# a. unicast to A's address and QP
base=$(unjoined)
if out=$("$UD_SEND" rxb 192.168.77.2 192.168.77.1 "$QPN" u1 $N 2>&1); then
	pass "a: ud_send to 192.168.77.1 QP $QPN: $out"
else
	fail "a: ud_send failed: $out"
fi
if dl_wait 30 at_least unjoined $((base + N)); then
	pass "a: unicast datagrams counted rx_unjoined ($base -> $(unjoined))"
else
	fail "a: rx_unjoined $(unjoined), want $((base + N)) ($(dl_kv A counters rx_datagrams rx_foreign_group rx_malformed))"
fi

# b. to u2's group address, but to A's QP number: A joined u2, not attached
base=$(unjoined)
if out=$("$UD_SEND" rxb 192.168.77.2 239.77.92.2 "$QPN" u2 $N 2>&1); then
	pass "b: ud_send to 239.77.92.2 QP $QPN: $out"
else
	fail "b: ud_send failed: $out"
fi
if dl_wait 30 at_least unjoined $((base + N)); then
	pass "b: datagrams to a joined but unattached group's address counted rx_unjoined ($base -> $(unjoined))"
else
	fail "b: rx_unjoined $(unjoined), want $((base + N)) ($(dl_kv A counters rx_datagrams rx_foreign_group rx_malformed))"
fi
dl_expect "a, b: nothing delivered (u1, u2)" "$(delivered) $(dl_sq A groups 'groups.delivered[name=u2]')" "0 0"

# c. control: the same datagrams by multicast to u1 are delivered
if out=$("$UD_SEND" rxb 192.168.77.2 239.77.92.1 0xffffff u1 $N 2>&1); then
	pass "c: ud_send to 239.77.92.1 by multicast: $out"
else
	fail "c: ud_send failed: $out"
fi
if dl_wait 30 at_least delivered $N; then
	# a and b were all counted before c was sent: a stray one would show here.
	dl_expect "c: u1's subscriber got exactly the $N multicast ones (groups.delivered)" "$(delivered)" $N
else
	fail "c: delivered $(delivered) of $N multicast datagrams ($(dl_kv A counters rx_datagrams rx_unjoined rx_malformed))"
fi
dl_ctl A status | grep -E '^  (rx_unjoined|rx_foreign_group|rx_datagrams|rx_unknown_group) '
dl_stop
