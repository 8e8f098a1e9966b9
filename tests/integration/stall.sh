#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A receiving pubd that stalls (SIGSTOP) while a stream goes on: its
# socket's buffer fills, the kernel drops the rest, and when it runs again
# the first datagrams after the hole jump far ahead of the last one it
# processed, with hardly any time between the two as pubd sees it. The
# sequence window (core/reasm_push.c) allows a jump by the time a stream was
# silent, so these real datagrams were counted malformed and thrown away,
# as if forged. The kernel says how many it dropped (SO_RXQ_OVFL): a jump
# those drops account for is loss, not forgery. Here:
#  - h2 counts no malformed datagram, and its kernel drops are > 0 (else
#    the case did not happen);
#  - every message h1 published is delivered on h2 or counted dropped there
#    (seq_gap), and no more are dropped than the kernel dropped datagrams
#    (before, the real datagrams after the hole that were thrown away as
#    malformed made their messages seq_gap too: 248 and 198 in one run);
#  - a forged jump from another host is still refused: the source is live
#    at its own address, so it is discarded as rx_wrong_sender (that a jump
#    with no kernel drop behind it is malformed is test_reasm_limits').
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup stall
FORGE=${FORGE:-${BUILD:+$BUILD/tests/hostile/forge_dgram}}

# Messages of one datagram each (no batching), more than h2's socket buffer
# (32 MiB, forced) holds by far, and a hole past the window's 65,536.
N=${IT_STALL_MESSAGES:-300000}
SIZE=1400
RATE=100000
HOLE=150000
it_hosts 88 h1 h2
for h in h1 h2; do
	addr_var="IT_ADDR_$h"
	it_conf_write "$h" "${!addr_var}" <<-EOF
		  heartbeat_ms: 50
		  receive: always
		limits:
		  reassembly_timeout_ms: 300
		groups:
		  - name: s
		    address: 239.88.1.1
	EOF
	it_pubd_start "$h" "$(it_ns "$h")" || it_die "pubd $h did not start"
done
ns1=$(it_ns h1)
addr_var=IT_ADDR_h1
addr1=${!addr_var}
SRC=$(it_q h1 status '.status[0].source_id')
source_val() { # COLUMN: h1's stream on s as h2 counts it
	it_q h2 sources ".sources[] | select(.source == \"$SRC\" and .group == \"s\") | .$1"
}
source_is() { [ "$(source_val "$1")" = "$2" ]; }
publish() { # START COUNT
	ip netns exec "$ns1" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g s --count "$2" --size "$SIZE" --start "$1" ||
		it_fail "publish $1.. on h1"
	it_wait "h1 sent messages $1.." 60 it_group_is h1 s tx_queued 0
}

# The stream is known to h2 before the stall.
publish 0 100
it_wait "h2 has the first 100" 20 source_is delivered 100

# One stream at a steady rate; h2 stops once it is under way and runs again
# while it goes on, so that what arrives after the hole is queued right
# behind what h2's socket kept from before it.
published_at_least() { [ "$(it_group_val h1 s published)" -ge "$1" ]; }
it_bg pub "$ns1" "$ITEST_CLIENT" pub -s "$(it_sock h1)" -g s --count "$N" --size "$SIZE" --start 100 --rate "$RATE"
pub_pid=$IT_BG_PID
it_wait "h1 under way" 30 published_at_least $((100 + N / 10))
kill -STOP "$(it_pid h2)"
it_wait "h1 past h2's socket buffer and the window" 60 published_at_least $((100 + N / 10 + HOLE))
kill -CONT "$(it_pid h2)"
it_reap "$pub_pid" 120
it_eq "the publisher published all $N" "$IT_STATUS" 0
it_wait "h1 sent them" 30 it_group_is h1 s tx_queued 0
total=$((N + 100))
settled() { [ "$(($(source_val delivered) + $(source_val dropped)))" = "$total" ] && source_is missing 0; }
it_wait "h2 accounts for all $total messages" 30 settled
kdrops=$(it_q h2 status '.fabric[] | select(.key == "rx_kernel_drops") | .value')
it_log "h2: kernel drops $kdrops, delivered $(source_val delivered), dropped $(source_val dropped)"
it_check "the kernel dropped datagrams while h2 was stopped ($kdrops)" test "${kdrops:-0}" -gt 0
it_eq "h2: no datagram counted malformed" "$(it_counter h2 rx_malformed)" 0
it_eq "h2: delivered + dropped = published" "$(($(source_val delivered) + $(source_val dropped)))" "$total"
it_eq "h2: h1 counts the same published" "$(it_group_val h1 s published)" "$total"
# The hole was counted as a gap, and nothing more: one datagram a message,
# so no more were lost than the kernel dropped (heartbeats among them).
it_check "h2: dropped $(source_val dropped) messages, no more than the kernel's $kdrops datagrams" \
	test "$(source_val dropped)" -le "$kdrops"
it_eq "h2: drops are seq_gap" \
	"$(it_q h2 drops "[.drops[] | select(.group == \"s\" and .reason != \"seq_gap\") | .count] | add // 0")" 0

# A forged datagram far ahead of the stream, from another port of h1's
# address while h1 still heartbeats the group: discarded, and the stream
# does not move (the kernel's drops are no credit for it).
before=$(it_counter h2 rx_wrong_sender)
was="$(it_counter h2 rx_malformed) $(source_val dropped)"
ip netns exec "$ns1" "$FORGE" --dst 239.88.1.1 --port "${IT_PORT:-7470}" --if "$addr1" \
	--group s --mode seq --count 1 --source "0x$SRC" --seq $((total + 10000000)) || it_fail "forge"
it_wait "the forged jump is discarded" 10 it_counter_is h2 rx_wrong_sender $((before + 1))
it_eq "h2: nothing of it taken (rx_malformed, the stream's drops)" "$(it_counter h2 rx_malformed) $(source_val dropped)" "$was"

it_finish
