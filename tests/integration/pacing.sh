#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Sender pacing on the udp fabric: h1 publishes N messages of B bytes with
# `pubctl pub --count N --size B` on a group with `rate:`, h2's subscriber
# takes them from the fabric. The time until h2 has all N must match the
# rate (whole datagrams, pubd's 48-byte header included, less the bucket's
# 5 ms depth) within +-20%, and every message must arrive: the publisher
# is held back, not dropped. An unpaced group published on at the same time
# must be done long before the paced one.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup pacing

N=${IT_PACING_COUNT:-3000}
B=1000
RATE=1048576 # 1MiB below
it_hosts 86 h1 h2
for h in h1 h2; do
	addr_var="IT_ADDR_$h"
	# Subscriber queues hold the whole run: the case is about pacing, and
	# an unpaced burst can outrun a subscriber on a loaded two-core
	# machine (sub_overflow, counted: a CI-like run lost 10 that way).
	it_conf_write "$h" "${!addr_var}" <<-EOF
		limits:
		  subscriber_queue: $((N + 1024))
		groups:
		  - name: paced
		    address: 239.86.1.1
		    rate: 1MiB
		  - name: free
		    address: 239.86.1.2
	EOF
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start"
done
ns1=$(it_ns h1)
ns2=$(it_ns h2)

it_eq "pubctl groups shows the configured rate" "$(it_q h1 groups '.groups[] | select(.name == "paced") | .rate')" \
	"$RATE"
it_eq "an unpaced group shows rate 0" "$(it_group_val h1 free rate)" 0

it_bg sub_paced "$ns2" "$PUBCTL" -s "$(it_sock h2)" sub paced --count "$N" --timeout 60 --output "$IT_WORK/paced.bin"
sub_paced=$IT_BG_PID
it_bg sub_free "$ns2" "$PUBCTL" -s "$(it_sock h2)" sub free --count "$N" --timeout 60 --output "$IT_WORK/free.bin"
sub_free=$IT_BG_PID
it_wait "h2 subscribed to both" 20 it_subscribers_at_least h2 paced 1 || it_die "no subscriber"
it_wait "h2 subscribed to both" 20 it_subscribers_at_least h2 free 1 || it_die "no subscriber"
it_wait "h2 receives both groups" 20 it_group_is h2 free receiving 1 || it_die "h2 not receiving"

t0=$(date +%s%N)
it_bg pub_paced "$ns1" "$PUBCTL" -s "$(it_sock h1)" pub paced --count "$N" --size "$B"
pub_paced=$IT_BG_PID
it_bg pub_free "$ns1" "$PUBCTL" -s "$(it_sock h1)" pub free --count "$N" --size "$B"
pub_free=$IT_BG_PID
it_reap "$sub_free" 60
t_free=$(($(date +%s%N) - t0))
it_eq "the unpaced group's subscriber got all $N" "$IT_STATUS" 0
it_reap "$sub_paced" 60
t_paced=$(($(date +%s%N) - t0))
it_eq "the paced group's subscriber got all $N" "$IT_STATUS" 0
it_reap "$pub_paced" 10
it_eq "pubctl pub on the paced group succeeded" "$IT_STATUS" 0
it_reap "$pub_free" 10
it_eq "pubctl pub on the unpaced group succeeded" "$IT_STATUS" 0

# What the bucket lets through by the last datagram: all of them, header
# included, less its depth (5 ms at the rate).
want=$(((N * (B + 48) - RATE / 200) * 1000 / RATE)) # ms
got=$((t_paced / 1000000))
it_log "paced: $N x $B B in $got ms (rate $RATE B/s: want $want ms); unpaced alongside: $((t_free / 1000000)) ms"
in_range() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
it_check "paced delivery took the rate's time within 20% ($got ms, want $want ms)" \
	in_range "$got" $((want * 80 / 100)) $((want * 120 / 100))
it_check "the unpaced group was not held behind the paced one ($((t_free / 1000000)) ms)" \
	[ "$t_free" -lt $((t_paced / 3)) ]
it_eq "every paced byte arrived" "$(stat -c %s "$IT_WORK/paced.bin")" $((N * B))
it_eq "h1 published $N on the paced group" "$(it_group_val h1 paced published)" "$N"
it_eq "h2 delivered $N on the paced group" "$(it_group_val h2 paced delivered)" "$N"
it_eq "h1 dropped nothing" "$(it_q h1 drops '[.drops[].count] | add // 0')" 0
it_eq "h2 dropped nothing" "$(it_q h2 drops '[.drops[].count] | add // 0')" 0
it_check "the paced group waited for tokens" [ "$(it_q h1 group paced '.group[0].paced_waits')" -gt 0 ]
it_eq "the unpaced group never did" "$(it_group_val h1 free paced_waits)" 0
it_ctl h1 group paced
it_ctl h1 metrics >"$IT_WORK/metrics.txt" || it_fail "pubctl metrics"
it_check "the metrics carry the rate" \
	grep -qx "pubd_group_rate_bytes_per_second{group=\"paced\"} $RATE" "$IT_WORK/metrics.txt"
it_check "the metrics count the waits" \
	grep -qE "^pubd_group_paced_waits_total\{group=\"paced\"\} [1-9][0-9]*$" "$IT_WORK/metrics.txt"

# A reload takes the rate off: the next run is not paced.
sed -i 's/rate: 1MiB/rate: off/' "$(it_conf h1)"
it_ctl h1 reload >/dev/null || it_fail "reload"
it_eq "after reload the rate is off" "$(it_group_val h1 paced rate)" 0
it_finish
