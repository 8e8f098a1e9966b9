# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Hostile cases (see cases.sh for the conventions): one function case_NAME
# each; case.sh sources this file and run.sh lists its cases.

# ---- class: per-stream state a peer grows (THREATS.md rule 1) ----
# Invented sources on a repair group, each sending 8-byte messages 0, 4096,
# 2 * 4096, ... 16 * 4096: every stream holds 16 messages back for order
# across a span of 65,536 sequence numbers (all a stream's jump budget lets
# a peer skip at once; the audit sent them 65,536 apart, 670 MiB of RSS for
# 300 sources, before that budget). What holding them takes is charged to
# limits.reassembly_budget as memory (1 MiB here), not sized by the span (a
# ring of a slot per seq: 512 KiB a stream, 150 MiB for 300). Whatever does not fit is released out of order and
# counted: the subscriber gets every message, none dropped.
case_c_order_hold_span() {
	h_pubd d "heartbeat_ms: 100" <<-EOF
		limits:
		  reassembly_budget: 1MiB
		  max_message_size: 64KiB
		$(h_groups)
		    repair: on
	EOF
	local n=300 k=17 r0 peak v taken
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --count 100000000 --timeout-ms 60000
	it_wait "a subscriber" 20 it_subscribers_at_least d h 1
	r0=$(h_rss "$H_PID")
	peak=$r0
	# RSS sampled while the attack runs and until the daemon has taken it.
	(while kill -0 "$H_PID" 2>/dev/null; do
		h_rss "$H_PID"
		sleep 0.1
	done >"$IT_WORK/rss.txt") &
	local sampler=$!
	h_forge --dst "$H_GROUP_ADDR" --group h --mode span --per $k --seq 4096 --count $((n * k)) --rate 20000 >/dev/null ||
		it_fail "forge_dgram --mode span"
	taken=$(h_settled d rx_taken)
	kill "$sampler" 2>/dev/null
	wait "$sampler" 2>/dev/null
	for v in $(cat "$IT_WORK/rss.txt") "$(h_rss "$H_PID")"; do
		[ "$v" -gt "$peak" ] && peak=$v
	done
	h_fig "$n forged sources x $k 8-byte messages (seq 0, then 4096 apart) on a repair group, reassembly_budget 1 MiB: $taken datagrams taken, RSS $r0 -> peak $peak KiB (+$((peak - r0)) KiB); group received $(it_group_val d h received), delivered $(it_group_val d h delivered), sub_dropped $(it_group_val d h sub_dropped)"
	it_check "pubd's RSS grew by less than 24 MiB under the attack" test $((peak - r0)) -lt 24576
	it_eq "every forged message taken" "$(it_group_val d h received)" $((n * k))
	# The gaps go unrecovered (nobody answers the NAKs); what was held
	# follows, and published = delivered + dropped holds for the group.
	it_wait "every message held delivered" 60 it_group_is d h delivered $((n * k))
	h_fig "once the gaps were given up: delivered $(it_group_val d h delivered), sub_dropped $(it_group_val d h sub_dropped), unrecovered $(it_group_val d h unrecovered), RSS $(h_rss "$H_PID") KiB"
	it_eq "no message dropped for a subscriber" "$(it_group_val d h sub_dropped)" 0
	it_eq "the daemon is alive" "$(kill -0 "$H_PID" && echo up)" up
}

# ---- class: work a peer's held streams add to everyone's messages (THREATS.md rule 3) ----
# 4,000 invented sources on a repair group with a subscriber each send
# messages 0 and 4096: every one holds a message back behind its gap (its
# NAKs go unanswered for a minute here). Each receive batch looked at every
# holding stream, and finding a stream walked them all: an honest stream's
# datagrams cost pubd 10-27 times their CPU (0.11 s -> 1.1-3.0 s in the
# audit). Streams are now found by a keyed hash and a release looks only at
# those reassembly touched: the same stream costs what it did before the
# attack.
case_c_order_held_streams() {
	h_pubd d "heartbeat_ms: 100" <<-EOF
		limits:
		  max_message_size: 64KiB
		$(h_groups)
		    repair: {nak_backoff_ms: 10000, nak_interval_ms: 60000, nak_retries: 1}
	EOF
	local alone held n=300000 received delivered order_held
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --count 100000000 --timeout-ms 300000
	it_wait "a subscriber" 20 it_subscribers_at_least d h 1 || return
	alone=$(h_forge_cpu --dst "$H_GROUP_ADDR" --group h --mode seq --source 0x706c61696e --count $n --rate 40000)
	h_forge --dst "$H_GROUP_ADDR" --group h --mode span --per 2 --seq 4096 --count 8000 --rate 30000 >/dev/null
	h_settled d rx_taken >/dev/null
	held=$(h_forge_cpu --dst "$H_GROUP_ADDR" --group h --mode seq --source 0x6761707079 --count $n --rate 40000)
	# What pubd took is written to the subscriber or dropped for it
	# (sub_overflow, when a loaded host makes it lag), or held: once its
	# queue drained, those add up.
	# shellcheck disable=SC2016 # evaluated on each try
	it_wait "what was received is delivered, dropped for the subscriber or held" 30 it_holds \
		'[ "$(it_group_val d h received)" = "$(($(it_group_val d h delivered) + $(it_group_val d h sub_dropped) + $(it_q d status ".status[0].order_held")))" ]'
	received=$(it_group_val d h received)
	delivered=$(($(it_group_val d h delivered) + $(it_group_val d h sub_dropped)))
	order_held=$(it_q d status '.status[0].order_held')
	h_fig "$n datagrams of one stream: pubd CPU $alone ticks (1/100 s) alone, $held ticks while 4,000 sources held a message each behind a gap; received $received, delivered or dropped for the subscriber $delivered, pubctl status order_held $order_held ($(it_q d status '.status[0].order_held_bytes') bytes)"
	# The attack's messages are still held (their gaps still open): the
	# case measured what it says, and pubctl shows them.
	it_eq "pubctl status shows the 4,000 messages held for order" "$order_held" 4000
	it_eq "received = delivered + dropped for the subscriber + held" "$received" $((delivered + order_held))
	it_check "held streams cost another stream's datagrams little ($held ticks against $alone)" \
		test "$held" -le $((alone * 5 / 2 + 30))
}
