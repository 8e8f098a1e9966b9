#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A slow subscriber, under each limits.slow_subscriber policy, next to a fast
# one on the same host. The slow one is a real libpub client that subscribes
# and then does not read until the publisher is done (itest_client --hold);
# the fast one is `pubctl sub`.
#
#  drop-newest: once its queue is full, new messages are dropped for it: it
#               gets the first QUEUE messages and not the last one; the
#               losses are counted as sub_overflow for it.
#  drop-oldest: the oldest queued message makes room: it gets the last
#               QUEUE messages; the losses are counted as sub_overflow.
# (Between those ends the kernel's socket buffer decides what else got
# through, so the checks hold the ends, the order and the counts exactly.)
# The publisher is paced (a load a reading subscriber keeps up with): in a
# system without end-to-end flow control "fast" means faster than the load.
#  disconnect:  pubd drops it (PUB_ESLOW, counted as sub_disconnect); libpub
#               reconnects and resubscribes by itself, and it receives again.
# Those three with the clients off the direct path (PUBD_DIRECT=off): pubd
# queues for each subscriber. Then drop-oldest on the direct path, where
# both subscribers read the publisher's direct log and nobody waits for the
# slow one: the publisher laps it, and once it reads again it gets the newest
# messages the log still held, in order, counts what it lost exactly, and
# pubd shows that count as its sub_overflow.
# Every time the fast subscriber receives the whole stream, byte-identical.
IT_LIMIT=${IT_LIMIT:-300}
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup slow_sub

N=${IT_SLOW_COUNT:-3000}
SIZE=4096
QUEUE=512
RATE=${IT_SLOW_RATE:-2000}
"$ITEST_CLIENT" gen --count "$N" --size "$SIZE" >"$IT_WORK/expected.bin" || it_die "gen"
want_sha=$(sha256sum <"$IT_WORK/expected.bin" | cut -d' ' -f1)

# slow_log_indices POLICY: the indices the slow subscriber received, in order.
slow_indices() {
	awk '$1 == "msg" {print $6}' "$IT_WORK/slow-$1.log"
}

run_policy() {
	local policy=$1 direct=${2:-no} host="p${1//-/}" ns name tag=$1
	[ "$direct" = yes ] && host="${host}d"
	name=$host
	if [ "$direct" = yes ]; then
		tag=$policy-direct
		unset PUBD_DIRECT # a direct log of 1 MiB: the slow subscriber is lapped
	else
		export PUBD_DIRECT=off
	fi
	it_host_lo "$host"
	ns=$(it_ns "$host")
	it_conf_write "$name" - <<-EOF
		limits:
		  subscriber_queue: $QUEUE
		  slow_subscriber: $policy
		groups:
		  - name: s1
		    address: 239.79.1.1
	EOF
	it_pubd_start "$name" "$ns" || return 1
	it_eq "$policy: pubctl status shows the policy" "$(it_q "$name" status '.status[0].slow_subscriber')" "$policy"

	# The slow subscriber reads a line from this fifo before it reads pubd.
	mkfifo "$IT_WORK/go-$tag"
	it_bg "slow-$tag" "$ns" bash -c "exec \"\$0\" \"\$@\" <\"$IT_WORK/go-$tag\"" "$ITEST_CLIENT" sub \
		-s "$(it_sock "$name")" -g s1 --hold --ready "$IT_WORK/ready-$tag" --log "$IT_WORK/slow-$tag.log" \
		--timeout-ms 120000
	local slow_pid=$IT_BG_PID
	exec {go}>"$IT_WORK/go-$tag"
	it_wait "$policy: slow subscriber subscribed" 20 test -e "$IT_WORK/ready-$tag" || return 1
	it_bg "fast-$tag" "$ns" "$PUBCTL" -s "$(it_sock "$name")" sub s1 --count "$N" --timeout 60 \
		--output "$IT_WORK/fast-$tag.bin"
	local fast_pid=$IT_BG_PID
	it_wait "$policy: two subscribers" 20 it_subscribers_at_least "$name" s1 2 || return 1

	it_bg "pub-$tag" "$ns" "$ITEST_CLIENT" pub -s "$(it_sock "$name")" -g s1 --count "$N" --size "$SIZE" \
		--rate "$RATE"
	it_reap "$IT_BG_PID" 60
	it_eq "$policy: publisher confirmed $N messages" "$IT_STATUS" 0 || {
		cat "$IT_WORK/pub-$tag.out" >&2
		return 1
	}

	# The fast subscriber is unaffected: everything, byte-identical.
	it_reap "$fast_pid" 60
	it_eq "$policy: fast subscriber received all $N messages" "$IT_STATUS" 0
	it_eq "$policy: fast subscriber's bytes" "$(sha256sum <"$IT_WORK/fast-$tag.bin" | cut -d' ' -f1)" "$want_sha"

	local drops_json sub_dropped reason_count got
	if [ "$direct" = yes ]; then
		direct_drop_oldest "$name" "$slow_pid"
		exec {go}>&-
		it_pubd_stop "$name"
		return
	fi
	drops_json=$(it_ctl "$name" --json drops)
	case $policy in
	drop-newest | drop-oldest)
		# pubctl group: the slow subscriber's row (the fast one dropped nothing).
		sub_dropped=$(it_q "$name" group s1 '[.subscribers[] | select(.name == "itest_client") | .dropped] | add // 0')
		reason_count=$(jq '[.drops[] | select(.scope == "subscriber" and (.name | endswith("itest_client/s1")) and .reason == "sub_overflow") | .count] | add // 0' <<<"$drops_json")
		it_check "$policy: the slow subscriber lost messages ($sub_dropped)" test "$sub_dropped" -gt 0 || return 1
		it_eq "$policy: pubctl drops shows them as sub_overflow for that subscriber" "$reason_count" "$sub_dropped"
		it_eq "$policy: and in the group's sub_dropped" "$(it_group_val "$name" s1 sub_dropped)" "$sub_dropped"
		it_eq "$policy: the fast subscriber lost nothing" \
			"$(it_q "$name" group s1 '[.subscribers[] | select(.name != "itest_client") | .dropped] | add // 0')" 0
		# Now let it read: it must get exactly the rest.
		echo $((N - sub_dropped)) >&"$go"
		it_reap "$slow_pid" 60
		it_eq "$policy: slow subscriber received published - dropped = $((N - sub_dropped))" "$IT_STATUS" 0
		got=$(slow_indices "$tag" | wc -l)
		it_eq "$policy: slow subscriber's count" "$got" $((N - sub_dropped))
		it_check "$policy: it got more than its queue" test "$got" -gt "$QUEUE" || return 1
		it_eq "$policy: slow subscriber's messages intact" "$(grep -c ' BAD$' "$IT_WORK/slow-$tag.log")" 0
		if [ "$policy" = drop-newest ]; then
			it_eq "$policy: it kept the oldest: 0 .. $((QUEUE - 1)) all there" \
				"$(slow_indices "$tag" | head -n "$QUEUE" | awk 'NR - 1 != $1 {bad++} END {print bad + 0}')" 0
			it_eq "$policy: it lost the newest ($((N - 1)))" "$(slow_indices "$tag" | grep -cx $((N - 1)))" 0
		else
			# The queue's QUEUE places include a delivery already being
			# written (it must finish), so QUEUE - 1 newest are certain.
			it_eq "$policy: it kept the newest: $((N - QUEUE + 1)) .. $((N - 1)) all there" \
				"$(slow_indices "$tag" | tail -n $((QUEUE - 1)) |
					awk -v f=$((N - QUEUE + 1)) 'NR - 1 + f != $1 {bad++} END {print bad + 0}')" 0
			it_eq "$policy: it lost old ones (not all of 0 .. $((QUEUE - 1)) there)" \
				"$(slow_indices "$tag" | head -n "$QUEUE" | awk 'NR - 1 != $1 {bad++} END {print (bad > 0)}')" 1
		fi
		it_eq "$policy: in publishing order" "$(slow_indices "$tag" |
			awk 'NR > 1 && $1 <= prev {bad++} {prev = $1} END {print bad + 0}')" 0
		;;
	disconnect)
		reason_count=$(jq '[.drops[] | select(.reason == "sub_disconnect" and (.scope == "subscriber" or .scope == "group-subscribers")) | .count] | add // 0' <<<"$drops_json")
		it_check "$policy: drops counted as sub_disconnect ($reason_count)" test "$reason_count" -gt 0
		# Disconnected means gone, whether or not the client ever reads again:
		# a hung application must not stay a subscriber that silently gets
		# nothing (the fast subscriber has left, so 0 subscribers).
		it_wait "$policy: pubd dropped the slow subscriber before it read anything" 10 \
			it_group_is "$name" s1 subscribers 0 ||
			it_log "$policy: still listed: $(it_ctl "$name" --json group s1 | jq -c .subscribers)"
		# Let it read: what reached its socket, then PUB_ESLOW, then
		# libpub reconnects and resubscribes without the application.
		echo 0 >&"$go"
		it_wait "$policy: the client was told it was slow (PUB_ESLOW)" 30 \
			it_lines_at_least "$IT_WORK/slow-$tag.log" "^error 2010 " 1
		it_wait "$policy: and reconnected" 30 it_lines_at_least "$IT_WORK/slow-$tag.log" "^reconnected" 1
		it_wait "$policy: and resubscribed" 30 it_subscribers_at_least "$name" s1 1
		got=$(slow_indices "$tag" | wc -l)
		it_check "$policy: what it got before the cut plus what was dropped is at most the stream" \
			test $((got + reason_count)) -le "$N"
		"$ITEST_CLIENT" pub -s "$(it_sock "$name")" -g s1 --count 1 --size 64 --start 777777 ||
			it_fail "$policy: publish after the reconnect"
		it_wait "$policy: it receives again after the reconnect" 30 \
			it_lines_at_least "$IT_WORK/slow-$tag.log" "^msg s1 .* 777777 OK" 1
		kill -TERM "$slow_pid"
		it_reap "$slow_pid" 10
		;;
	esac
	exec {go}>&-
	it_pubd_stop "$name"
}

# drop-oldest on the direct path (run_policy's caller set it up): the slow
# subscriber is let read, and must have what the log still held.
direct_drop_oldest() { # NAME SLOW_PID
	local name=$1 slow_pid=$2 got lost
	it_eq "direct: the publisher wrote a direct log" \
		"$(it_q "$name" status '.counters[] | select(.counter == "direct_logs_opened") | .value')" 1
	echo 0 >&"$go"
	it_wait "direct: the slow subscriber read up to the last message" 30 \
		it_lines_at_least "$IT_WORK/slow-drop-oldest-direct.log" " $((N - 1)) OK$" 1
	got=$(slow_indices drop-oldest-direct | wc -l)
	it_check "direct: it was lapped: it lost some ($got of $N)" test "$got" -lt "$N"
	it_check "direct: and kept more than nothing" test "$got" -gt 1
	it_eq "direct: in publishing order" "$(slow_indices drop-oldest-direct |
		awk 'NR > 1 && $1 <= prev {bad++} {prev = $1} END {print bad + 0}')" 0
	it_eq "direct: intact" "$(grep -c ' BAD$' "$IT_WORK/slow-drop-oldest-direct.log")" 0
	# What it lost it counted, exactly, and pubd shows that (a query reads
	# the counts from the subscribers' wake pages).
	lost=$((N - got))
	sub_lost() {
		[ "$(it_q "$name" group s1 '[.subscribers[] | select(.name == "itest_client") | .dropped] | add // 0')" = "$1" ]
	}
	it_wait "direct: pubd counts the $lost it lost" 10 sub_lost "$lost" ||
		it_log "direct: group s1: $(it_ctl "$name" --json group s1 | jq -c .subscribers)"
	it_eq "direct: as sub_overflow" "$(it_ctl "$name" --json drops | jq '[.drops[] | select(.scope == "subscriber" and (.name | endswith("itest_client/s1")) and .reason == "sub_overflow") | .count] | add // 0')" "$lost"
	it_eq "direct: and direct_lost" \
		"$(it_q "$name" status '.counters[] | select(.counter == "direct_lost") | .value')" "$lost"
	it_eq "direct: the fast subscriber lost nothing" \
		"$(it_q "$name" group s1 '[.subscribers[] | select(.name != "itest_client") | .dropped] | add // 0')" 0
	kill -TERM "$slow_pid"
	it_reap "$slow_pid" 10
}

for policy in ${IT_SLOW_POLICIES:-drop-newest drop-oldest disconnect}; do
	it_log "---- policy $policy"
	run_policy "$policy" || it_fail "policy $policy did not run to the end"
done
# (Over the socket, PUBD_TRANSPORT=socket, there is no direct path.)
if [ -z "${IT_SLOW_POLICIES:-}" ] && [ "${PUBD_TRANSPORT:-shm}" != socket ]; then
	it_log "---- policy drop-oldest, direct path"
	run_policy drop-oldest yes || it_fail "policy drop-oldest (direct) did not run to the end"
fi

it_finish
