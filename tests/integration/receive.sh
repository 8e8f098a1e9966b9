#!/bin/bash
# SPDX-License-Identifier: MIT
#
# fabric.receive: on-demand (the default). A daemon takes a group's traffic
# from the fabric only while a local client subscribes to it:
#  - with no subscriber, the group is joined (it can publish) but the kernel
#    holds no membership for it and nothing it carries is received, not even
#    the publishing daemon's own datagrams looped back;
#  - the first SUBSCRIBE starts receiving before it is answered, the last
#    one leaving stops it;
#  - what was published while nobody listened is nobody's loss here: no
#    seq_gap is counted for it, neither at the first subscribe nor when a
#    stream resumes after a pause in listening;
#  - receive: always (by reload) receives with no subscriber at all.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup receive

G=239.83.1.1
it_hosts 83 h1 h2
for h in h1 h2; do
	addr_var="IT_ADDR_$h"
	it_conf_write "$h" "${!addr_var}" <<-EOF
		  heartbeat_ms: 50
		groups:
		  - name: g1
		    address: $G
	EOF
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start"
done
ns1=$(it_ns h1)
ns2=$(it_ns h2)
SRC_h1=$(it_q h1 status '.status[0].source_id')

# The kernel's view: is the group joined on h2's interface?
member() { ip -n "$ns2" maddr show dev eth0 | grep -cE "inet +$G\$" || true; }
member_is() { [ "$(member)" = "$1" ]; }
source_val() { # COLUMN: h1's stream on g1 as h2 counts it
	it_q h2 sources ".sources[] | select(.source == \"$SRC_h1\" and .group == \"g1\") | .$1"
}
source_is() { [ "$(source_val "$1")" = "$2" ]; }
# Nothing of the stream still open: a hole in the sequence is counted as
# seq_gap only when its reassembly deadline passes.
source_settled() { source_is missing 0 && source_is inflight 0; }
publish() { # START COUNT
	ip netns exec "$ns1" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g g1 --count "$2" --size 100 --start "$1" ||
		it_fail "publish $1.. on h1"
	it_wait "h1 sent messages $1.." 20 it_group_is h1 g1 tx_queued 0
}
subscribe() { # NAME COUNT
	it_bg "$1" "$ns2" "$ITEST_CLIENT" sub -s "$(it_sock h2)" -g g1 --count "$2" --timeout-ms 60000 \
		--log "$IT_WORK/$1.log"
	SUB_PID=$IT_BG_PID
	it_wait "subscriber $1 on h2" 20 it_subscribers_at_least h2 g1 1 || it_die "no subscriber on h2"
}

it_eq "status shows the policy" "$(it_q h2 status '.status[0].receive')" on-demand
for h in h1 h2; do
	it_eq "$h: g1 joined" "$(it_group_val "$h" g1 joined)" 1
	it_eq "$h: g1 not received without a subscriber" "$(it_group_val "$h" g1 receiving)" 0
done
it_eq "h2's kernel holds no membership of $G" "$(member)" 0

# Nobody listens: 20 messages go out and are taken by no one.
publish 0 20
it_eq "h1 published 20" "$(it_group_val h1 g1 published)" 20
it_eq "h1 did not receive its own datagrams back (rx_self)" "$(it_counter h1 rx_self)" 0
it_eq "h2 received nothing" "$(it_group_val h2 g1 received)" 0

# First subscriber: receiving starts before the SUBSCRIBE is answered.
subscribe sub1 20
it_eq "h2: g1 received once subscribed" "$(it_group_val h2 g1 receiving)" 1
it_eq "h2's kernel joined $G" "$(member)" 1
publish 20 20
it_reap "$SUB_PID" 30
it_eq "sub1 got its 20 messages" "$IT_STATUS" 0
it_eq "sub1 got indices 20..39, intact" \
	"$(awk '$1 == "msg" && $7 == "OK" { print $6 }' "$IT_WORK/sub1.log" | sort -n | uniq | sed -n '1p;$p' | paste -sd' ')" \
	"20 39"
it_wait "h2 counts h1's stream from 20 on: 20 delivered" 20 source_is delivered 20
it_wait "h2 has settled h1's stream" 20 source_settled
it_eq "no seq_gap for 0..19, sent before h2 listened" "$(source_val dropped)" 0

# The subscriber is gone: receiving stops; 20 more go out unheard.
it_wait "h2 stops receiving g1 with its last subscriber" 20 it_group_is h2 g1 receiving 0
it_wait "h2's kernel left $G" 20 member_is 0
# Its row in pubctl sources stays as it was, though reassembly let the
# stream go: where it had got to, and idle for as long as it is not heard
# (it showed next_seq 0 and idle_ms 0, as if just heard).
it_eq "h2 still shows where h1's stream had got to" "$(source_val next_seq)" 40
# shellcheck disable=SC2034 # read by it_holds' eval
idle0=$(source_val idle_ms)
it_wait "its idle time grows" 10 it_holds '[ "$(source_val idle_ms)" -gt "$((idle0 + 100))" ]'
publish 40 20

# Listening again: the stream resumes where it is, not where h2 left it.
subscribe sub2 20
publish 60 20
it_reap "$SUB_PID" 30
it_eq "sub2 got its 20 messages" "$IT_STATUS" 0
it_eq "sub2 got indices 60..79, intact" \
	"$(awk '$1 == "msg" && $7 == "OK" { print $6 }' "$IT_WORK/sub2.log" | sort -n | uniq | sed -n '1p;$p' | paste -sd' ')" \
	"60 79"
it_wait "h2 delivered 40 of h1's stream in all" 20 source_is delivered 40
it_wait "h2 has settled h1's stream" 20 source_settled
it_eq "no seq_gap for 40..59, sent while h2 did not listen" "$(source_val dropped)" 0
it_eq "h2 g1: nothing dropped" "$(it_group_val h2 g1 dropped)" 0
it_eq "h1 still received nothing of its own" "$(it_counter h1 rx_self)" 0

# receive: always, by reload: received with no subscriber.
it_wait "h2 stops receiving again" 20 it_group_is h2 g1 receiving 0
sed -i 's/^  heartbeat_ms: 50$/&\n  receive: always/' "$(it_conf h2)"
it_ctl h2 reload >/dev/null || it_fail "pubctl reload"
it_eq "status shows receive always" "$(it_q h2 status '.status[0].receive')" always
it_eq "h2: g1 received with no subscriber" "$(it_group_val h2 g1 receiving)" 1
it_eq "h2's kernel joined $G" "$(member)" 1
publish 80 10
it_wait "h2 delivers to nobody but receives 10 more" 20 it_group_is h2 g1 received 50

# Stopping with two subscribers that do not read (their sockets full, so
# pubd cannot close them at once): their subscriptions go only after the
# groups are left, and must not try to stop (or start) receiving then.
mkfifo "$IT_WORK/go"
for s in s1 s2; do
	it_bg "$s" "$ns1" bash -c "exec \"\$0\" \"\$@\" <\"$IT_WORK/go\"" "$ITEST_CLIENT" sub -s "$(it_sock h1)" \
		-g g1 --hold --timeout-ms 60000 --log "$IT_WORK/$s.log"
done
exec {go}>"$IT_WORK/go"
it_wait "two subscribers on h1" 20 it_subscribers_at_least h1 g1 2
ip netns exec "$ns1" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g g1 --count 3000 --size 1000 ||
	it_fail "publish 3000 on h1"
it_pubd_stop h1
exec {go}>&-
it_eq "h1's log has no receiving errors at shutdown" "$(grep -c 'receiving:' "$IT_WORK/h1.log")" 0

# receive: always on a host that allows fewer memberships than there are
# groups: pubd names each group it cannot receive, the kernel setting to
# raise, and how many failed, and exits 1 (it said only "exiting:
# Input/output error" at the end, after the joins' own lines).
it_host_lo h3
ip netns exec "$(it_ns h3)" sysctl -qw net.ipv4.igmp_max_memberships=2 || it_die "sysctl in h3"
it_conf_write h3 - <<-EOF
	  receive: always
	groups:
	  - name: m1
	    address: 239.83.2.1
	  - name: m2
	    address: 239.83.2.2
	  - name: m3
	    address: 239.83.2.3
EOF
ip netns exec "$(it_ns h3)" timeout 30 "$PUBD" -c "$(it_conf h3)" >"$IT_WORK/h3.log" 2>&1
it_eq "pubd exits 1 when a group cannot receive under receive: always" "$?" 1
it_check "the failed join names the setting to raise" grep -q 'join 239.83.2.3 .*igmp_max_memberships' \
	"$IT_WORK/h3.log"
it_check "the group that cannot receive is named" grep -q 'group m3 (239.83.2.3): cannot start receiving' \
	"$IT_WORK/h3.log"
it_check "the count is said before pubd exits" \
	grep -q '1 of 3 groups could not be joined or could not start receiving' "$IT_WORK/h3.log"
it_finish
