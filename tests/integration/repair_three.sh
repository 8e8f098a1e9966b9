#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2016 # it_holds conditions are single-quoted: evaluated on each try
#
# Loss repair with three receivers and a dead one, on the udp fabric: h1
# publishes on repair group r; h2, h3 and h4 each lose 5% of the group's
# datagrams by their own nftables numgen rule (so each misses different
# ones); h3 also the stream's start (its first heartbeat and message).
# Round 1: all three get every message, intact, in order. Round 2: h4's
# pubd is stopped (SIGSTOP) while h2 and h3 go on: they still get
# everything; h1's repair work over the round stays within repair.rate.
# Then h4 resumes: its backlog's gaps have aged out of h1's window (max_age_ms 1000), so they
# are answered GONE and counted unrecovered, exactly: delivered +
# unrecovered = published, nothing else dropped; h1's repair bytes while
# h4 catches up stay within repair.rate and the per-asker peer_rate.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup repair_three
command -v nft >/dev/null || it_die "needs nft (package nftables)"

RATE=$((2 << 20)) PEER_RATE=$((1 << 20))
it_hosts 81 h1 h2 h3 h4
for h in h1 h2 h3 h4; do
	addr_var="IT_ADDR_$h"
	it_conf_write "$h" "${!addr_var}" <<-EOF
		  heartbeat_ms: 50
		limits:
		  # A partial waits for repairs well past their rate's pace: round 1's
		  # 5% of 4 MB to each of three receivers is ~0.3 s of repair at
		  # repair.rate, and a partial given up on is counted unrecovered.
		  reassembly_timeout_ms: 2000
		  reassembly_budget: 256MiB
		  reassembly_inflight: 4096 # partial messages wait for repair (as in repair.sh)
		# A gap is asked for nak_retries times, nak_interval_ms apart: the
		# default 8 x 50 ms left 0.1-0.2 s over that ~0.3 s, and a late
		# turn on two busy cores cost CI a few messages as unrecovered
		# (repairs then came "stale"). 20 leave a second.
		groups:
		  - {name: r, address: 239.81.1.1, repair: {window: 16MiB, max_age_ms: 1000, rate: $RATE, peer_rate: $PEER_RATE, nak_interval_ms: 50, nak_retries: 20}}
	EOF
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start"
done
SRC=$(it_q h1 status '.status[0].source_id')
for h in h2 h3 h4; do
	ns=$(it_ns "$h")
	ip netns exec "$ns" nft add table inet loss || it_die "nft table"
	ip netns exec "$ns" nft add chain inet loss in '{ type filter hook input priority 0; }' || it_die "nft chain"
	if [ "$h" = h3 ]; then
		# h3 also loses the stream's start: the heartbeat announcing it
		# (the first 72-byte datagram: UDP header, pubd header with token
		# and age) and the first other datagram (message 0, at least),
		# having listened for less than the grace after which any new
		# stream counts from 0: the heartbeat after message 0 says the
		# stream began since h3 listened, so h3 asks for it.
		ip netns exec "$ns" nft add rule inet loss in udp dport "${IT_PORT:-7470}" ip daddr 239.81.0.0/16 \
			udp length 72 numgen inc mod 1000000000 '<' 1 counter drop || it_die "nft rule"
		ip netns exec "$ns" nft add rule inet loss in udp dport "${IT_PORT:-7470}" ip daddr 239.81.0.0/16 \
			udp length != 72 numgen inc mod 1000000000 '<' 1 counter drop || it_die "nft rule"
		# Its random loss spares heartbeats: losing the one after message
		# 0 as well (5%) would leave message 0 counted, not delivered.
		ip netns exec "$ns" nft add rule inet loss in udp dport "${IT_PORT:-7470}" ip daddr 239.81.0.0/16 \
			udp length != 72 numgen random mod 100 '<' 5 counter drop || it_die "nft rule"
	else
		ip netns exec "$ns" nft add rule inet loss in udp dport "${IT_PORT:-7470}" ip daddr 239.81.0.0/16 \
			numgen random mod 100 '<' 5 counter drop || it_die "nft rule"
	fi
	it_bg "sub-$h" "$ns" "$ITEST_CLIENT" sub -s "$(it_sock "$h")" -g r --log "$IT_WORK/sub-$h.log" \
		--timeout-ms $((IT_LIMIT * 1000))
	it_wait "subscriber on $h" 20 it_subscribers_at_least "$h" r 1 || it_die "no subscriber"
done

N=1000 SIZE=4096
publish() { # START
	"$ITEST_CLIENT" pub -s "$(it_sock h1)" -g r --count $N --size $SIZE --start "$1" >/dev/null ||
		it_fail "publisher on h1"
}
src_val() { # HOST FIELD
	it_q "$1" sources ".sources[] | select(.source == \"$SRC\" and .group == \"r\") | .$2"
}
settled() { [ "$(src_val "$1" delivered)" ] && [ "$(($(src_val "$1" delivered) + $(src_val "$1" dropped)))" = "$2" ]; }
sub_got() { awk '$1 == "msg"' "$IT_WORK/sub-$1.log" | wc -l; }
in_order() { awk '$1 == "msg" { if ($4 + 0 < last) o++; last = $4 + 0 } END { print o + 0 }' "$IT_WORK/sub-$1.log"; }
nft_dropped() { ip netns exec "$(it_ns "$1")" nft list chain inet loss in | grep -o 'counter packets [0-9]*' | awk '{ n += $3 } END { print n }'; }
start_dropped() { ip netns exec "$(it_ns h3)" nft list chain inet loss in | grep -o 'counter packets [0-9]*' | head -n2 | awk '{print $3}' | paste -sd+; }
repair_bytes() { it_group_val h1 r repair_bytes; }

# ---- round 1: three receivers, each losing its own 5% ----
# h3 past the heartbeat period of slack a stream's age is given (see above).
it_wait "h3 receiving for over a heartbeat period" 10 it_holds '[ "$(it_group_val h3 r receiving_ms)" -gt 50 ]'
publish 0
for h in h2 h3 h4; do
	it_wait "$h accounts for round 1" 60 settled "$h" $N || it_log "$h: $(it_ctl "$h" --json sources)"
	it_wait "$h's subscriber read round 1" 30 it_holds '[ "$(sub_got "$h")" -ge $N ]'
	it_log "$h drops: $(it_ctl "$h" --json drops | jq -c "[.drops[] | select(.count > 0)]")"
	it_log "round 1 $h: nft dropped $(nft_dropped "$h"), delivered $(src_val "$h" delivered)," \
		"repaired $(src_val "$h" repaired), naks_sent $(src_val "$h" naks_sent)"
	it_eq "$h: every message of round 1" "$(src_val "$h" delivered)" $N
	it_check "$h: lost and repaired some" [ "$(src_val "$h" repaired)" -gt 0 ]
	it_eq "$h: in order" "$(in_order "$h")" 0
done
it_eq "h3 lost the stream's start heartbeat and first datagram" "$(start_dropped)" "1+1"

# ---- round 2: h4 stopped; h2 and h3 go on ----
kill -STOP "$(it_pid h4)"
b0=$(repair_bytes) t0=$(date +%s%N)
publish $N
for h in h2 h3; do
	it_wait "$h accounts for round 2" 60 settled "$h" $((2 * N))
	it_eq "$h: every message of both rounds" "$(src_val "$h" delivered)" $((2 * N))
	it_eq "$h: nothing unrecovered" "$(src_val "$h" unrecovered)" 0
	it_wait "$h's subscriber read round 2" 30 it_holds '[ "$(sub_got "$h")" -ge $((2 * N)) ]'
	it_eq "$h: in order" "$(in_order "$h")" 0
done
b1=$(repair_bytes) t1=$(date +%s%N)
cap=$((RATE / 10 + RATE * (t1 - t0) / 1000000000 + 65536))
it_log "round 2 with h4 stopped: h1 sent $((b1 - b0)) repair bytes in $(((t1 - t0) / 1000000)) ms (cap $cap)"
it_check "h1's repair bytes within repair.rate" [ $((b1 - b0)) -le $cap ]

# ---- h4 resumes: its gaps have aged out of the window (max_age_ms 1000) ----
sleep 1.5 # let round 2 age out of h1's window (max_age_ms 1000): the point of the case
kill -CONT "$(it_pid h4)"
t2=$(date +%s%N) b2=$(repair_bytes)
it_wait "h4 accounts for both rounds" 60 settled h4 $((2 * N)) || it_log "h4: $(it_ctl h4 --json sources)"
b3=$(repair_bytes) t3=$(date +%s%N)
d4=$(src_val h4 delivered) u4=$(src_val h4 unrecovered) x4=$(src_val h4 dropped)
it_log "h4 resumed: delivered $d4, unrecovered $u4, dropped $x4; h1: gone_sent $(it_group_val h1 r gone_sent)," \
	"repair bytes $((b3 - b2)) in $(((t3 - t2) / 1000000)) ms, naks_ignored_peer $(it_group_val h1 r naks_ignored_peer)," \
	"naks_ignored_rate $(it_group_val h1 r naks_ignored_rate)"
it_check "h4 lost messages while stopped" [ "$u4" -gt 0 ]
it_eq "h4: published = delivered + unrecovered" $((d4 + u4)) $((2 * N))
it_eq "h4: every drop is unrecovered" "$x4" "$u4"
cap=$((PEER_RATE / 10 + PEER_RATE * (t3 - t2) / 1000000000 + 65536))
it_check "h1's repair bytes while h4 caught up within peer_rate ($cap)" [ $((b3 - b2)) -le $cap ]
it_wait "h4's subscriber read what was delivered" 30 it_holds '[ "$(sub_got h4)" -ge "$d4" ]'
it_eq "h4: in order" "$(in_order h4)" 0
it_eq "h2 unaffected: nothing dropped" "$(src_val h2 dropped)" 0
it_eq "h3 unaffected: nothing dropped" "$(src_val h3 dropped)" 0

it_ctl h1 group r
it_finish
