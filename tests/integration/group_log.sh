#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Group logs (limits.group_log): a group's messages written once by pubd
# for all of its local subscribers on shared memory, read by libpub where
# they lie.
#  1. Four libpub subscribers read one group log (`pubctl group`: path
#     group_log, group_log_readers 4) beside one on the socket (pubctl sub,
#     path socket); all five get every message, byte-identical.
#  2. A reader stopped (SIGSTOP) next to two that read: pubd writes nothing
#     over what it has not read, so once the log is full and a subscriber
#     queue's worth waits, every reader is moved off the log (END) to its
#     own deliver log. The two get every message intact; the stopped one,
#     let go, gets the log's messages intact and in order, then what its
#     policy (drop-oldest) left, counted: delivered + dropped = 3 x published.
#     Once it has read up to the END, each reader that has nothing queued
#     gets the log back, from a mark in its deliver log on (so nothing comes
#     out of order), and reads the next messages there.
#  3. A reload that changes the subscribe ACL retires the log (a mapping
#     cannot be taken back); the subscribers read on.
#  4. One subscriber of two groups whose messages (1 MiB, larger than a
#     quarter of a log: in pieces) come at once: each arrives whole, its
#     pieces never mixed with the other group's.
# With PUBD_TRANSPORT=socket (the tier's second run) libpub asks for no
# shared memory: every subscriber's path is socket and no log is made.
# Off the direct path (PUBD_DIRECT=off): a local publisher's messages would
# otherwise go to these subscribers straight from its direct log, not
# through the group log (tests/integration/direct.sh has that path).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
export PUBD_DIRECT=off
it_setup group_log

N=2000
SIZE=1000
it_host_lo h1
ns=$(it_ns h1)
write_conf() { # SUBSCRIBE_ACL
	it_conf_write h1 - <<-EOF
		limits:
		  group_log: 256KiB
		  subscriber_queue: 64
		  # Round 2's stopped reader is let go before pubd would give up on
		  # it (the hostile tier's c_glog_stall covers giving up).
		  group_log_drain_ms: 60000
		groups:
		  - name: gl
		    address: 239.81.7.1
		    $1
		  - name: p1
		    address: 239.81.7.2
		  - name: p2
		    address: 239.81.7.3
	EOF
}
write_conf ""
it_pubd_start h1 "$ns" || it_die "pubd did not start"
sock=$(it_sock h1)
"$ITEST_CLIENT" gen --count "$N" --size "$SIZE" >"$IT_WORK/expected.bin" || it_die "gen"
want_sha=$(sha256sum <"$IT_WORK/expected.bin" | cut -d' ' -f1)
shm=1
[ "${PUBD_TRANSPORT:-}" = socket ] && shm=0

paths() { it_q h1 group gl '[.subscribers[].path] | sort | join(",")'; }

# ---- 1. four readers of one log, one on the socket ----
for i in 1 2 3 4; do
	it_bg "sub$i" "$ns" "$ITEST_CLIENT" sub -s "$sock" -g gl --count "$N" --timeout-ms 60000 --log "$IT_WORK/sub$i.log"
done
it_bg sock-sub "$ns" env PUBD_TRANSPORT=socket "$PUBCTL" -s "$sock" sub gl --count "$N" --timeout 60 \
	--output "$IT_WORK/sock.bin"
sock_pid=$IT_BG_PID
it_wait "five subscribers" 20 it_subscribers_at_least h1 gl 5 || it_die "subscribers"
if [ $shm = 1 ]; then
	it_eq "four read the group log, pubctl reads its socket" "$(paths)" \
		"group_log,group_log,group_log,group_log,socket"
	it_eq "the group log has 4 readers" "$(it_group_val h1 gl group_log_readers)" 4
	it_eq "its size is limits.group_log" "$(it_group_val h1 gl group_log)" 262144
else
	it_eq "socket transport: every subscriber on its socket" "$(paths)" "socket,socket,socket,socket,socket"
fi
# Paced so that pubctl, on its socket with a 64-message queue, keeps up
# under ASan on two busy cores (at 4,000/s CI's asan tier once saw it 8
# behind: 16 ms of slack; at 1,000/s it has 64 ms).
ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g gl --count "$N" --size "$SIZE" --rate 1000 ||
	it_fail "publish $N"
for i in 1 2 3 4; do
	it_wait "sub$i has $N" 60 it_lines_at_least "$IT_WORK/sub$i.log" '^msg gl ' "$N"
	it_eq "sub$i: all $N intact" "$(grep -c '^msg gl .* OK$' "$IT_WORK/sub$i.log")" "$N"
done
it_reap "$sock_pid" 60
it_eq "the socket subscriber's bytes" "$(sha256sum <"$IT_WORK/sock.bin" | cut -d' ' -f1)" "$want_sha"
it_wait "first round's subscribers gone" 20 it_group_is h1 gl subscribers 0
it_eq "round 1: delivered 5 x $N" "$(it_group_val h1 gl delivered)" $((5 * N))

# ---- 2. a stopped reader between two that read ----
N2=3000
N3=10
for i in a b; do
	it_bg "fast-$i" "$ns" "$ITEST_CLIENT" sub -s "$sock" -g gl --count $((N2 + N3)) --timeout-ms 60000 \
		--log "$IT_WORK/fast-$i.log"
done
it_bg slow "$ns" "$ITEST_CLIENT" sub -s "$sock" -g gl --timeout-ms 60000 --log "$IT_WORK/slow.log"
slow_pid=$IT_BG_PID
it_wait "three subscribers" 20 it_subscribers_at_least h1 gl 3 || it_die "subscribers"
kill -STOP "$slow_pid"
ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g gl --count "$N2" --size "$SIZE" --rate 4000 \
	--start 0 || it_fail "publish $N2"
for i in a b; do
	it_wait "fast-$i has $N2" 60 it_lines_at_least "$IT_WORK/fast-$i.log" '^msg gl ' "$N2"
	it_eq "fast-$i: all $N2 intact" "$(grep -c '^msg gl .* OK$' "$IT_WORK/fast-$i.log")" "$N2"
done
if [ $shm = 1 ]; then
	it_check "the stopped reader moved every reader off the log ($(it_group_val h1 gl group_log_ends) ends)" \
		test "$(it_group_val h1 gl group_log_ends)" -ge 1
	it_eq "the stopped one holds every reader off the log until it has read to the END" \
		"$(it_group_val h1 gl group_log_readers) $(paths | grep -o 'ended' | wc -l | awk '{print ($1 >= 1)}')" "0 1"
fi
kill -CONT "$slow_pid"
if [ $shm = 1 ]; then
	it_wait "the two that kept up got the log back" 20 it_holds \
		'[ "$(it_group_val h1 gl group_log_returns)" -ge 2 ]' || it_fail "paths: $(paths)"
fi
ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g gl --count $N3 --size "$SIZE" --start $N2 ||
	it_fail "publish $N3 more"
for i in a b; do
	it_wait "fast-$i has $((N2 + N3))" 30 it_lines_at_least "$IT_WORK/fast-$i.log" '^msg gl ' $((N2 + N3))
	it_eq "fast-$i: 0 .. $((N2 + N3 - 1)) in order, intact" \
		"$(awk '$1 == "msg" && $7 == "OK" && $6 == n { n++ } END { print n }' "$IT_WORK/fast-$i.log")" $((N2 + N3))
done
# Done with the slow one: what it has not taken is counted as it goes.
kill -TERM "$slow_pid"
it_reap "$slow_pid" 10
got=$(it_lines "$IT_WORK/slow.log" '^msg gl ')
[ $shm = 1 ] && it_check "the stopped reader got what the group log held for it, at least ($got)" test "$got" -ge 200
it_eq "the stopped reader's messages are intact" "$(grep -c '^msg gl .* OK$' "$IT_WORK/slow.log")" "$got"
it_check "...and in order ($got)" awk '$1 == "msg" { if ($6 <= last && NR > 1) exit 1; last = $6 }' \
	"$IT_WORK/slow.log"
it_wait "second round's subscribers gone" 20 it_group_is h1 gl subscribers 0
deliv=$(it_group_val h1 gl delivered)
subdrop=$(it_q h1 drops '[.drops[] | select(.scope == "group-subscribers" and .name == "gl") | .count] | add // 0')
it_log "round 2: the stopped reader got $got of $N2; group delivered $deliv, subscriber drops $subdrop"
it_eq "round 2: delivered + dropped = 3 x $((N2 + N3)) (after round 1's 5 x $N)" $((deliv - 5 * N + subdrop)) \
	$((3 * (N2 + N3)))

# ---- 3. a changed subscribe ACL retires the log ----
if [ $shm = 1 ]; then
	it_bg acl-sub "$ns" "$ITEST_CLIENT" sub -s "$sock" -g gl --count 10 --timeout-ms 30000 --log "$IT_WORK/acl.log"
	it_wait "a subscriber" 20 it_subscribers_at_least h1 gl 1 || it_die "subscriber"
	ends=$(it_group_val h1 gl group_log_ends)
	write_conf "subscribe: [\"user:root\"]"
	kill -HUP "$(it_pid h1)"
	it_wait "the log retired at the reload" 20 it_holds \
		'[ "$(it_group_val h1 gl group_log_ends)" -gt "$ends" ]' || it_fail "no END at the ACL change"
	ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g gl --count 10 --size 100 --start 0 || it_fail "publish"
	it_wait "the subscriber reads on" 20 it_lines_at_least "$IT_WORK/acl.log" '^msg gl ' 10 &&
		it_pass "a changed subscribe ACL retired the log ($(it_group_val h1 gl group_log_ends) ends); the subscriber read on"
fi

# ---- 4. two groups' messages in pieces, at once, to one subscriber ----
it_bg two "$ns" "$ITEST_CLIENT" sub -s "$sock" -g p1 -g p2 --count 40 --timeout-ms 60000 --log "$IT_WORK/two.log"
it_wait "the subscriber of two groups" 20 it_subscribers_at_least h1 p2 1 || it_die "subscriber"
[ $shm = 1 ] && it_eq "it reads both groups' logs" "$(it_group_val h1 p1 group_log_readers)$(it_group_val h1 p2 group_log_readers)" 11
for g in p1 p2; do
	it_bg "pub-$g" "$ns" "$ITEST_CLIENT" pub -s "$sock" -g $g --count 20 --size $((1024 * 1024)) --start 0
done
it_wait "40 messages of 1 MiB" 60 it_lines_at_least "$IT_WORK/two.log" '^msg p' 40 ||
	it_fail "two.log: $(grep -v '^msg' "$IT_WORK/two.log" | head -3)"
it_eq "all 40 whole and intact" "$(grep -c '^msg p[12] .* 1048576 .* OK$' "$IT_WORK/two.log")" 40
it_pubd_stop h1
it_finish
