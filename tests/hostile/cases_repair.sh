# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Hostile cases against loss repair (issue 13): forged control datagrams
# at a source daemon, and forged fragments, heartbeats and tokens at a
# receiver. Sourced after cases.sh (h_pubd, h_forge, h_fig).
# shellcheck disable=SC2016 # it_holds conditions are single-quoted: evaluated on each try

# ---- forged NAKs and GONEs: no repair work, counted with their reason ----
case_r_forged_naks() {
	h_pubd d <<-EOF
		groups:
		  - name: h
		    address: $H_GROUP_ADDR
		    repair: {window: 4MiB, rate: 1MiB, peer_rate: 256KiB}
	EOF
	local src n=4000 got ign rb sent rss0 rss1
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 200 --size 16384 >/dev/null || it_fail "publish"
	it_wait "the repair window" 20 test "$(it_group_val d h repair_window_bytes)" -gt 0
	src=0x$(it_q d status '.status[0].source_id')
	rss0=$(h_rss "$H_PID")
	# NAKs for every message it sent (and 65,536 beyond), each with a
	# random token, 50 from each of 80 source ports, at its unicast port.
	h_forge --dst 127.0.0.1 --group h --mode nak --source "$src" --count $n --per 50 --rate 20000 >/dev/null
	it_wait "the NAKs counted" 30 test "$(it_group_val d h naks_received)" -ge $n
	got=$(it_group_val d h naks_received)
	ign=$(it_group_val d h naks_ignored_token)
	rb=$(it_group_val d h repair_bytes)
	sent=$(it_group_val d h repairs_sent)
	rss1=$(h_rss "$H_PID")
	h_fig "$n forged NAKs (65536 messages each, 80 ports): received $got, ignored as token $ign, repair datagrams $sent, repair bytes $rb, GONEs $(it_group_val d h gone_sent), RSS +$((rss1 - rss0)) KiB"
	it_eq "every forged NAK ignored for its token" "$ign" "$got"
	it_eq "no repair byte sent for them" "$rb" 0
	it_eq "no GONE sent for them" "$(it_group_val d h gone_sent)" 0
	# Forged GONEs, claiming to come from a source: ignored, counted.
	h_forge --dst 127.0.0.1 --group h --mode gone --source 0x676f6e65 --count 300 >/dev/null
	it_wait "the GONEs counted" 30 test "$(it_group_val d h gone_ignored)" -ge 300
	h_fig "300 forged GONEs: gone_ignored $(it_group_val d h gone_ignored), unrecovered $(it_group_val d h unrecovered)"
	it_eq "nothing given up for them" "$(it_group_val d h unrecovered)" 0
	# Still up, still serving.
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 3 --size 64 >/dev/null || it_fail "publish after the flood"
	it_eq "the daemon is alive" "$(kill -0 "$H_PID" && echo up)" up
}

# h_sniff SRC_VAR TOK_VAR: group h's source id and repair token, read off
# its multicast as any host there can (forge_dgram --mode sniff).
h_sniff() {
	local line
	line=$(h_forge --dst "$H_GROUP_ADDR" --group h --mode sniff) || {
		it_fail "no token sniffed off the group"
		return 1
	}
	read -r "$1" "$2" <<<"$line"
}

# ---- a reflector: NAKs with the sniffed token, claiming another's address ----
# The repair token is in every heartbeat on the group's multicast, so any
# host that hears the group can NAK with it, from an address it claims (a
# third party's, with a raw socket). The source answered at that address:
# one 88-byte NAK made it send 1.68 MB there in the audit. A NAK must now
# echo its address's cookie, which the source sends only to that address;
# without it, the address gets a COOKIE (no bigger than the NAK, at most one
# in 10 ms) and nothing else. Here the forger reads the token off the
# multicast as an attacker would and NAKs from its own address (a victim it
# can watch: it never asks for its cookie).
case_r_nak_reflection() {
	h_pubd d "heartbeat_ms: 100" <<-EOF
		groups:
		  - name: h
		    address: $H_GROUP_ADDR
		    repair: {window: 4MiB}
	EOF
	local src tok n=200 rb cookies
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 200 --size 16384 >/dev/null || it_fail "publish"
	it_wait "the repair window" 20 test "$(it_group_val d h repair_window_bytes)" -gt 0
	h_sniff src tok || return
	h_forge --dst 127.0.0.1 --group h --mode nak --source "$src" --token "$tok" --seq 0 --count $n --per $n --rate 2000 >/dev/null
	it_wait "the NAKs counted" 30 test "$(it_group_val d h naks_received)" -ge $n
	rb=$(it_group_val d h repair_bytes)
	cookies=$(it_group_val d h cookies_sent)
	h_fig "$n NAKs with the sniffed token (of 65,536 messages each, 200 of 16 KiB in the window) from one address, 0.1 s: repair bytes $rb, GONEs $(it_group_val d h gone_sent), COOKIEs $cookies, naks_ignored_unproven $(it_group_val d h naks_ignored_unproven)"
	it_eq "no repair byte sent to the address the NAKs claim" "$rb" 0
	it_eq "no GONE sent there" "$(it_group_val d h gone_sent)" 0
	it_eq "every NAK counted unproven" "$(it_group_val d h naks_ignored_unproven)" $n
	it_check "at most one COOKIE in 10 ms ($cookies for $n NAKs)" test "$cookies" -le 20
}

# ---- flow control: a host that hears the group says "full" forever ----
# The token is on the multicast; a forger that reads it, asks for its own
# address's cookie, and sends a STATUS with window 0 five times a second,
# each from a receiver id of its own invention, froze a flow-controlled
# source's sending for as long as it went on (9 s and more in the audit). A
# pubd receiver never holds a source back unmoved for longer than its
# receiver timeout (it stops counting a subscriber that takes nothing), so
# one that does is not waited for after two, and its host not for a while.
case_r_status_stall() {
	h_pubd d "heartbeat_ms: 100" <<-EOF
		groups:
		  - name: h
		    address: $H_GROUP_ADDR
		    repair: {window: 4MiB, flow_control: min, receiver_timeout_ms: 500}
	EOF
	local src tok t0 t1 ms
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 1 --size 64 >/dev/null || it_fail "publish"
	it_wait "flow control on" 20 it_group_is d h flow_control 1
	h_sniff src tok || return
	# 10 s of "full", from the next message on, in the background.
	h_forge --dst 127.0.0.1 --group h --mode status --source "$src" --token "$tok" --seq 1 --count 50 --rate 5 \
		--ask-cookie >"$IT_WORK/forge.out" 2>&1 &
	local forger=$!
	it_wait "the forger holds the source back" 10 it_holds '[ "$(it_group_val d h flow_receivers)" -ge 1 ]'
	t0=$(date +%s%N)
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 500 --size 1024 >/dev/null || it_fail "publish under the forger"
	it_wait "all sent" 20 it_group_is d h tx_queued 0
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	h_fig "STATUS window 0 from invented receivers, sniffed token, own cookie, 5/s for 10 s: 500 messages sent in $ms ms; flow_stuck $(it_group_val d h flow_stuck), flow_waits $(it_group_val d h flow_waits), statuses taken $(it_group_val d h statuses_received), ignored $(it_group_val d h statuses_ignored)"
	it_check "its receivers are not waited for (flow_stuck $(it_group_val d h flow_stuck))" test "$(it_group_val d h flow_stuck)" -ge 1
	it_check "the source went on within 5 s, not when the forger stopped ($ms ms)" test "$ms" -lt 5000
	it_check "the forger was still at it" kill -0 "$forger"
	wait "$forger" || it_fail "forge_dgram: $(cat "$IT_WORK/forge.out")"
}

# ---- forged flow control STATUSes: nobody without the token stalls a source ----
case_r_forged_status() {
	h_pubd d <<-EOF
		groups:
		  - name: h
		    address: $H_GROUP_ADDR
		    repair: {window: 4MiB, flow_control: min}
	EOF
	local src n=3000 ign
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 20 --size 1024 >/dev/null || it_fail "publish"
	it_wait "flow control on" 20 it_group_is d h flow_control 1
	src=0x$(it_q d status '.status[0].source_id')
	# "Your receivers can take nothing more", from 3000 receiver ids, each
	# with a random token, at the source's unicast port.
	h_forge --dst 127.0.0.1 --group h --mode status --source "$src" --seq 0 --count $n >/dev/null
	it_wait "the STATUSes counted" 30 test "$(it_group_val d h statuses_ignored)" -ge $n
	ign=$(it_group_val d h statuses_ignored)
	h_fig "$n forged STATUSes (window 0): ignored $ign, receivers $(it_group_val d h flow_receivers), taken $(it_group_val d h statuses_received)"
	it_eq "every forged STATUS ignored" "$ign" $n
	it_eq "none taken" "$(it_group_val d h statuses_received)" 0
	it_eq "no receiver holds the source back" "$(it_group_val d h flow_receivers)" 0
	# The source is not stalled: a publisher's messages all go out.
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 500 --size 1024 >/dev/null || it_fail "publish after"
	it_wait "all sent" 20 it_group_is d h tx_queued 0
	it_eq "it never waited for a receiver" "$(it_group_val d h flow_waits)" 0
}

# ---- a flood of stuck partials on a repair group does not stop the loop ----
# First fragments of many 2-fragment messages: each is a partial message,
# stuck 30 ms later and asked for. The NAK schedule took a scan and a
# memmove of its whole array per gap, and every stuck partial was offered
# to it again at every heartbeat tick: 40,000 of them (2 s at 20,000/s)
# kept the loop away from epoll for good, SIGTERM and clients unheard.
case_c_repair_stuck_flood() {
	h_pubd d "heartbeat_ms: 100" <<-EOF
		$(h_groups)
		    repair: on
	EOF
	local c0 c1 t0 ms worst=0 i
	c0=$(h_cpu "$H_PID")
	h_forge --dst "$H_GROUP_ADDR" --group h --mode tiny --per 64 --count 40000 --rate 20000 >/dev/null
	# Over the next 3 s, heartbeat ticks with every partial stuck: the
	# slowest of 15 status queries.
	for i in $(seq 1 15); do
		t0=$(date +%s%N)
		if ! timeout 10 "$PUBCTL" -s "$(it_sock d)" status >/dev/null 2>&1; then
			worst=10000
			break
		fi
		ms=$((($(date +%s%N) - t0) / 1000000))
		[ "$ms" -gt "$worst" ] && worst=$ms
		sleep 0.2 # spreads the samples over the ticks; not a synchronisation
	done
	c1=$(h_cpu "$H_PID")
	h_fig "40,000 first fragments on a repair group: slowest pubctl status of $i over 3 s $worst ms; pubd CPU $(((c1 - c0) * 10)) ms"
	it_check "pubctl status answers within 1 s throughout ($worst ms)" test "$worst" -lt 1000
}

# ---- a forged jump on a repair group costs a bounded number of NAKs ----
# Anyone on the group's multicast can send a heartbeat from an invented
# source with a token, then another announcing a sequence number far ahead:
# every message between was NAKed, 65,536 a NAK, each try, to whatever
# address the forger gave (a reflection at a third party): 2 datagrams of
# 92 bytes made 109,864 NAKs (9.7 MB) in the audit. Now a gap is asked for
# up to 16 NAKs' worth a try, and a run sends at most 256; the first round,
# which asks the source for our address's cookie (it never answers), is no
# try: 16 x 9.
case_c_repair_nak_jump() {
	h_pubd d "heartbeat_ms: 100" <<-EOF
		$(h_groups)
		    repair: on
	EOF
	local src=0x5708a000 tok=0x70c3170c3 naks
	h_forge --dst "$H_GROUP_ADDR" --group h --mode heartbeat --source $src --seq 0 --token $tok >/dev/null
	# The silence the jump needs: a stream's window grows with it (2 s:
	# 100 million). Part of the attack, not a synchronisation.
	sleep 2
	h_forge --dst "$H_GROUP_ADDR" --group h --mode heartbeat --source $src --seq 90000000 --token $tok >/dev/null
	# The gap is counted once reassembly gives up on it, after every retry.
	it_wait "the jump's gap is given up" 30 it_holds '[ "$(it_group_val d h unrecovered)" -gt 0 ]'
	naks=$(it_group_val d h naks_sent)
	h_fig "2 forged heartbeats (a jump of 90,000,000 after 2 s): $naks NAKs sent, unrecovered $(it_group_val d h unrecovered)"
	it_check "at most 16 NAKs a try, 8 tries and the round that asks for the cookie ($naks)" test "$naks" -le 144
}

# ---- invented sources that each leave a gap do not slow a plain stream ----
# Every message delivered on a repair group asks the NAK schedule whether
# it fills a gap, and the schedule scanned every gap it held (up to 4,096)
# to answer: a forger whose invented sources each left one (a first
# message, then one 65,536 ahead) made pubd use 5.1 s of CPU per 300,000
# datagrams against 1.3 s for a plain stream's. Now a message looks only at
# its own stream's gaps, and a run only at the due ones. 600,000 datagrams
# of one stream at 40,000 a second, alone, then again after 4,000 sources
# left a gap each (their NAKs spread over 10 s and unable to go, so the
# gaps stay all along and the NAK timer's wake-ups are few); pubd's CPU for
# each. CPU time on a shared 2-core machine is noisy (the "alone" run
# ranged 44-150 ticks), and before the index the cost was 1.8-2.0x: so
# this case prints the figure and fails only past 2.5x, a scan come back
# at a larger scale; test_repair_nak_index counts the gaps each call looks
# at, exactly, and is the check that fails without the index.
case_c_repair_gap_sources() {
	h_pubd d "heartbeat_ms: 100" <<-EOF
		$(h_groups)
		    repair: {nak_backoff_ms: 10000, nak_interval_ms: 60000, nak_retries: 1}
	EOF
	local alone gaps n=600000
	alone=$(h_forge_cpu --dst "$H_GROUP_ADDR" --group h --mode seq --source 0x706c61696e --count $n --rate 40000)
	h_forge --dst "$H_GROUP_ADDR" --group h --mode span --per 2 --count 8000 --rate 30000 >/dev/null
	h_settled d rx_taken >/dev/null
	gaps=$(h_forge_cpu --dst "$H_GROUP_ADDR" --group h --mode seq --source 0x6761707079 --count $n --rate 40000)
	h_fig "$n datagrams of one stream: pubd CPU $alone ticks (1/100 s) alone, $gaps ticks after 4,000 sources left a gap each; naks_sent $(it_group_val d h naks_sent)"
	it_check "other streams' gaps cost a stream's datagrams little ($gaps ticks against $alone)" \
		test "$gaps" -le $((alone * 5 / 2 + 30))
}

# ---- a stream's late messages among thousands of its gaps ----
# A repair group lets a stream open 4,096 missing ranges. A forger that
# opened 4,000 (messages two apart) and then filled them from the lowest
# made each late message walk the ranges from the newest down: 15-22 us a
# datagram, an honest 300,000-message stream's 23 ticks of pubd CPU became
# 314 beside it. Now the range is found in a tree of them. 600,000
# datagrams of one stream at 40,000 a second in order, then as many of
# another in rounds of 4,000 two apart and the 3,999 gaps filled bottom-up
# (forge_dgram --mode holes; NAKs held back 10 s, so none goes); pubd's
# CPU for each. Noisy like c_repair_gap_sources: it fails past 2.5x;
# test_reasm_limits counts the ranges each lookup looks at, exactly.
# With the reassembly tree alone it still failed (406 ticks against 91,
# 382 against 162): perf put 73% of pubd's CPU in the NAK schedule, which
# walked the stream's gaps for each new gap (pubd_nak_gap's check for one
# already asked for) and for each message (pubd_nak_filled). With the
# schedule's own tree of a stream's gaps (core/repair_nak_tree.c), on the
# same loaded host: 71 against 45, 91 against 63, 189 against 166, 214
# against 166 (the schedule's walk: 324 against 50, 381 against 170, 386
# against 152); test_repair_nak_index counts what its calls look at.
case_c_repair_range_fill() {
	h_pubd d "heartbeat_ms: 100" <<-EOF
		$(h_groups)
		    repair: {nak_backoff_ms: 10000, nak_interval_ms: 60000, nak_retries: 1}
	EOF
	local alone holes n=600000
	alone=$(h_forge_cpu --dst "$H_GROUP_ADDR" --group h --mode seq --source 0x706c61696e --count $n --rate 40000)
	holes=$(h_forge_cpu --dst "$H_GROUP_ADDR" --group h --mode holes --per 4000 --source 0x686f6c6573 --count $n --rate 40000)
	h_fig "$n datagrams of one stream: pubd CPU $alone ticks (1/100 s) in order, $holes ticks in rounds of 4,000 ranges filled bottom-up; received $(it_group_val d h received), naks_sent $(it_group_val d h naks_sent)"
	it_check "late messages among 4,000 ranges cost little more than in order ($holes ticks against $alone)" \
		test "$holes" -le $((alone * 5 / 2 + 30))
}

# ---- a forger cannot take a live source's repair token over ----
# Anyone on the group's multicast can send a heartbeat claiming a source's
# id. The latest token heard won: a forger's heartbeats took a live
# stream's token, its NAKs were refused by the real source, and the forger
# could give up the stream's lost messages with a GONE of its own. A new
# token now replaces the old only once the old has been silent a while.
case_c_repair_token_hijack() {
	# A token stays the source's while heard within 3 heartbeat periods:
	# 1 s ones here, so the case's five forge_dgram runs, slow on a loaded
	# host, never let the source's token lapse before the forger speaks.
	h_pubd d "heartbeat_ms: 1000" <<-EOF
		$(h_groups)
		    repair: on
	EOF
	local src=0x7265616c tok=0x1111aaaa forged=0x2222bbbb
	# The source: its heartbeat, then messages 0 and 10 (1..9 lost, NAKed).
	h_forge --dst "$H_GROUP_ADDR" --group h --mode heartbeat --source $src --seq 0 --token $tok >/dev/null
	h_forge --dst "$H_GROUP_ADDR" --group h --mode seq --source $src --seq 0 --count 1 >/dev/null
	h_forge --dst "$H_GROUP_ADDR" --group h --mode seq --source $src --seq 10 --count 1 >/dev/null
	# The forger, at once: heartbeats of the source with its own token,
	# then a GONE with that token for what the source lost.
	h_forge --dst "$H_GROUP_ADDR" --group h --mode heartbeat --source $src --seq 11 --token $forged --count 20 >/dev/null
	h_forge --dst 127.0.0.1 --group h --mode gone --source $src --seq 1 --token $forged >/dev/null
	it_wait "the GONE is taken or ignored" 10 \
		it_holds '[ "$(it_group_val d h gone_ignored)" -ge 1 ] || [ "$(it_group_val d h unrecovered)" -gt 0 ]'
	h_fig "20 forged heartbeats with another token, then a GONE with it: gone_ignored $(it_group_val d h gone_ignored), unrecovered $(it_group_val d h unrecovered), repair_token_refused $(it_counter d repair_token_refused)"
	it_eq "the forger's GONE is ignored: the source's token stands" "$(it_group_val d h gone_ignored)" 1
}
