#!/bin/bash
# SPDX-License-Identifier: MIT
#
# pubd killed (SIGKILL: no goodbye, a stale socket file left behind) and
# started again under a subscribed libpub client: the client reconnects and
# resubscribes by itself and receives again; the application (itest_client
# sub, one pub_recv loop) does nothing about it and keeps running.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup restart

it_host_lo h1
it_conf_write h1 - <<-EOF
	groups:
	  - name: r1
	    address: 239.81.1.1
EOF
ns=$(it_ns h1)
sock=$(it_sock h1)
it_pubd_start h1 "$ns" || it_die "pubd did not start"

it_bg client "$ns" "$ITEST_CLIENT" sub -s "$sock" -g r1 --count 10 --timeout-ms 120000 --log "$IT_WORK/client.log"
client_pid=$IT_BG_PID
it_wait "subscribed" 20 it_subscribers_at_least h1 r1 1 || it_die "no subscriber"
"$ITEST_CLIENT" pub -s "$sock" -g r1 --count 5 --size 100 --start 0 || it_fail "publish 0..4"
it_wait "5 messages before the kill" 20 it_lines_at_least "$IT_WORK/client.log" '^msg r1 ' 5

first_pid=$(it_pid h1)
kill -KILL "$first_pid"
it_reap "$first_pid" 10
it_eq "pubd died of SIGKILL" "$IT_STATUS" 137
it_check "the client is still running" kill -0 "$client_pid"

it_pubd_start h1 "$ns" || it_die "pubd did not start again (stale socket $sock?)"
it_wait "the client resubscribed by itself" 30 it_subscribers_at_least h1 r1 1 || it_die "no resubscription"
"$ITEST_CLIENT" pub -s "$sock" -g r1 --count 5 --size 100 --start 5 || it_fail "publish 5..9"
it_reap "$client_pid" 60
it_eq "the same client process received all 10 messages and exited by itself" "$IT_STATUS" 0
it_eq "messages 0..9 in order, intact" \
	"$(awk '$1 == "msg" {printf "%s%s", sep, $6; sep = ","} $1 == "msg" && $7 != "OK" {printf "BAD"}' "$IT_WORK/client.log")" \
	"0,1,2,3,4,5,6,7,8,9"
it_check "libpub reported the reconnect" it_lines_at_least "$IT_WORK/client.log" '^reconnected' 1

# The message pub_recv returned stays valid until the next pub_recv, even
# when the connection ends meanwhile: libpub keeps the log it lies in (its
# deliver log, or its group's group log) mapped until then.
it_bg holder "$ns" "$ITEST_CLIENT" sub -s "$sock" -g r1 --count 1 --hold-last --timeout-ms 60000 \
	--log "$IT_WORK/holder.log"
holder_pid=$IT_BG_PID
it_wait "the holder subscribed" 20 it_subscribers_at_least h1 r1 1 || it_die "no holder"
"$ITEST_CLIENT" pub -s "$sock" -g r1 --count 1 --size 4000 --start 20 || it_fail "publish 20"
it_wait "the holder holds message 20" 20 it_lines_at_least "$IT_WORK/holder.log" '^holding' 1
kill -KILL "$(it_pid h1)"
it_reap "$holder_pid" 30
it_eq "the holder saw the connection go and exited" "$IT_STATUS" 0
it_check "the held message was intact after it ($(grep '^held\|^query' "$IT_WORK/holder.log" | tr '\n' ' '))" \
	grep -q '^held OK' "$IT_WORK/holder.log"

# Messages a publisher wrote into its publish log that pubd never took,
# when pubd is killed: nobody else can count them, so libpub's next call
# says how many (the shared-memory path; on the socket they were sent).
# An itest_client held between its steps (a coprocess, one at a time):
# held_start ARGS... starts `itest_client ARGS` in the namespace and reads
# its first line into $line; held_say makes it take its next step ("go")
# and reads its answer (within SECONDS, 30 unless given); held_end closes
# its ends and reaps it.
held_start() {
	coproc HELD { ip netns exec "$ns" "$ITEST_CLIENT" "$@" 2>&1; }
	# Our own copies: bash unsets HELD once the coprocess exits.
	exec {held_out}<&"${HELD[0]}" {held_in}>&"${HELD[1]}"
	held_pid=$HELD_PID
	read -r -t 20 line <&"$held_out" || line=timeout
}
held_say() {
	echo go >&"$held_in"
	read -r -t "${1:-30}" line <&"$held_out" || line=timeout
}
held_end() {
	exec {held_in}>&- {held_out}<&-
	it_reap "$held_pid" "${1:-10}"
}

it_pubd_start h1 "$ns" || it_die "pubd did not start again"
held_start pub -s "$sock" -g r1 --count 7 --size 100 --hold
it_eq "the publisher connected" "$line" connected
kill -STOP "$(it_pid h1)"
held_say 20
it_eq "7 messages written while pubd is stopped" "$line" "published 7"
kill -KILL "$(it_pid h1)"
it_reap "$(it_pid h1)" 10
held_say
it_log "the next publish: $line"
if [ "${PUBD_TRANSPORT:-}" = socket ]; then
	it_check "the next publish fails: pubd is gone" grep -q '^after -107 ' <<<"$line"
else
	it_check "the next publish says up to 7 messages may be lost" \
		grep -q '^after -107 .*up to 7 messages written to the publish log may not have reached it' <<<"$line"
fi
held_end

# A publisher that subscribes too (its deliveries are pub_recv's, which it
# does not call) finds a killed pubd gone all the same: it looks every 16
# publishes, as a pure publisher does, and then says how many it wrote into
# the dead pubd's logs (on shared memory), or sends them to the new pubd
# (the socket: its writes fail at once). Before, each of the 40 returned 0
# into the dead pubd's log, no loss said, and the new pubd had only the
# last (PUB_SYNC) one.
it_pubd_start h1 "$ns" || it_die "pubd did not start again"
held_start pub -s "$sock" -g r1 --also-sub r1 --count 40 --size 100 --hold
it_eq "the subscribed publisher connected" "$line" connected
kill -KILL "$(it_pid h1)"
it_reap "$(it_pid h1)" 10
it_pubd_start h1 "$ns" || it_die "pubd did not start again"
held_say
it_log "40 publishes after the restart: $line"
if [ "$line" = "published 40" ]; then
	held_say
	it_log "and one with PUB_SYNC: $line"
	it_eq "the new pubd has all 41 (each write found the old socket gone)" "$(it_group_val h1 r1 published)" 41
else
	it_check "the 16th publish says 15 written may not have reached pubd ($line)" \
		grep -q "publish 15 to r1: .*up to 15 messages written to the .* may not have reached it" <<<"$line"
fi
held_end

# A pubd that accepts and does not answer (stopped, or stuck): a subscriber's
# pub_recv(200 ms) keeps to its 200 ms, the reconnect's handshake with it.
# It waited request_timeout_ms (10 s) whatever its own timeout.
held_start recvtime -s "$sock" -g r1 --count 5 --timeout-ms 200
it_eq "the timed subscriber subscribed" "$line" ready
kill -KILL "$(it_pid h1)"
it_reap "$(it_pid h1)" 10
it_pubd_start h1 "$ns" || it_die "pubd did not start again"
kill -STOP "$(it_pid h1)"
held_say 60
kill -CONT "$(it_pid h1)"
held_end 20
longest=$(sed -n 's/^recvtime: longest \([0-9]*\) ms.*/\1/p' <<<"$line")
it_check "each pub_recv(200 ms) kept to about its timeout with pubd stopped ($line)" test "${longest:-99999}" -le 1500
it_finish
