#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The direct path (daemon.shm_direct): a local publisher writes a group's
# messages into a direct log of its own, which the group's local subscribers
# on shared memory read straight.
#  1. A host group and a fabric group, each with two libpub subscribers and
#     pubctl with PUBD_TRANSPORT=shm (direct readers) beside pubctl on the socket
#     (PUBD_TRANSPORT=socket, which pubd serves itself): every one gets every
#     message, intact and in order, small ones read in the log and 2 MiB
#     ones (in pieces) delivered by pubd in their place; pubd's counts add
#     up (delivered = subscribers x published, nothing dropped), and the
#     direct readers' deliveries are counted direct_delivered.
#  2. A subscribe ACL changed at reload retires the log (a mapping cannot be
#     taken back): the subscriber it no longer allows gets nothing the
#     publisher publishes after the reload, and the publisher goes on in a
#     new log nobody else had.
#  3. A subscriber that reads nothing while the writer laps it: pubd counts
#     its losses at once (sub_overflow), never more than were overwritten;
#     once it reads again it counts the rest, and for each subscriber
#     received + dropped = published.
#  4. A reader held while a reload retires the log it was handed (its
#     group's subscribe ACL changed; the writer still connected): once the
#     log goes, what it had not read is counted lost.
#  5. A reload that leaves a group's ACLs as they were keeps its logs: one
#     that changes nothing, and one that changes another group's ACL and
#     this group's publish ACL to one that still allows the writer. The
#     writer goes on in its log (no log retired or opened; one source, its
#     seq going on), and the subscriber gets every message. A reload that
#     takes the publish right away from a writer retires its log, and its
#     next message is refused.
#  6. A publisher at full speed across five reloads that each retire its
#     log (here's subscribe ACL changes, still allowing everyone here):
#     nothing it wrote is left unread in a retired log (no client_gone),
#     and the subscriber gets every message.
# With PUBD_TRANSPORT=socket (the tier's second run) nobody is on shared
# memory: every check but the direct counters holds the same (case 3 is
# shared memory's only).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup direct

N=2000
SIZE=300
BIG=$((2 * 1024 * 1024))
NBIG=8
# (limits.max_message_size is $MAXMSG, 4MiB unless set.)
write_conf() { # SUBSCRIBE_ACL_OF_acl [SUBSCRIBE_ACL_OF_held [PUBLISH_ACL_OF_here [SUBSCRIBE_ACL_OF_here]]]
	it_conf_write h1 - <<-EOF
		limits:
		  max_message_size: ${MAXMSG:-4MiB}
		${GLOG:+  group_log: $GLOG}
		  group_log_drain_ms: 1000
		groups:
		  - name: here
		    scope: host
		${3:+    publish: [$3]}
		${4:+    subscribe: [$4]}
		  - name: wire
		    address: 239.88.1.1
		  - name: acl
		    address: 239.88.1.2
		    subscribe: [$1]
		  - name: held
		    scope: host
		${2:+    subscribe: [$2]}
	EOF
}
it_host_lo h1
write_conf uid:0
ns=$(it_ns h1)
sock=$(it_sock h1)
it_pubd_start h1 "$ns" || it_die "pubd did not start"
shm=yes
[ "${PUBD_TRANSPORT:-}" = socket ] && shm=no
direct_counter() { it_counter h1 "$1"; }

# A publisher held between its steps (itest_client pub --hold, a coproc; one
# at a time): hp_start GROUP COUNT START connects it and has it publish
# COUNT messages of 100 bytes from index START; hp_go has it publish one
# more (PUB_SYNC), its answer in $line ("after RC ..."); hp_end hangs it up.
hp_next() { read -r -t 20 line <&"$hp_out" || line=timeout; }
hp_start() {
	coproc HP { ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g "$1" --count "$2" --size 100 --start "$3" --hold 2>&1; }
	exec {hp_out}<&"${HP[0]}" {hp_in}>&"${HP[1]}"
	hp_pid=$HP_PID
	hp_next
	it_eq "a publisher of $1 connected" "$line" connected
	echo go >&"$hp_in"
	hp_next
	it_eq "it published $2" "$line" "published $2"
}
hp_go() {
	echo go >&"$hp_in"
	hp_next
}
hp_end() {
	exec {hp_in}>&- {hp_out}<&-
	it_reap "$hp_pid" 20
}

# ---- 1. every subscriber, every message, in order ----
"$ITEST_CLIENT" gen --count "$N" --size "$SIZE" >"$IT_WORK/small.bin" || it_die "gen"
"$ITEST_CLIENT" gen --count "$NBIG" --size "$BIG" --start "$N" >"$IT_WORK/big.bin" || it_die "gen"
cat "$IT_WORK/small.bin" "$IT_WORK/big.bin" >"$IT_WORK/all.bin"
want_sha=$(sha256sum <"$IT_WORK/all.bin" | cut -d' ' -f1)
total=$((N + NBIG))
for g in here wire; do
	for k in 1 2; do
		it_bg "sub-$g-$k" "$ns" "$ITEST_CLIENT" sub -s "$sock" -g "$g" --count "$total" --timeout-ms 120000 \
			--log "$IT_WORK/sub-$g-$k.log"
		printf -v "SUB_${g}_$k" '%s' "$IT_BG_PID"
	done
	# pubctl takes the socket unless told otherwise: here it asks for
	# shared memory, as any libpub program may, and reads the direct log.
	PUBD_TRANSPORT=${PUBD_TRANSPORT:-shm} it_bg "pubctl-$g" "$ns" "$PUBCTL" -s "$sock" sub "$g" --count "$total" \
		--timeout 120 --output "$IT_WORK/pubctl-$g.bin"
	printf -v "PUBCTL_$g" '%s' "$IT_BG_PID"
	PUBD_TRANSPORT=socket it_bg "sock-$g" "$ns" "$PUBCTL" -s "$sock" sub "$g" --count "$total" --timeout 120 \
		--output "$IT_WORK/sock-$g.bin"
	printf -v "SOCK_$g" '%s' "$IT_BG_PID"
	it_wait "four subscribers of $g" 20 it_subscribers_at_least h1 "$g" 4 || it_die "subscribers of $g"
done
for g in here wire; do
	# One publisher a group, small ones (in the log) then large ones (in
	# pieces, which pubd delivers to the log's readers in their place).
	{
		ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g "$g" --count "$N" --size "$SIZE" --rate 20000 &&
			ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g "$g" --count "$NBIG" --size "$BIG" --start "$N"
	} >"$IT_WORK/pub-$g.out" 2>&1 || it_fail "publish to $g: $(cat "$IT_WORK/pub-$g.out")"
done
for g in here wire; do
	for k in 1 2; do
		v="SUB_${g}_$k"
		it_reap "${!v}" 120
		it_eq "$g: libpub subscriber $k received $total" "$IT_STATUS" 0
		it_eq "$g: libpub subscriber $k: in order, each once, intact" \
			"$(awk -v want="$total" '$1 == "msg" { if ($6 != n || $7 != "OK") bad++; n++ }
				END { print (bad ? bad " out of order or damaged" : "ok") " " n "/" want }' "$IT_WORK/sub-$g-$k.log")" \
			"ok $total/$total"
	done
	for w in pubctl sock; do
		v="${w^^}_$g"
		it_reap "${!v}" 120
		it_eq "$g: $w subscriber received $total" "$IT_STATUS" 0
		it_eq "$g: $w subscriber: every byte, in order" "$(sha256sum <"$IT_WORK/$w-$g.bin" | cut -d' ' -f1)" "$want_sha"
	done
done
for g in here wire; do
	it_eq "$g: published $total, delivered 4 x $total, nothing dropped" \
		"$(it_group_val h1 "$g" published) $(it_group_val h1 "$g" delivered) $(it_group_val h1 "$g" dropped)" \
		"$total $((4 * total)) 0"
done
if [ "$shm" = yes ]; then
	it_eq "a direct log per publisher and group" "$(direct_counter direct_logs_opened)" 4
	# Three direct readers a group read the small ones in the log.
	it_eq "direct_delivered: 3 readers x $N small ones x 2 groups" "$(direct_counter direct_delivered)" $((6 * N))
	it_eq "direct_lost: none" "$(direct_counter direct_lost)" 0
else
	it_eq "no direct log on the socket" "$(direct_counter direct_logs_opened)" 0
fi

# ---- 2. a reload that takes the subscribe ACL away retires the log ----
it_bg acl-sub "$ns" "$ITEST_CLIENT" sub -s "$sock" -g acl -g here --log "$IT_WORK/acl-sub.log" --timeout-ms 60000
acl_sub=$IT_BG_PID
it_wait "a subscriber of acl" 20 it_subscribers_at_least h1 acl 1 || it_die "no acl subscriber"
hp_start acl 10 0
it_wait "the subscriber has the 10" 20 it_lines_at_least "$IT_WORK/acl-sub.log" '^msg acl ' 10
if [ "$shm" = yes ]; then
	it_eq "acl: the subscriber reads the publisher's log" "$(it_q h1 group acl '.subscribers[0].direct_logs')" 1
fi
retired=$(direct_counter direct_logs_retired)
write_conf uid:4242
kill -HUP "$(it_pid h1)"
it_wait "the reload took the subscription away" 20 it_group_is h1 acl subscribers 0
if [ "$shm" = yes ]; then
	it_eq "acl: the reload retired the publisher's log" "$(direct_counter direct_logs_retired)" $((retired + 1))
fi
hp_go
it_eq "the acl publisher's next message was taken" "$line" "after 0"
hp_end
it_eq "pubd has the 11" "$(it_group_val h1 acl published)" 11
# A message of its other group wakes it: it reads every log it has then.
"$ITEST_CLIENT" pub -s "$sock" -g here --count 1 --size 64 --start 777777 || it_fail "publish to here"
it_wait "the subscriber read on (here)" 20 it_lines_at_least "$IT_WORK/acl-sub.log" '^msg here .* 777777 OK' 1
it_eq "the subscriber the ACL no longer allows got none after the reload" \
	"$(grep -c '^msg acl ' "$IT_WORK/acl-sub.log")" 10
kill -TERM "$acl_sub"
it_reap "$acl_sub" 10

# ---- 3. a direct reader that does not read ----
if [ "$shm" = yes ]; then
	# A subscriber that reads nothing while a publisher laps it three times
	# over: its losses are counted at once (pubd, from the position in its
	# wake page against the writer's claim), within the messages of a
	# sixty-fourth of the log; once it reads again it counts the rest
	# itself. Beside it a subscriber that reads. In the end, what each
	# received plus what was dropped for it is what was published.
	M=12000 MSZ=1000
	# A record of one: header 16, deliver head 16, the group's name, the
	# payload, 16-byte aligned; the log holds 4 MiB of them.
	per_log=$(((4 << 20) / ((16 + 16 + 4 + MSZ + 15) / 16 * 16)))
	mkfifo "$IT_WORK/held.in"
	it_bg held "$ns" bash -c "exec \"\$0\" \"\$@\" <\"$IT_WORK/held.in\"" "$ITEST_CLIENT" sub -s "$sock" -g held \
		--hold --count "$M" --timeout-ms 3000 --log "$IT_WORK/held.log"
	held=$IT_BG_PID
	exec {held_in}>"$IT_WORK/held.in"
	it_bg reader "$ns" "$ITEST_CLIENT" sub -s "$sock" -g held --count "$M" --timeout-ms 20000 --log "$IT_WORK/reader.log"
	reader=$IT_BG_PID
	it_wait "two subscribers of held" 20 it_subscribers_at_least h1 held 2 || it_die "subscribers of held"
	hid=$(it_q h1 group held ".subscribers[] | select(.pid == $held) | .client")
	ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g held --count "$M" --size "$MSZ" --rate 10000 ||
		it_fail "publish to held"
	it_wait "the held subscriber's losses counted while it reads nothing" 10 \
		it_holds '[ "$(it_q h1 group held ".subscribers[] | select(.client == $hid) | .dropped")" -ge $((M - per_log - 200)) ]'
	hdrop=$(it_q h1 group held ".subscribers[] | select(.client == $hid) | .dropped")
	hdel=$(it_q h1 group held ".subscribers[] | select(.client == $hid) | .delivered")
	it_check "held: no more counted lost than the writer overwrote ($hdrop of $M, the log holds $per_log)" \
		test "$hdrop" -le $((M - per_log))
	it_eq "held: delivered + dropped while held" $((hdel + hdrop)) "$M"
	# It reads what the log still holds, counts the rest, and times out.
	echo "$M" >&"$held_in"
	it_reap "$held" 30
	exec {held_in}>&-
	it_reap "$reader" 30
	rgot=$(grep -c '^msg held .* OK$' "$IT_WORK/reader.log")
	got=$(grep -c '^msg held .* OK$' "$IT_WORK/held.log")
	it_check "held: it read the newest messages the log kept ($got)" test "$got" -ge $((per_log / 2)) -a "$got" -le "$per_log"
	it_eq "held: published $M, and for the two subscribers received + dropped = 2 x $M" \
		"$(it_group_val h1 held published) $(($(it_group_val h1 held delivered) + $(it_group_val h1 held sub_dropped)))" \
		"$M $((2 * M))"
	it_eq "held: what pubd counts delivered is what the two received ($got + $rgot)" \
		"$(it_group_val h1 held delivered)" $((got + rgot))
	it_eq "held: and its bytes ($MSZ each)" "$(it_group_val h1 held delivered_bytes)" $(((got + rgot) * MSZ))

	# 4. The same reader, held while a reload retires the log it was
	# handed: held's subscribe ACL changes (to one that still allows it),
	# with the writer still connected. Once the log goes
	# (group_log_drain_ms), what the reader had not read is counted lost,
	# not left counted delivered.
	K=500
	pub0=$(it_group_val h1 held published) del0=$(it_group_val h1 held delivered)
	sd0=$(it_group_val h1 held sub_dropped) retired=$(direct_counter direct_logs_retired)
	mkfifo "$IT_WORK/held2.in"
	it_bg held2 "$ns" bash -c "exec \"\$0\" \"\$@\" <\"$IT_WORK/held2.in\"" "$ITEST_CLIENT" sub -s "$sock" -g held \
		--hold --count "$K" --timeout-ms 2000 --log "$IT_WORK/held2.log"
	held=$IT_BG_PID
	exec {held_in}>"$IT_WORK/held2.in"
	it_wait "the held subscriber" 20 it_subscribers_at_least h1 held 1 || it_die "no subscriber of held"
	hid=$(it_q h1 group held ".subscribers[] | select(.pid == $held) | .client")
	hp_start held "$K" 0
	it_wait "the held reader was handed the $K" 20 \
		it_holds '[ "$(it_q h1 group held ".subscribers[] | select(.client == $hid) | .delivered")" = $K ]'
	it_eq "held: none of them lost yet" "$(it_q h1 group held ".subscribers[] | select(.client == $hid) | .dropped")" 0
	it_eq "held: its writer's log is live" "$(direct_counter direct_logs_retired)" "$retired"
	write_conf uid:4242 uid:0
	it_ctl h1 reload >/dev/null || it_fail "the reload"
	it_eq "the reload retired held's log (its writer still connected)" \
		"$(direct_counter direct_logs_retired) $(kill -0 "$hp_pid" 2>/dev/null && echo connected)" \
		"$((retired + 1)) connected"
	it_wait "once the retired log went, what the held reader had not read counted lost" 20 \
		it_holds '[ "$(it_q h1 group held ".subscribers[] | select(.client == $hid) | .dropped")" = $K ]'
	hp_end
	echo "$K" >&"$held_in"
	it_reap "$held" 20
	exec {held_in}>&-
	got=$(grep -c '^msg held ' "$IT_WORK/held2.log")
	it_eq "held: published $K more; received ($got) + dropped = $K" \
		"$(($(it_group_val h1 held published) - pub0)) $(($(it_group_val h1 held delivered) - del0 + $(it_group_val h1 held sub_dropped) - sd0))" \
		"$K $K"
	it_eq "held: delivered counts what it received" $(($(it_group_val h1 held delivered) - del0)) "$got"
fi

# ---- 5. a reload that leaves a group's ACLs as they were keeps its logs ----
# A publisher of here, connected across two reloads: one that changes
# nothing, and one that changes acl's subscribe ACL and here's publish ACL
# to one that still allows it (root). It goes on in the log it has: no log
# retired or opened, and its 11 messages reach the subscriber under one
# source, seq 0 to 10. A third reload takes here's publish right from
# root: a second publisher's log is retired, and its next message refused.
# (Through the socket the same holds, bar the direct counters.)
write_conf uid:4242 uid:0
it_ctl h1 reload >/dev/null || it_fail "the reload to case 5's start"
it_bg sub5 "$ns" "$ITEST_CLIENT" sub -s "$sock" -g here --timeout-ms 60000 --log "$IT_WORK/sub5.log"
sub5=$IT_BG_PID
it_wait "a subscriber of here" 20 it_subscribers_at_least h1 here 1 || it_die "no subscriber of here"
hp_start here 10 5000
it_wait "the subscriber has the 10" 20 it_lines_at_least "$IT_WORK/sub5.log" '^msg here ' 10
retired=$(direct_counter direct_logs_retired) opened=$(direct_counter direct_logs_opened)
reloads=$(direct_counter reloads)
it_ctl h1 reload >/dev/null || it_fail "a reload that changes nothing"
write_conf uid:0 uid:0 uid:0
it_ctl h1 reload >/dev/null || it_fail "a reload that changes acl's subscribe ACL and here's publish ACL"
it_eq "two reloads applied; no direct log retired or opened by them" \
	"$(direct_counter reloads) $(direct_counter direct_logs_retired) $(direct_counter direct_logs_opened)" \
	"$((reloads + 2)) $retired $opened"
hp_go
it_eq "here's publisher's message after the reloads was taken" "$line" "after 0"
# (It hangs up right after: its log is retired then.)
it_eq "it went into the same log (none opened)" "$(direct_counter direct_logs_opened)" "$opened"
hp_end
it_wait "the subscriber has the 11" 20 it_lines_at_least "$IT_WORK/sub5.log" '^msg here ' 11
# (Its own source and seq from 0 on the direct path; pubd's, going on from
# the messages before, through the socket.)
it_eq "the 11: one source, seq one after another, in order and intact" \
	"$(awk '$1 == "msg" && $2 == "here" { if (!n) { src = $3; s0 = $4 }
			if ($3 != src || $4 != s0 + n || $6 != 5000 + n || $7 != "OK") bad++; n++ }
		END { print (bad ? bad " off" : "ok") " " n }' "$IT_WORK/sub5.log")" "ok 11"
# The publish right taken away: a writer's log retired, its message refused.
hp_start here 1 6000
it_wait "the subscriber has its message" 20 it_lines_at_least "$IT_WORK/sub5.log" '^msg here .* 6000 OK' 1
retired=$(direct_counter direct_logs_retired)
write_conf uid:0 uid:0 uid:4242
it_ctl h1 reload >/dev/null || it_fail "a reload that takes here's publish right from root"
if [ "$shm" = yes ]; then
	it_eq "the reload retired the writer's log" "$(direct_counter direct_logs_retired)" $((retired + 1))
fi
hp_go
it_check "its next message refused by the ACL ($line)" grep -q '^after -' <<<"$line"
hp_end
# The right given back, a marker from a new publisher: when the subscriber
# has it, it has read every log it was handed.
write_conf uid:0 uid:0
it_ctl h1 reload >/dev/null || it_fail "a reload that gives here's publish right back"
"$ITEST_CLIENT" pub -s "$sock" -g here --count 1 --size 100 --start 7000 || it_fail "publish the marker to here"
it_wait "the subscriber has the marker" 20 it_lines_at_least "$IT_WORK/sub5.log" '^msg here .* 7000 OK' 1
kill -TERM "$sub5"
it_reap "$sub5" 10
it_eq "the subscriber got none after the right was taken" "$(grep -c '^msg here .* 6001 ' "$IT_WORK/sub5.log")" 0

# ---- 6. a publisher at full speed across reloads that retire its log ----
N6=300000
write_conf uid:0 uid:0
it_ctl h1 reload >/dev/null || it_fail "the reload to case 6's start"
here_drops() { it_q h1 drops '[.drops[] | select(.name == "here") | .count] | add // 0'; }
pub0=$(it_group_val h1 here published) retired=$(direct_counter direct_logs_retired) drops0=$(here_drops)
it_bg sub6 "$ns" "$ITEST_CLIENT" sub -s "$sock" -g here --count "$N6" --timeout-ms 30000
sub6=$IT_BG_PID
it_wait "a subscriber of here" 20 it_subscribers_at_least h1 here 1 || it_die "no subscriber of here"
it_bg pub6 "$ns" "$ITEST_CLIENT" pub -s "$sock" -g here --count "$N6" --size 64 --rate 150000
pub6=$IT_BG_PID
for k in 1 2 3 4 5; do
	it_wait "here: $k sixths published" 20 \
		it_holds '[ $(($(it_group_val h1 here published) - pub0)) -ge $((k * N6 / 6)) ]' || break
	if [ $((k % 2)) = 1 ]; then write_conf uid:0 uid:0 "" uid:0; else write_conf uid:0 uid:0; fi
	it_ctl h1 reload >/dev/null || it_fail "reload $k of here's subscribe ACL"
done
it_reap "$pub6" 30
it_eq "here: the publisher had all $N6 taken (PUB_SYNC)" "$IT_STATUS" 0
it_reap "$sub6" 30
it_eq "here: the subscriber got all $N6" "$IT_STATUS" 0
it_eq "here: published $N6, nothing dropped" \
	"$(($(it_group_val h1 here published) - pub0)) $(($(here_drops) - drops0))" "$N6 0"
if [ "$shm" = yes ]; then
	it_check "here: the reloads retired its logs ($(($(direct_counter direct_logs_retired) - retired)))" \
		test $(($(direct_counter direct_logs_retired) - retired)) -ge 5
fi

# ---- 7. a reload that lowers limits.max_message_size ----
# A direct log's readers check a message's size against the limit HELLO
# told them, before pubd reads it. A publisher writes 10 messages of 100
# bytes; a reload lowers the limit to 64 bytes; its next message of 100
# must be refused (too_large) and reach no one. Before, the subscriber read
# it from the log while pubd refused it and told the publisher so. Then a
# message of 50 bytes from a new publisher is delivered: the path is whole.
write_conf uid:0 uid:0
it_ctl h1 reload >/dev/null || it_fail "the reload to case 7's start"
it_bg sub7 "$ns" "$ITEST_CLIENT" sub -s "$sock" -g here --timeout-ms 60000 --log "$IT_WORK/sub7.log"
sub7=$IT_BG_PID
it_wait "a subscriber of here" 20 it_subscribers_at_least h1 here 1 || it_die "no subscriber of here"
too_large0=$(it_q h1 drops '[.drops[] | select(.name == "here" and .reason == "too_large") | .count] | add // 0')
hp_start here 10 8000
it_wait "the subscriber has the 10" 20 it_lines_at_least "$IT_WORK/sub7.log" '^msg here ' 10
MAXMSG=64 write_conf uid:0 uid:0
it_ctl h1 reload >/dev/null || it_fail "a reload that lowers limits.max_message_size to 64 bytes"
hp_go
it_check "the publisher's message of 100 bytes refused ($line)" grep -q '^after -' <<<"$line"
hp_end
ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g here --count 1 --size 50 --start 8100 ||
	it_fail "publish 50 bytes to here under the new limit"
it_wait "the subscriber has the message of 50 bytes" 20 it_lines_at_least "$IT_WORK/sub7.log" '^msg here .* 8100 OK' 1
kill -TERM "$sub7"
it_reap "$sub7" 10
it_eq "the subscriber did not get the refused message" "$(grep -c '^msg here .* 8010 ' "$IT_WORK/sub7.log")" 0
it_eq "it was counted too_large" \
	"$(it_q h1 drops '[.drops[] | select(.name == "here" and .reason == "too_large") | .count] | add // 0')" \
	$((too_large0 + 1))

# ---- 8. a forked child closes the handle it inherited ----
# The parent goes on receiving: all 5 published after the child is gone.
# Failed (0 of 5, pubd counting them delivered) while closing a handle
# said in each direct log's slot that the reader let it go: the child
# wrote it into the deliver log it shares with the parent.
out=$(ip netns exec "$ns" "$ITEST_CLIENT" forksub -s "$sock" -g here --count 5 2>&1)
it_eq "the parent got every message after its child closed the inherited handle" "$out" "forksub: got 5 of 5"

# ---- 9. a message in pieces and a direct log's messages, read in turns ----
# One subscriber of here and wire. Messages of 1 MiB on wire come in
# pieces (a group log of 64 KiB), while a local publisher's messages of
# here come one after another from its direct log: pub_recv reads the two
# in turns. Each must come out under its own group. A direct log's
# message read while the pieces came wrote its group where the message in
# pieces kept its own: a 1 MiB message of wire came out as one of here.
GLOG=64KiB write_conf uid:0 uid:0
it_ctl h1 reload >/dev/null || it_fail "the reload to case 9's start (a 64 KiB group log)"
drops9=$(here_drops)
wire_drops() { it_q h1 drops '[.drops[] | select(.name == "wire") | .count] | add // 0'; }
wdrops9=$(wire_drops)
it_bg sub9 "$ns" "$ITEST_CLIENT" sub -s "$sock" -g here -g wire --count 20008 --timeout-ms 60000 \
	--log "$IT_WORK/sub9.log"
sub9=$IT_BG_PID
it_wait "a subscriber of here and wire" 20 it_subscribers_at_least h1 wire 1 || it_die "no subscriber of wire"
it_bg pub9h "$ns" "$ITEST_CLIENT" pub -s "$sock" -g here --count 20000 --size 100 --rate 20000
pub9h=$IT_BG_PID
ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g wire --count 8 --size $((1024 * 1024)) ||
	it_fail "publish 8 of 1 MiB to wire"
it_reap "$pub9h" 30
it_reap "$sub9" 60
# A subscriber busy gathering 1 MiB in pieces may be lapped on here's
# direct log (CI's slower build lost 101 of 20,000 so): what it did not get
# must be counted, each message either way.
got9=$(grep -c '^msg here ' "$IT_WORK/sub9.log")
it_wait "here: each of the 20,000 got ($got9) or counted lost" 10 \
	it_holds '[ $((got9 + $(here_drops) - drops9)) -eq 20000 ]'
it_log "here: $got9 got, $(($(here_drops) - drops9)) counted lost"
# The same for wire's 1 MiB pieces (one was lapped in a CI run on a host
# busy with benchmarks): got or counted, and none of them under here.
wire9=$(awk '$1 == "msg" && $5 == 1048576 { n[$2]++ } END { print n["wire"] + 0, n["here"] + 0 }' "$IT_WORK/sub9.log")
it_log "wire: ${wire9% *} of 8 got, $(($(wire_drops) - wdrops9)) counted lost"
it_eq "each under its own group: 8 of 1 MiB on wire (got or counted lost), none on here" \
	"$((${wire9% *} + $(wire_drops) - wdrops9)) ${wire9#* }" "8 0"

# ---- 10. a publisher that exits while a subscriber is stopped ----
# A subscriber of here stopped (SIGSTOP) while a publisher writes 30
# messages into its direct log and exits, and for twice
# group_log_drain_ms (1 s) after: its log was read whole by pubd and
# nobody writes it again, so the subscriber, slow but not lapped, gets all
# 30 once it runs again, and nothing is counted lost. The log went at the
# first drain time, and the subscriber got none of them (counted
# sub_overflow).
drops10=$(here_drops)
it_bg sub10 "$ns" "$ITEST_CLIENT" sub -s "$sock" -g here --count 30 --timeout-ms 30000 --log "$IT_WORK/sub10.log"
sub10=$IT_BG_PID
it_wait "a subscriber of here" 20 it_subscribers_at_least h1 here 1 || it_die "no subscriber of here"
kill -STOP "$sub10"
ip netns exec "$ns" "$ITEST_CLIENT" pub -s "$sock" -g here --count 30 --size 256 || it_fail "publish 30 to here"
sleep 2 # the condition under test: the reader stopped past group_log_drain_ms
kill -CONT "$sub10"
it_reap "$sub10" 30
it_eq "the stopped subscriber got all 30 of the publisher that exited" \
	"$(grep -c '^msg here ' "$IT_WORK/sub10.log")" 30
it_eq "and none was counted lost" "$(($(here_drops) - drops10))" 0
it_pubd_stop h1
it_finish
