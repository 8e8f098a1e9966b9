# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# shellcheck disable=SC2016 # it_holds conditions are single-quoted: evaluated on each try
#
# Hostile cases against the direct path (common/directlog.h): a publisher's
# direct log, which it writes and the group's subscribers on shared memory
# read beside pubd, and each subscriber's wake page, which it writes and
# the writers and pubd read. One function case_NAME each, run like those of
# cases.sh (case.sh sources this file; run.sh lists its cases). The
# attacker is tests/hostile/hostile_direct; the honest clients are
# itest_client (libpub), whose payloads carry their index.

hd_tool() {
	HDIRECT=$HOSTILE_TOOLS/hostile_direct
	[ -x "$HDIRECT" ] || it_die "hostile_direct not found in $HOSTILE_TOOLS"
}

# hd_honest LOG START N: how many of the messages START..START+N-1 of an
# honest itest_client publisher an itest_client subscriber logged, whole
# (each counted once).
hd_honest() {
	awk -v s="$2" -v n="$3" '$1 == "msg" && $7 == "OK" && $6 >= s && $6 < s + n { seen[$6] = 1 }
		END { print length(seen) }' "$1" 2>/dev/null || echo 0
}

hd_honest_at_least() { [ "$(hd_honest "$1" "$2" "$3")" -ge "$4" ]; }

# hd_maps PID INODE: does process PID map the file with that inode (a
# direct log's memfd; the read-only file a reader gets is the same inode)?
hd_maps() { awk -v i="$2" '$5 == i { f = 1 } END { exit !f }' "/proc/$1/maps" 2>/dev/null; }
hd_unmapped() { ! hd_maps "$1" "$2"; }
hd_none_mapped() { # PID INODE...
	local pid=$1 i
	shift
	for i in "$@"; do hd_maps "$pid" "$i" && return 1; done
	return 0
}

# A subscriber's column in pubctl group G's subscribers table, by client id.
hd_sub_val() { # NAME GROUP CLIENT COLUMN
	it_q "$1" group "$2" ".subscribers[] | select(.client == $3) | .$4"
}

# A subscription's drops of one reason (pubctl drops, scope subscriber).
hd_sub_drops() { # NAME CLIENT GROUP REASON
	it_q "$1" drops "[.drops[] | select(.scope == \"subscriber\" and (.name | startswith(\"$2:\")) and (.name | endswith(\"/$3\")) and .reason == \"$4\") | .count] | add // 0"
}

# hd_client_of NAME GROUP PID: the client id of the subscriber of GROUP
# whose process is PID.
hd_client_of() {
	it_q "$1" group "$2" ".subscribers[] | select(.pid == $3) | .client"
}

hd_counter_or_0() { local v; v=$(it_counter "$1" "$2"); echo "${v:-0}"; }

# ---- a record no libpub writes in a direct log ----
# A publisher given a direct log writes one record that no libpub writes
# (a length above max_record, a lap the log is not on, a message of
# another group whose publish ACL refuses everybody, a PUB_SYNC req_id
# above 32 bits, a later piece with no first) and rings pubd and the log's
# readers. pubd must end that client (a protocol error, counted) and
# nobody else: an honest subscriber of the group on shared memory, which
# was handed each hostile log and read the garbage itself, keeps every
# message of an honest publisher published meanwhile and lets go of each
# hostile log. Fails if pubd takes the record (checked by breaking it:
# srv_direct_decode without its group check answers the message of h2
# with an ACL error and leaves its writer connected), or the subscriber
# keeps a hostile log mapped.
case_c_direct_garbage() {
	hd_tool
	h_pubd d <<-EOF
		$(h_groups)
		  - name: h2
		    address: 239.77.0.2
		    publish: []
	EOF
	local n=3000 start=1000000 kind out pe0 pe1 ino sub pub got kept=0 answered=0 figs=""
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --timeout-ms 60000 --log "$IT_WORK/sub.log"
	sub=$IT_BG_PID
	it_wait "the honest subscriber" 20 it_subscribers_at_least d h 1 || return
	pe0=$(it_counter d clients_protocol_errors)
	# The honest publisher, paced over the attacks (3 s), the last with PUB_SYNC.
	it_bg pub - "$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count $n --size 100 --start $start --rate 1000
	pub=$IT_BG_PID
	it_wait "the honest publisher began" 20 hd_honest_at_least "$IT_WORK/sub.log" $start $n 1 || return
	for kind in len lap group reqid piece; do
		it_bg "g-$kind" - "$HDIRECT" garbage -s "$(it_sock d)" -g h --kind $kind --other h2 \
			--ready "$IT_WORK/g-$kind.ready" --go "$IT_WORK/g-$kind.go"
		it_wait "$kind: the hostile log is made" 20 h_ready "g-$kind" || return
		ino=$(sed -n 's/.*direct log inode \([0-9]*\)$/\1/p' "$IT_WORK/g-$kind.out")
		# Not vacuous: the honest subscriber maps it before the garbage.
		it_wait "$kind: the honest subscriber maps the hostile log" 10 hd_maps "$sub" "${ino:-0}"
		touch "$IT_WORK/g-$kind.go"
		it_reap "$IT_BG_PID" 20
		out=$(tail -n 1 "$IT_WORK/g-$kind.out")
		it_check "$kind: pubd ends the writer with a protocol error ($out)" \
			grep -q "pubd answered error 1 (proto), connection closed" <<<"$out"
		it_check "$kind: the honest subscriber was a reader of it" grep -q ", 1 readers rung" <<<"$out"
		it_wait "$kind: the honest subscriber lets go of the hostile log" 10 hd_unmapped "$sub" "${ino:-0}" ||
			kept=$((kept + 1))
		timeout 3 "$PUBCTL" -s "$(it_sock d)" status >/dev/null && answered=$((answered + 1))
		figs+="$kind: ${out#garbage "$kind": }; "
	done
	it_reap "$pub" 30
	it_eq "the honest publisher's messages all taken (PUB_SYNC)" "$IT_STATUS" 0
	it_wait "the honest subscriber got all $n" 20 hd_honest_at_least "$IT_WORK/sub.log" $start $n $n
	got=$(hd_honest "$IT_WORK/sub.log" $start $n)
	pe1=$(it_counter d clients_protocol_errors)
	h_fig "${figs}honest subscriber: $got of $n of the honest publisher's, $(it_lines "$IT_WORK/sub.log" '^error') errors, still mapping $kept hostile logs; clients_protocol_errors $pe0 -> $pe1; h2 published $(it_group_val d h2 published); pubctl status answered $answered of 5 during the attacks"
	it_eq "every honest message reached the honest subscriber" "$got" $n
	it_check "the honest subscriber is still running" kill -0 "$sub"
	it_eq "and saw no error" "$(it_lines "$IT_WORK/sub.log" '^error')" 0
	it_eq "5 protocol errors counted" $((pe1 - pe0)) 5
	it_eq "nothing published into h2 (its ACL refuses everybody)" "$(it_group_val d h2 published)" 0
	it_eq "pubctl status answered after each attack" "$answered" 5
	it_check "pubd still answers" "$PUBCTL" -s "$(it_sock d)" pub h "after the garbage"
}

# ---- a direct log scribbled over while it is read ----
# The writer owns every byte of its direct log. Nine writers, one after the
# other, each on a log of its own that an honest subscriber reads, mix
# well-formed messages (written without waiting for anybody) with one kind
# of lie each, for half a second: claim and latest a lap or more ahead;
# latest inside the last record; latest behind with the claim a lap ahead;
# pubd's line (head, lazy, retired, wakers_gen, reader_sleeping); the
# writer's line (tail, wakers_seen, writer_waiting, closed); the header
# (magic, version, capacity, max_record); records of another lap; first
# pieces whose rest never comes; random bytes over the ring. Every reader,
# pubd and the space eventfd are rung at each turn. The honest subscriber
# must neither crash nor hang: it keeps every message an honest publisher
# of the group publishes meanwhile, and lets go of every scribbled log;
# pubd answers every query at once. Fails if the subscriber follows a lie
# out of the ring (a crash) or spins on one (no messages), or keeps a
# scribbled log (checked by breaking libpub's directrecv.c so that it
# ignores both a record no libpub writes and the log's retirement).
case_c_direct_scribble() {
	hd_tool
	h_pubd d < <(h_groups)
	local n=5000 start=2000000 sub pub hostile poller k ino inos=() kept=0 worst=0 asked answered c0 c1 got
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --timeout-ms 60000 --log "$IT_WORK/sub.log"
	sub=$IT_BG_PID
	it_wait "the honest subscriber" 20 it_subscribers_at_least d h 1 || return
	it_bg pub - "$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count $n --size 100 --start $start --rate 1000
	pub=$IT_BG_PID
	it_wait "the honest publisher began" 20 hd_honest_at_least "$IT_WORK/sub.log" $start $n 1 || return
	c0=$(h_cpu "$sub")
	it_bg scribble - "$HDIRECT" scribble -s "$(it_sock d)" -g h --seconds 4.5 --ready "$IT_WORK/scribble.ready" \
		--go "$IT_WORK/scribble.go"
	hostile=$IT_BG_PID
	# pubctl status, one after the other, for as long as the scribbler goes on.
	(
		while kill -0 "$hostile" 2>/dev/null && [ "$(ps -o stat= -p "$hostile" | cut -c1)" != Z ]; do
			t0=$(date +%s%N)
			if timeout 3 "$PUBCTL" -s "$(it_sock d)" status >/dev/null 2>&1; then r=ok; else r=FAILED; fi
			echo "$r $((($(date +%s%N) - t0) / 1000000))"
		done
	) >"$IT_WORK/status.times" &
	poller=$!
	for k in 0 1 2 3 4 5 6 7 8; do
		it_wait "scribbler $k has its log" 20 test -e "$IT_WORK/scribble.ready.$k" || return
		ino=$(sed -n 's/.*: direct log inode \([0-9]*\) of.*/\1/p' "$IT_WORK/scribble.out" | sed -n "$((k + 1))p")
		# Not vacuous: the honest subscriber maps it before the scribbling.
		it_wait "the honest subscriber maps scribbled log $k" 10 hd_maps "$sub" "${ino:-0}"
		inos+=("${ino:-0}")
		touch "$IT_WORK/scribble.go.$k"
	done
	it_reap "$hostile" 20
	wait "$poller"
	c1=$(h_cpu "$sub")
	it_reap "$pub" 30
	it_eq "the honest publisher's messages all taken (PUB_SYNC)" "$IT_STATUS" 0
	it_wait "the honest subscriber got all $n" 20 hd_honest_at_least "$IT_WORK/sub.log" $start $n $n
	got=$(hd_honest "$IT_WORK/sub.log" $start $n)
	it_wait "the honest subscriber lets go of every scribbled log" 10 hd_none_mapped "$sub" "${inos[@]}"
	for ino in "${inos[@]}"; do hd_maps "$sub" "$ino" && kept=$((kept + 1)); done
	asked=$(wc -l <"$IT_WORK/status.times")
	answered=$(grep -c '^ok ' "$IT_WORK/status.times")
	worst=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$IT_WORK/status.times")
	h_fig "$(grep -v 'direct log inode' "$IT_WORK/scribble.out" | sed 's/^scribble //' | tr '\n' ';') honest subscriber: $got of $n of the honest publisher's, $(it_lines "$IT_WORK/sub.log" '^msg h ') messages in all, $(it_lines "$IT_WORK/sub.log" '^error') errors, $((c1 - c0)) CPU ticks meanwhile, still mapping $kept of the 9 scribbled logs; pubctl status $answered of $asked answered, the slowest in $worst ms"
	it_eq "every honest message reached the honest subscriber" "$got" $n
	it_check "the honest subscriber is still running" kill -0 "$sub"
	it_eq "and saw no error" "$(it_lines "$IT_WORK/sub.log" '^error')" 0
	it_eq "it let go of every scribbled log" "$kept" 0
	it_eq "every pubctl status answered while the scribbler went on" "$answered" "$asked"
	it_check "each within 1 s (the slowest: $worst ms)" test "$worst" -lt 1000
	it_check "pubd still answers" "$PUBCTL" -s "$(it_sock d)" pub h "after the scribble"
}

# ---- a reader's file of a direct log is read-only ----
# A subscriber (uid nobody, as a member of group pubd would be) given a
# publisher's direct log to read tries every way it knows to write to it:
# a shared writable mapping, mprotect, write, pwrite, ftruncate (both
# ways), fallocate's hole punch, madvise(MADV_REMOVE), a seal, fchmod,
# /proc/self/fd/N opened again for writing, /proc/self/mem, a writable fd
# of it among its own; and a private mapping's writes must stay its own.
# Each must fail: what a reader could write, every other reader and pubd
# would read as the writer's. Fails if pubd hands the memfd itself to a
# reader (direct.c: d->ro_fd = dup(memfd) instead of srv_shm_read_only),
# or the file's mode lets its reader open it again for writing (root
# could: it is no attacker here).
case_c_direct_readonly() {
	hd_tool
	h_pubd d < <(h_groups)
	# nobody may reach the socket (it would be in group pubd)
	chmod 0755 "$IT_WORK"
	chmod 0666 "$(it_sock d)"
	it_bg ro - setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$HDIRECT" readonly -s "$(it_sock d)" -g h --seconds 20
	local ro=$IT_BG_PID
	it_wait "the hostile subscriber" 20 it_subscribers_at_least d h 1 || return
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 10 --size 100 || it_fail "the honest publisher"
	it_reap "$ro" 30
	h_fig "$(grep -E '^readonly: (given|the log|[0-9]+ of)' "$IT_WORK/ro.out" | tr '\n' ' ')$(grep -c ': WORKED$' "$IT_WORK/ro.out") worked: $(grep ': WORKED$' "$IT_WORK/ro.out" | sed 's/^readonly: //; s/: WORKED$//' | tr '\n' ',')"
	it_check "the hostile subscriber was given the publisher's direct log" grep -q "^readonly: given log" "$IT_WORK/ro.out"
	it_check "as uid nobody" grep -q "as uid 65534$" "$IT_WORK/ro.out"
	it_check "and mapped it read-only" grep -q "maps read-only, magic right" "$IT_WORK/ro.out"
	it_check "at least 15 ways tried" test "$(grep -cE ': (refused|WORKED)' "$IT_WORK/ro.out")" -ge 15
	it_eq "none of them wrote (exit status)" "$IT_STATUS" 0
	it_eq "none of them wrote" "$(grep -c ': WORKED$' "$IT_WORK/ro.out")" 0
	it_check "pubd still answers" "$PUBCTL" -s "$(it_sock d)" pub h "after the attempts"
}

# ---- a subscriber's wake page lies ----
# The wake page is its subscriber's to write; writers read it to know whom
# to ring, and pubd takes the lost counts there as the subscription's
# sub_overflow drops. A subscriber that flips sleep_seq nonstop (every
# writer rings it once per message) and writes ever larger lost counts
# into every slot of its page, and reads nothing:
#  1. joins a log that already holds 2000 messages (a publisher that
#     published them to nobody and waits): it was given none of them, so
#     it may lose none of them, and no counter may go below zero (pubd
#     takes what the liar says off direct_delivered);
#  2. beside an honest subscriber, reads a publisher's log of 20000: the
#     publisher must not take longer than a bound measured without the
#     liar, and pubd must take no more lost than it read of the log for
#     the liar (delivered + dropped of its subscription is what was
#     published while it read), and the honest subscriber's count is its
#     own.
# Fails (2, checked by breaking it) if take_lost is not bounded (direct.c:
# the clamp to d->read_msgs removed, sub_overflow and direct_lost take
# what the liar says: 10^15 and more); fails (1) while that bound is what
# pubd read of the whole log, not what it counted delivered to that
# reader (the liar's sub_overflow 2000 of nothing, direct_delivered
# 2^64 - 2000).
case_c_direct_wake_lies() {
	hd_tool
	h_pubd d < <(h_groups)
	local n=20000 n1=2000 sub oid t0 t1 base with bound liar hid hdel hdrop hov sdel sdrop sov sdd lost ddel odel odrop pid2 hold fig1
	# 1. A publisher's log of n1 messages nobody read, then a liar joins it.
	mkfifo "$IT_WORK/hold"
	it_bg pub2 - bash -c "exec \"\$0\" \"\$@\" <\"$IT_WORK/hold\"" "$ITEST_CLIENT" pub -s "$(it_sock d)" -g h \
		--count $n1 --size 64 --start 1000000 --hold
	pid2=$IT_BG_PID
	exec {hold}>"$IT_WORK/hold"
	it_wait "the idle publisher connected" 20 grep -q '^connected' "$IT_WORK/pub2.out" || return
	echo go >&"$hold"
	it_wait "it published $n1 and waits" 20 grep -q "^published $n1" "$IT_WORK/pub2.out" || return
	it_wait "pubd read them" 20 it_holds '[ "$(it_group_val d h published)" = '$n1' ]'
	it_bg lies1 - "$HDIRECT" wakelies -s "$(it_sock d)" -g h --ready "$IT_WORK/lies1.ready" --stop "$IT_WORK/lies1.stop"
	liar=$IT_BG_PID
	it_wait "the first liar" 20 h_ready lies1 || return
	it_check "it was given the log (before its SUBSCRIBE's OK)" grep -q "given 1 direct logs" "$IT_WORK/lies1.out"
	hid=$(hd_client_of d h "$liar")
	# Taken at this query: what it says it lost of a log it read nothing of.
	sdel=$(hd_sub_val d h "$hid" delivered)
	sdrop=$(hd_sub_val d h "$hid" dropped)
	sov=$(hd_sub_drops d "$hid" h sub_overflow)
	sdd=$(hd_counter_or_0 d direct_delivered)
	fig1="a liar joined a log of $n1 messages, given none of them: delivered $sdel + dropped $sdrop (sub_overflow $sov), direct_delivered then $sdd, direct_lost $(hd_counter_or_0 d direct_lost)"
	# One more message, which it is given (PUB_SYNC: pubd took it).
	echo go >&"$hold"
	it_wait "the idle publisher's last message" 20 grep -q '^after 0' "$IT_WORK/pub2.out"
	hdel=$(hd_sub_val d h "$hid" delivered)
	hdrop=$(hd_sub_val d h "$hid" dropped)
	touch "$IT_WORK/lies1.stop"
	it_reap "$liar" 20
	exec {hold}>&-
	it_reap "$pid2" 20
	h_fig "$fig1; after one more message: delivered $hdel + dropped $hdrop"
	it_eq "a liar given none of a log's messages lost none of them" "${sdrop:-x}" 0
	it_check "direct_delivered did not go below zero ($sdd)" test "${#sdd}" -lt 16
	it_eq "nor more than the one it was given after" $((${hdel:-0} + ${hdrop:-0})) 1

	# 2. A liar beside an honest subscriber, a publisher of n timed.
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --timeout-ms 100000 --log "$IT_WORK/sub.log"
	sub=$IT_BG_PID
	it_wait "the honest subscriber" 20 it_subscribers_at_least d h 1 || return
	oid=$(hd_client_of d h "$sub")
	# The bound: the same publisher beside the honest subscriber alone.
	t0=$(date +%s%N)
	timeout 60 "$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count $n --size 64 --start 0 || it_fail "the baseline publisher"
	t1=$(date +%s%N)
	base=$(((t1 - t0) / 1000000))
	it_bg lies - "$HDIRECT" wakelies -s "$(it_sock d)" -g h --ready "$IT_WORK/lies.ready" --stop "$IT_WORK/lies.stop"
	liar=$IT_BG_PID
	it_wait "the second liar" 20 h_ready lies || return
	hid=$(hd_client_of d h "$liar")
	lost=$(hd_counter_or_0 d direct_lost)
	t0=$(date +%s%N)
	timeout 60 "$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count $n --size 64 --start $n || it_fail "the publisher beside the liar"
	t1=$(date +%s%N)
	with=$(((t1 - t0) / 1000000))
	bound=$((3 * base + 2000))
	# pubd takes the lies at each query, and once a second: until all it
	# read for the liar is taken (whatever the liar says, no more).
	it_wait "the liar's lies taken" 10 it_holds '[ "$(hd_sub_val d h "$hid" delivered)" = 0 ]'
	hdel=$(hd_sub_val d h "$hid" delivered)
	hdrop=$(hd_sub_val d h "$hid" dropped)
	hov=$(hd_sub_drops d "$hid" h sub_overflow)
	odel=$(hd_sub_val d h "$oid" delivered)
	odrop=$(hd_sub_val d h "$oid" dropped)
	lost=$(($(hd_counter_or_0 d direct_lost) - lost))
	ddel=$(hd_counter_or_0 d direct_delivered)
	touch "$IT_WORK/lies.stop"
	it_reap "$liar" 20
	h_fig "$(tail -n 1 "$IT_WORK/lies.out"); the publisher of $n took $with ms beside it, $base ms without (bound $bound ms); the liar's subscription: delivered $hdel + dropped $hdrop (sub_overflow $hov) of the $n published while it read; the honest one's: delivered $odel + dropped $odrop of $((2 * n)), $(hd_honest "$IT_WORK/sub.log" 0 $((2 * n))) received; direct_lost +$lost, direct_delivered $ddel, delivered $(it_counter d delivered), dropped $(it_counter d dropped)"
	it_check "the publisher beside the liar finished within the bound ($with ms <= $bound ms)" test "$with" -le "$bound"
	it_check "the liar's sub_overflow ($hov) within what pubd read for it ($n)" test "${hov:-0}" -le $n
	it_eq "its delivered + dropped is what was published while it read" $((${hdel:-0} + ${hdrop:-0})) $n
	it_eq "the honest subscriber's delivered + dropped is what was published" $((${odel:-0} + ${odrop:-0})) $((2 * n))
	it_eq "the honest subscriber's delivered is what it received" "$odel" "$(hd_honest "$IT_WORK/sub.log" 0 $((2 * n)))"
	it_check "direct_lost (+$lost) within the liar's $n and the honest subscriber's drops ($odrop)" \
		test "$lost" -le $((n + ${odrop:-0}))
	it_check "direct_delivered ($ddel) not above what pubd read of the logs for their readers" test "${#ddel}" -lt 16
	it_check "pubd's delivered ($(it_counter d delivered)) at least the honest subscription's ($odel)" \
		test "$(it_counter d delivered)" -ge "${odel:-0}"
	it_check "the honest subscriber is still running" kill -0 "$sub"
	it_check "pubd still answers" "$PUBCTL" -s "$(it_sock d)" pub h "after the lies"
}

# ---- a reader the operator takes off the group keeps its old mapping ----
# A subscriber (uid nobody) allowed by the group's subscribe ACL is a
# reader of an honest publisher's direct log. The operator reloads a
# config whose subscribe ACL no longer names it: pubd ends its
# subscription, and retires the log (anybody it was handed to keeps their
# mapping); the honest libpub publisher moves to a new log, handed only to
# the readers allowed now. The ended subscriber keeps its mapping of the
# old log and reads it on (as libpub would, and by scanning the whole ring
# every 20 ms) until the publisher is done: no message published after
# the reload may appear there. The reload's cut: the first message of the
# new log, as an honest (root) subscriber saw it; in the old log at most
# the one message the writer had begun when the log was retired may come
# after the ended subscriber learnt it is over. Fails if a reload that
# changes a group's ACLs does not retire its direct logs (requests.c:
# srv_direct_retire_group left out of pubd_ipc_acl_changed): the
# publisher goes on in the old log, which the ended subscriber reads.
case_c_direct_revoked() {
	hd_tool
	h_pubd d <<-EOF
		groups:
		  - name: h
		    address: $H_GROUP_ADDR
		    subscribe: ["uid:0", "uid:65534"]
	EOF
	local n=8000 sub pub rev src1 i2 rmax smax after told logs got before
	chmod 0755 "$IT_WORK"
	chmod 0666 "$(it_sock d)"
	mkdir -m 0777 "$IT_WORK/nobody"
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --timeout-ms 100000 --log "$IT_WORK/sub.log"
	sub=$IT_BG_PID
	it_bg rev - setpriv --reuid=65534 --regid=65534 --clear-groups "$HDIRECT" revoked -s "$(it_sock d)" -g h \
		--seconds 60 --ready "$IT_WORK/nobody/rev.ready" --stop "$IT_WORK/rev.stop"
	rev=$IT_BG_PID
	it_wait "both subscribers" 20 it_subscribers_at_least d h 2 || return
	it_wait "the ended-to-be subscriber is reading" 20 test -e "$IT_WORK/nobody/rev.ready" || return
	# The honest publisher, paced over 4 s, its last message PUB_SYNC.
	it_bg pub - "$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count $n --size 64 --start 0 --rate 2000
	pub=$IT_BG_PID
	it_wait "a quarter published" 20 hd_honest_at_least "$IT_WORK/sub.log" 0 $n $((n / 4)) || return
	sed -i 's/subscribe: \["uid:0", "uid:65534"\]/subscribe: ["uid:0"]/' "$(it_conf d)"
	it_ctl d reload || it_fail "the reload"
	before=$(hd_honest "$IT_WORK/sub.log" 0 $n)
	it_wait "nobody's subscription ended by the reload" 10 it_holds '[ "$(it_group_val d h subscribers)" = 1 ]'
	it_reap "$pub" 30
	it_eq "the honest publisher's messages all taken (PUB_SYNC)" "$IT_STATUS" 0
	it_wait "the honest subscriber got all $n" 20 hd_honest_at_least "$IT_WORK/sub.log" 0 $n $n
	touch "$IT_WORK/rev.stop"
	it_reap "$rev" 20
	src1=$(sed -n 's/^revoked: log [0-9]* source \([0-9a-f]*\):.*/\1/p' "$IT_WORK/rev.out" | head -n 1)
	# The first message of a log other than the one nobody was given.
	i2=$(awk -v s="${src1:-none}" '$1 == "msg" && $7 == "OK" && $3 != s && $6 < 8000 { if (m == "" || $6 < m) m = $6 }
		END { print m }' "$IT_WORK/sub.log")
	rmax=$(sed -n 's/^revoked: log .*, the last index \([0-9]*\), .*/\1/p' "$IT_WORK/rev.out" | head -n 1)
	smax=$(sed -n "s/^revoked: log .*, the ring's largest \(-\?[0-9]*\);.*/\1/p" "$IT_WORK/rev.out" | head -n 1)
	after=$(sed -n 's/^revoked: log .*; after it \([0-9]*\) messages.*/\1/p' "$IT_WORK/rev.out" | head -n 1)
	told=$(grep -c 'told it is over' "$IT_WORK/rev.out")
	logs=$(sed -n 's/^revoked: given \([0-9]*\) direct logs.*/\1/p' "$IT_WORK/rev.out")
	got=$(hd_honest "$IT_WORK/sub.log" 0 $n)
	h_fig "$(tr '\n' ' ' <<<"$(cat "$IT_WORK/rev.out")")| the reload came after $before of $n; the publisher's first message in a new log: ${i2:-NONE}; the honest subscriber got $got of $n; direct_logs_retired $(hd_counter_or_0 d direct_logs_retired), opened $(hd_counter_or_0 d direct_logs_opened)"
	it_eq "nobody was given one direct log only" "${logs:-?}" 1
	it_check "it read the log before the reload (up to index ${rmax:-none})" \
		grep -Eq '^revoked: log .*: read [1-9][0-9]* messages' "$IT_WORK/rev.out"
	it_eq "it was told the log is over" "$told" 1
	it_check "the publisher moved to a new log at the reload (its first: ${i2:-none})" test -n "$i2"
	it_check "nothing published after the reload reached nobody (it read up to ${rmax:-?} < ${i2:-?})" \
		test "${rmax:-0}" -lt "${i2:-0}"
	it_check "nor lies anywhere in its old log's ring (the largest ${smax:-?} < ${i2:-?})" test "${smax:-0}" -lt "${i2:-0}"
	it_check "at most the message begun at the reload came after it was told ($after)" test "${after:-9}" -le 1
	it_eq "the honest subscriber got every message" "$got" $n
	it_check "pubd still answers" "$PUBCTL" -s "$(it_sock d)" pub h "after the reload"
}

# ---- a writer the operator takes off the group writes on ----
# A publisher (uid nobody, the hostile tool) writes into its direct log of
# h, a few messages a millisecond rung to its readers, and an honest (root)
# subscriber reads them. The operator reloads a config whose publish ACL no
# longer names nobody: pubd retires the log, having read it up to where the
# writer was (what came before the reload under the old ACL), and says in
# each reader's deliver log where it ends. The writer heeds nothing: told
# the log is gone, it writes 20000 more as fast as the ring takes them,
# rung. The subscriber must read none of them: of that source, no message
# whose seq pubd did not count published, and what it read is what pubd
# counts delivered. Fails without the end (common/directlog.c: at_end
# returning false): the subscriber read the writer's messages on, 21036 of
# them, none counted published. Failed too, 2 runs in 4, while pubd's
# catch-up at the reload and the retire heeded the writer's pause
# (srv_publog_read_one for srv_publog_read_all): pubd, paused behind the
# fabric, stood 2000 records behind the writer, and the subscriber had read
# up to 928 of them, which pubd then never counted published. And, in the
# ASan build, while the retire read the log again under the new ACL
# (RETIRE_READ for RETIRE_AS_READ): the 40 records the writer committed
# between the reload's catch-up and the retire were refused, and the
# subscriber had read them.
case_c_direct_unheeding() {
	hd_unheeding paced
}

# The same with a writer that floods its log from the start: pubd, reading
# it to the fabric, stands behind it at the reload, and its catch-up then
# reads behind a writer that outruns it. Failed while pubd gave the writer
# room back as it read (so the catch-up stopped after a lap, with the
# writer further on) and stored the end after it (so the subscriber had
# read on meanwhile): 5,439 and 5,590 messages read past what pubd counted
# published, in 2 of 14 runs of the paced writer in the ASan build (and
# all of the flooding one's). Now pubd freezes the readers' words and holds
# the writer while it reads (daemon/server/direct_end.c).
case_c_direct_unheeding_flood() {
	hd_unheeding flood
}

# The paced writer with, among its messages, one of a MiB in pieces that
# pubd cannot take: the client buffer budget, reloaded down to what pubd
# holds already, has no room for it, so pubd waits there (the client
# paused), and the subscriber, having passed over its pieces and waited
# its 2 s for pubd's delivery, reads on past it. Then the reload that
# retires the log: its catch-up must read past that message too (over the
# budget by it), or the subscriber took what pubd never read. Failed while
# a forced read stopped for the budget (publog.c first_piece): 28,085 and
# 28,086 messages read past the end, in 2 of 2 runs. (A subscriber lapped
# past that message, in the ASan build, counts it lost by the writer's seq
# and takes pubd's delivery of it too: pubd's delivered may be one short of
# what it read, 3 runs in 6. Left as it is: libpub's seq gaps also cover
# messages pubd delivers as a reader starts, which are not lost.)
case_c_direct_unheeding_pieces() {
	hd_unheeding pieces
}

# hd_read_past LOG SEQ N: the subscriber's LOG has N messages of seq
# above SEQ (for it_wait).
hd_read_past() {
	[ "$(awk -v m="$2" '$1 == "msg" && $4 > m { n++ } END { print n + 0 }' "$1")" -ge "$3" ]
}

# hd_unheeding paced|flood|pieces: the body of the cases above.
hd_unheeding() {
	local kind=$1 mseq
	hd_tool
	h_pubd d <<-EOF
		limits:
		  group_log_drain_ms: 500
		groups:
		  - name: h
		    address: $H_GROUP_ADDR
		    publish: ["uid:0", "uid:65534"]
	EOF
	local sub unh src published beyond got total short
	chmod 0755 "$IT_WORK"
	chmod 0666 "$(it_sock d)"
	mkdir -m 0777 "$IT_WORK/nobody"
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --timeout-ms 100000 --log "$IT_WORK/sub.log"
	sub=$IT_BG_PID
	it_wait "the subscriber" 20 it_subscribers_at_least d h 1 || return
	it_bg unh - setpriv --reuid=65534 --regid=65534 --clear-groups "$HDIRECT" unheeding -s "$(it_sock d)" -g h \
		--seconds 60 --after 20000 --ready "$IT_WORK/nobody/unh.ready" --kind "$kind" --go "$IT_WORK/nobody/go"
	unh=$IT_BG_PID
	it_wait "the writer wrote a thousand" 20 test -e "$IT_WORK/nobody/unh.ready" || return
	it_wait "the subscriber read a thousand of them" 20 it_lines_at_least "$IT_WORK/sub.log" '^msg h ' 1000 || return
	if [ "$kind" = pieces ]; then
		sed -i "s/^  group_log_drain_ms: 500\$/&\n  client_buffer_budget: $(($(it_q d status '.status[0].client_buffered') + 65536))/" \
			"$(it_conf d)"
		it_ctl d reload >/dev/null || it_fail "the budget's reload"
		touch "$IT_WORK/nobody/go"
		it_wait "the message in pieces" 20 grep -q '^unheeding: a message of' "$IT_WORK/unh.out" || return
		mseq=$(sed -n 's/^unheeding: a message of [0-9]* bytes in pieces, seq \([0-9]*\)$/\1/p' "$IT_WORK/unh.out")
		it_wait "the subscriber read 500 past it" 20 hd_read_past "$IT_WORK/sub.log" "${mseq:-0}" 500 || return
		it_check "pubd waits for the budget" test "$(it_group_val d h published)" -le "$mseq"
	fi
	sed -i 's/publish: \["uid:0", "uid:65534"\]/publish: ["uid:0"]/' "$(it_conf d)"
	it_ctl d reload >/dev/null || it_fail "the reload"
	published=$(it_group_val d h published)
	it_reap "$unh" 60
	# A marker from an honest publisher: once the subscriber has it, it has
	# read what it was going to of the retired log.
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 1 --size 100 --start 777777 || it_fail "the marker"
	it_wait "the subscriber has the marker" 20 it_lines_at_least "$IT_WORK/sub.log" '^msg h .* 777777 OK' 1 || return
	src=$(sed -n 's/^unheeding: log [0-9]* source \([0-9a-f]*\) .*/\1/p' "$IT_WORK/unh.out")
	total=$(sed -n 's/^unheeding: wrote \([0-9]*\) messages, .*/\1/p' "$IT_WORK/unh.out")
	got=$(awk -v s="${src:-none}" '$1 == "msg" && $3 == s { n++ } END { print n + 0 }' "$IT_WORK/sub.log")
	# A subscriber the writer's burst lapped (a slow build) had not read all
	# pubd counted delivered to it: once the retired log goes
	# (group_log_drain_ms), what it had not read is counted lost, exactly.
	# (The message in pieces, when the subscriber was lapped past it: its
	# reader counts it lost by the writer's seq, and pubd delivers it too,
	# so delivered may be one short. Left: see the note of stop 47.)
	short=0
	[ "$kind" = pieces ] && short=1
	it_wait "pubd counts delivered what the subscriber read (and the marker), once the retired log went" 20 \
		it_holds "[ \"\$(it_group_val d h delivered)\" -le $((got + 1)) ] && [ \"\$(it_group_val d h delivered)\" -ge $((got + 1 - short)) ]"
	kill -TERM "$sub"
	it_reap "$sub" 10
	beyond=$(awk -v s="${src:-none}" -v p="${published:-0}" '$1 == "msg" && $3 == s && $4 >= p { n++ } END { print n + 0 }' \
		"$IT_WORK/sub.log")
	h_fig "$(tr '\n' ' ' <<<"$(cat "$IT_WORK/unh.out")")| pubd counted $published published before the log ended; the subscriber read $got of that source, $beyond of them past it; $(it_group_val d h dropped) dropped in h"
	# (A flood may have filled the lap past the end before it heard.)
	it_check "the writer wrote on past the end (${total:-?} written, the end after $published)" \
		test "${total:-0}" -ge $((${published:-0} + 10000))
	it_check "the subscriber read the log before the reload ($got)" test "$got" -ge 1000
	it_eq "the subscriber read nothing pubd had not counted published" "$beyond" 0
	it_eq "h: published = delivered + dropped" "$(it_group_val d h published)" \
		$(($(it_group_val d h delivered) + $(it_group_val d h sub_dropped)))
}

# ---- a record only the readers are rung for ----
# A publisher commits one message (pubd and its reader take it), then right
# after it a record with a bad lap, sets the claim a lap and 16 bytes past
# the message its reader took (so not past where the reader stands), and
# rings only the reader; then it stays connected and quiet (pubd, not
# rung, has not read the record yet). The reader must drop that log at
# once and go on: an honest publisher's messages reach it within a bound,
# and it does not spin. Then the writer rings pubd: pubd ends it. Fails while
# pub_direct_next, when pub_shmlog_next refuses the record (r < 0, v not
# filled), asks lapped() about v.pos, left from the message it read
# before: lapped there, not at its position, so no resync bounds it, and
# it loops on the record for as long as the writer keeps it (pub_recv
# never returns; the CPU spent). Seen in Debug, RelWithDebInfo and
# ASan builds; being a read of an uninitialised variable, whether it loops
# depends on what that stack slot holds.
case_c_direct_stall() {
	hd_tool
	h_pubd d < <(h_groups)
	local n=100 start=3000000 sub stall ino c0 c1 t0 ms got
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --timeout-ms 60000 --log "$IT_WORK/sub.log"
	sub=$IT_BG_PID
	it_wait "the honest subscriber" 20 it_subscribers_at_least d h 1 || return
	it_bg stall - "$HDIRECT" stall -s "$(it_sock d)" -g h --seconds 30 --ready "$IT_WORK/stall.ready" \
		--go "$IT_WORK/stall.go" --stop "$IT_WORK/stall.stop"
	stall=$IT_BG_PID
	it_wait "the hostile publisher's message" 20 h_ready stall || return
	ino=$(sed -n 's/.*direct log inode \([0-9]*\) of.*/\1/p' "$IT_WORK/stall.out")
	it_wait "the honest subscriber took it" 10 it_lines_at_least "$IT_WORK/sub.log" '^msg h ' 1 || return
	it_check "from the hostile log it maps" hd_maps "$sub" "${ino:-0}"
	touch "$IT_WORK/stall.go"
	c0=$(h_cpu "$sub")
	t0=$(date +%s%N)
	timeout 20 "$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count $n --size 100 --start $start ||
		it_fail "the honest publisher"
	it_wait "the honest subscriber got the honest publisher's $n" 4 hd_honest_at_least "$IT_WORK/sub.log" $start $n $n
	ms=$((($(date +%s%N) - t0) / 1000000))
	c1=$(h_cpu "$sub")
	got=$(hd_honest "$IT_WORK/sub.log" $start $n)
	h_fig "$(head -n 1 "$IT_WORK/stall.out"); the honest subscriber then got $got of an honest publisher's $n in $ms ms, using $((c1 - c0)) CPU ticks meanwhile; the hostile log $(hd_maps "$sub" "${ino:-0}" && echo STILL MAPPED || echo let go)"
	it_eq "the honest publisher's messages reached the honest subscriber" "$got" $n
	it_check "which does not spin on the hostile record ($((c1 - c0)) ticks in $ms ms)" \
		test $(((c1 - c0) * 10)) -lt $((ms / 4 + 50))
	it_check "and let go of the hostile log" hd_unmapped "$sub" "${ino:-0}"
	touch "$IT_WORK/stall.stop" # the writer rings pubd now
	it_reap "$stall" 20
	it_check "pubd, rung, ends the writer" grep -q "it answered error 1 (proto), connection closed" "$IT_WORK/stall.out"
	it_check "pubd still answers" "$PUBCTL" -s "$(it_sock d)" pub h "after the stall"
}

# ---- writers gone mid-message ----
# Ten publishers, one after the other, each commit the first piece of a
# message in pieces to their direct log, ring its reader and are gone (as
# a process that crashes mid-message). pubd retires each log; the honest
# subscriber reading them must let go of each within the drain time
# (limits.group_log_drain_ms, 200 ms here), as of any retired log, and
# keep an honest publisher's messages. Fails while a reader that waits for
# pubd's delivery of a message in pieces (the detour) waits for a message
# that never comes, and keeps the log for as long as its connection lasts:
# dr_next lets go of a retired log only off the detour, and
# pub_direct_skip_pieces finds the rest of the message "still being
# written" for ever (every hostile connection costs every reader a
# mapping of a whole log, until its VMAs run out).
case_c_direct_halfmessage() {
	hd_tool
	h_pubd d <<-EOF
		limits:
		  group_log_drain_ms: 200
		$(h_groups)
	EOF
	local i ino inos=() sub kept n=100 start=4000000 vm0 vm1
	it_bg sub - "$ITEST_CLIENT" sub -s "$(it_sock d)" -g h --timeout-ms 60000 --log "$IT_WORK/sub.log"
	sub=$IT_BG_PID
	it_wait "the honest subscriber" 20 it_subscribers_at_least d h 1 || return
	vm0=$(awk '/^VmSize:/ { print $2 }' "/proc/$sub/status")
	for i in 1 2 3 4 5 6 7 8 9 10; do
		it_bg "half$i" - "$HDIRECT" garbage -s "$(it_sock d)" -g h --kind firstpiece \
			--ready "$IT_WORK/half$i.ready" --go "$IT_WORK/half$i.go"
		it_wait "writer $i has its log" 20 h_ready "half$i" || return
		ino=$(sed -n 's/.*direct log inode \([0-9]*\)$/\1/p' "$IT_WORK/half$i.out")
		it_wait "the honest subscriber maps log $i" 10 hd_maps "$sub" "${ino:-0}" || return
		touch "$IT_WORK/half$i.go"
		it_reap "$IT_BG_PID" 20
		inos+=("${ino:-0}")
	done
	"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count $n --size 100 --start $start || it_fail "the honest publisher"
	it_wait "the honest subscriber got the honest publisher's $n" 10 hd_honest_at_least "$IT_WORK/sub.log" $start $n $n
	it_wait "the honest subscriber let go of the retired logs" 5 hd_none_mapped "$sub" "${inos[@]}"
	kept=0
	for ino in "${inos[@]}"; do hd_maps "$sub" "$ino" && kept=$((kept + 1)); done
	vm1=$(awk '/^VmSize:/ { print $2 }' "/proc/$sub/status")
	h_fig "10 writers gone mid-message: the honest subscriber still maps $kept of their logs (VmSize ${vm0} -> ${vm1} KiB), got $(hd_honest "$IT_WORK/sub.log" $start $n) of an honest publisher's $n; direct_logs_retired $(hd_counter_or_0 d direct_logs_retired)"
	it_eq "the honest subscriber keeps none of the retired logs" "$kept" 0
	it_eq "and got every honest message" "$(hd_honest "$IT_WORK/sub.log" $start $n)" $n
	it_check "pubd still answers" "$PUBCTL" -s "$(it_sock d)" pub h "after the half messages"
}

# ---- a reader's slot, given to another log before the reader let go ----
# A direct log's end, once retired, is said in its reader's slot word, with
# 3 bits of the log's id. A reader behind on a retired log whose slot went
# on to later logs (its log freed after group_log_drain_ms) could take a
# later log's end word (same 3 bits) for its own and read on past its end:
# what a publisher a reload shut out wrote there. pubd must not give a
# direct log's slot to another log until its reader let go of it.
# A subscriber that never reads (the hostile tool) is handed the logs of
# four publishers, one after the other, each log freed before the next
# comes: it must be handed them in four slots. Then, as an honest reader
# does once told a log is gone, it lets each go, and four more publishers'
# logs must take a slot it let go (the slots are not lost). Fails without
# srv_slot_hold (direct.c's reader_remove giving the slot back at once):
# the four came in one slot.
hd_slots_case() { # KIND: keep or release
	local kind=$1 base slots i
	it_bg "slots_$kind" - "$HDIRECT" slots -s "$(it_sock d)" -g h --kind "$kind" --seconds 60 \
		--ready "$IT_WORK/slots_$kind.ready" --stop "$IT_WORK/slots_$kind.stop"
	slots=$IT_BG_PID
	it_wait "the slot reader subscribed" 20 test -e "$IT_WORK/slots_$kind.ready" || return
	base=$(it_q d status '.status[0].client_buffered')
	for i in 1 2 3 4; do
		"$ITEST_CLIENT" pub -s "$(it_sock d)" -g h --count 1 --size 100 --start "$i" ||
			it_fail "publisher $i of h"
		# Its log retired when it left, and freed group_log_drain_ms later.
		it_wait "publisher $i's log freed" 20 \
			it_holds '[ "$(it_q d status ".status[0].client_buffered")" = "$base" ]' || return
	done
	touch "$IT_WORK/slots_$kind.stop"
	it_reap "$slots" 20
	h_fig "$kind: $(tr '\n' ' ' <"$IT_WORK/slots_$kind.out")"
}
case_c_direct_slot_held() {
	hd_tool
	h_pubd d <<-EOF
		limits:
		  group_log_drain_ms: 100
		groups:
		  - name: h
		    scope: host
	EOF
	hd_slots_case keep
	it_check "a reader that never lets go: four logs in four slots ($(tail -1 "$IT_WORK/slots_keep.out"))" \
		grep -qx "slots: 4 logs in 4 slots" "$IT_WORK/slots_keep.out"
	hd_slots_case release
	it_check "a reader that lets each go: its slots are given again ($(tail -1 "$IT_WORK/slots_release.out"))" \
		grep -q "^slots: 4 logs in [12] slots$" "$IT_WORK/slots_release.out"
}

# hd_deaf DEAF_MODE WHO CHURN_MODE WHAT: a client of hostile_direct's
# DEAF_MODE that reads nothing beside 200 rounds of its CHURN_MODE; the fds
# pubd sent it meanwhile are at most SRV_FDS_UNREAD_MAX (32).
hd_deaf() {
	local deaf=$1 who=$2 churn=$3 what=$4 n=200 pid fds
	hd_tool
	h_pubd d < <(h_groups)
	it_bg "$deaf" - "$HDIRECT" "$deaf" -s "$(it_sock d)" -g h --ready "$IT_WORK/$deaf.ready" --go "$IT_WORK/$deaf.go"
	pid=$IT_BG_PID
	it_wait "the deaf $who" 20 h_ready "$deaf" || return
	timeout 120 "$HDIRECT" "$churn" -s "$(it_sock d)" -g h --after $n >"$IT_WORK/$churn.out" 2>&1
	it_check "$n rounds of $what" grep -q "^$churn: $n rounds" "$IT_WORK/$churn.out"
	h_fig "$(cat "$IT_WORK/$churn.out")"
	touch "$IT_WORK/$deaf.go"
	it_reap "$pid" 20
	fds=$(sed -n "s/^$deaf: \([0-9]*\) fds came.*/\1/p" "$IT_WORK/$deaf.out")
	h_fig "a $who that did not read its socket while $what $n times was sent ${fds:-?} fds meanwhile"
	it_check "pubd had at most 32 fds in flight to it (${fds:-none})" test "${fds:-999}" -le 32
	it_check "pubd is up" hd_counter_or_0 d clients_accepted
}

# ---- a writer that never reads its socket while a reader comes and goes ----
# pubd tells a direct log's writer of each reader that joins in a WAKER
# frame with two fds, and fds sent on a socket count against pubd's
# RLIMIT_NOFILE until they are read. A writer that never reads its socket,
# and says in its log's control page that it took in every WAKER, beside a
# reader that subscribes and unsubscribes 200 times: pubd may have at most
# SRV_FDS_UNREAD_MAX (32) fds in flight to it (srv_send_fds), and rings
# that reader itself meanwhile. Fails (278 fds, checked by breaking it)
# without that bound; with 5 such writers and pubd's limit at 1024, every
# new client's logs were refused (ETOOMANYREFS) and it was disconnected.
case_c_direct_deaf_writer() {
	hd_deaf deaf writer churn "a reader came and went"
}

# ---- a subscriber that never reads its socket while writers come and go ----
# Each writer that opens a direct log hands every subscriber on shared
# memory a DIRECT_READ frame with its fd. A subscriber that never reads its
# socket beside 200 writers, one after the other: pubd may have at most
# SRV_FDS_UNREAD_MAX (32) fds in flight to it (srv_send_fds), past which it
# delivers the writers' messages by copy, as to a socket subscriber. Fails
# (62 fds, one for each direct log pubd opened before it refused more,
# checked by breaking it) without that bound.
case_c_direct_deaf_reader() {
	hd_deaf deafsub subscriber writers "writers came and went"
}
