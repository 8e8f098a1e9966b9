#!/bin/bash
# SPDX-License-Identifier: MIT
# Receiver flow control over real verbs (groups.repair.flow_control: min): A
# on rxa publishes as fast as it can, B's one subscriber on rxb takes at most
# RATE messages a second, and B's subscriber queue is small. B's STATUS
# datagrams go to A as UD sends to A's QP (as NAKs do); A sends no further
# than B's subscriber can take. On f the subscriber gets every message,
# intact and in order, B overflows nothing and sent STATUSes, A waited. The
# same load on n (repair, no flow control) overflows B's queue, so the
# checks on f can fail.
. "$PUBD_REPO/tests/softroce/lib.sh"
. "$PUBD_REPO/tests/softroce/daemon-lib.sh"
dl_init

dl_need "$ITEST"
N=2500
RATE=500
dl_conf_ab <<YAML
  heartbeat_ms: 50
limits:
  subscriber_queue: 64
  # Small logs: what B holds for its subscriber (group log, deliver log,
  # queue) is some 250 messages, not some 1,900, so that on n the load
  # overflows it however fast the emulation runs A (a ciG run on the
  # shared-memory transport, with the 1 MiB defaults, did not).
  group_log: 64KiB
  deliver_log: 64KiB
groups:
  - {name: f, address: 239.77.99.1, repair: {flow_control: min, receiver_timeout_ms: 2000}}
  - {name: n, address: 239.77.99.2, repair: on}
YAML
dl_start_ab

sub_got() { # GROUP: messages in its subscriber's log
	local n=0 tag _
	while read -r tag _; do
		[ "$tag" = msg ] && n=$((n + 1))
	done <"$W/sub-$1.log"
	echo $n
}
# in_order GROUP: "BAD OUT_OF_SEQUENCE" (indices must be 0, 1, 2, ...).
in_order() {
	local bad=0 off=0 k=0 tag idx ok
	while read -r tag _ _ _ _ idx ok; do
		[ "$tag" = msg ] || continue
		[ "$ok" = OK ] || bad=$((bad + 1))
		[ "$idx" = "$k" ] || off=$((off + 1))
		k=$((k + 1))
	done <"$W/sub-$1.log"
	echo "$bad $off"
}
grp() { dl_sq "$1" groups "groups.$3[name=$2]"; }
hears_b() { [ "$(grp A f flow_receivers)" = 1 ]; }

run() { # GROUP TIMEOUT_MS
	local g=$1 sub t0=$SECONDS
	"$ITEST" sub -s "$W/B.sock" -g "$g" --count $N --rate $RATE --log "$W/sub-$g.log" --timeout-ms "$2" \
		>"$W/sub-$g.out" 2>&1 &
	sub=$!
	DL_BG+=("$sub")
	dl_wait 30 dl_subs B "$g" 1 || fail "$g: subscriber on B not there within 30s"
	# The first message alone: A heeds B from B's first STATUS on.
	"$ITEST" pub -s "$W/A.sock" -g "$g" --count 1 --size 1024 --start 0 || fail "$g: first publish"
	[ "$g" = f ] && { dl_wait 30 hears_b || fail "f: A did not hear from B within 30s"; }
	"$ITEST" pub -s "$W/A.sock" -g "$g" --count $((N - 1)) --size 1024 --start 1 || fail "$g: publisher failed"
	wait "$sub"
	echo "$g: subscriber status $?, got $(sub_got "$g") of $N in $((SECONDS - t0)) s;" \
		"B sub_dropped $(grp B "$g" sub_dropped), statuses_sent $(grp B "$g" statuses_sent);" \
		"A flow_waits $(grp A "$g" flow_waits), statuses_received $(grp A "$g" statuses_received)"
}

run f 120000
dl_expect "f: the subscriber got every message" "$(sub_got f)" "$N"
dl_expect "f: intact and in order (bad, out of sequence)" "$(in_order f)" "0 0"
dl_expect "f: B overflowed nothing" "$(grp B f sub_dropped)" 0
if [ "$(grp B f statuses_sent)" -gt 0 ]; then pass "f: B sent STATUSes"; else fail "f: B sent no STATUS"; fi
if [ "$(grp A f flow_waits)" -gt 0 ]; then pass "f: A waited for B"; else fail "f: A never waited"; fi
# B's keepalives go on (every receiver_timeout_ms / 4), so the counts are
# read B, A, B: A has taken (or, the first, before B had its address's
# cookie, answered with a COOKIE) every STATUS B had sent before it was
# asked (a query takes most of a second under TCG), and none B had not sent.
b1=$(grp B f statuses_sent)
a1=$(($(grp A f statuses_received) + $(grp A f statuses_ignored)))
b2=$(grp B f statuses_sent)
if [ "$a1" -ge "$b1" ] && [ "$a1" -le "$b2" ]; then
	pass "f: A took or answered every STATUS B sent ($b1 <= $a1 <= $b2)"
else
	fail "f: A took or answered $a1 STATUSes, B had sent $b1 before and $b2 after"
fi
ign=$(grp A f statuses_ignored)
if [ "$ign" -le 1 ] && [ "$ign" = "$(grp A f cookies_sent)" ]; then
	pass "f: A ignored at most B's first STATUS ($ign), answering it with a COOKIE"
else
	fail "f: A ignored $ign STATUSes, sent $(grp A f cookies_sent) COOKIEs"
fi

# N / RATE of reading, and then some: what overflowed never comes.
run n 10000
if [ "$(grp B n sub_dropped)" -gt 0 ]; then
	pass "n: without flow control B overflowed ($(grp B n sub_dropped))"
else
	fail "n: B overflowed nothing without flow control"
fi
dl_expect "n: A never waited, B sent no STATUS" "$(grp A n flow_waits) $(grp B n statuses_sent)" "0 0"
dl_ctl A groups
dl_stop
