# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Hostile cases (see cases.sh for the conventions): one function case_NAME
# each; case.sh sources this file and run.sh lists its cases.

# ---- class: a forger of a live source's id (THREATS.md rules 2 and 3) ----
# A source's id is in every datagram it sends, so any host that hears the
# group can send a heartbeat and a message under it, numbered 60,000 ahead
# (within the jump a stream may make). Taken, the jump cut the stream off:
# in the audit, of 40,000 messages published on a repair group 6,495 were
# delivered and 357,570 counted unrecovered (plain groups: the same as
# seq_gap), every real message after the jump stale. A source's datagrams
# all leave by one socket; from another address while it is still heard,
# they are now discarded as rx_wrong_sender. The honest stream (from one
# port) runs on, the forger (from another) interrupts it halfway.
h_forged_jump() { # REPAIR: on or off
	h_pubd d "heartbeat_ms: 500" <<-EOF
		$(h_groups)
		    repair: $1
	EOF
	local src=0x686f6e657374 n=20000 recv stale lost
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --count $((2 * n)) --timeout-ms 60000
	it_wait "a subscriber" 20 it_subscribers_at_least d h 1 || return
	h_forge --sport 47101 --dst "$H_GROUP_ADDR" --group h --mode seq --source $src --count $n --rate 40000 >/dev/null
	h_forge --sport 47102 --dst "$H_GROUP_ADDR" --group h --mode heartbeat --source $src --seq $((n + 60000)) >/dev/null
	h_forge --sport 47102 --dst "$H_GROUP_ADDR" --group h --mode seq --source $src --seq $((n + 60000)) >/dev/null
	h_forge --sport 47101 --dst "$H_GROUP_ADDR" --group h --mode seq --source $src --seq $n --count $n --rate 40000 >/dev/null
	it_wait "the honest stream taken" 30 it_holds "[ \"\$(it_group_val d h received)\" -ge $((2 * n)) ]"
	h_settled d rx_taken >/dev/null
	recv=$(it_group_val d h received)
	stale=$(it_q d drops '[.drops[] | select(.scope == "group" and .reason == "stale") | .count] | add // 0')
	lost=$(it_q d drops '[.drops[] | select(.scope == "group" and .unit == "messages") | .count] | add // 0')
	h_fig "repair $1: $((2 * n)) honest messages, a forged heartbeat and message 60,000 ahead from another port halfway: received $recv, delivered $(it_group_val d h delivered), messages dropped $lost, stale datagrams $stale, rx_wrong_sender $(it_counter d rx_wrong_sender)"
	it_eq "every honest message received, the forged one not" "$recv" $((2 * n))
	it_eq "no message counted lost" "$lost" 0
	it_eq "no honest datagram stale" "$stale" 0
	it_eq "the forger's 2 datagrams discarded" "$(it_counter d rx_wrong_sender)" 2
}

case_c_forged_jump_plain() { h_forged_jump off; }

case_c_forged_jump_repair() { h_forged_jump on; }
