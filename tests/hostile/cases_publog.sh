# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Hostile cases against the publish log's reading at a client's end and
# the replies its records cause: one function case_NAME each, run like
# those of cases.sh (case.sh sources this file; run.sh lists its cases).

# A client that hangs up and goes on committing records half a lap ahead of
# pubd (another thread, or a process sharing the mapping; it learns pubd's
# progress from a second connection subscribed to the group). pubd reads
# what it left a batch a turn, no further than a lap and for no longer than
# CLOSE_GRACE_NS, and counts the rest client_gone. Before, pubd read "to the
# end" in one loop: nobody else was served while the writer went on (pubctl
# status timed out; in the audit SIGTERM took 27 s).
case_c_publog_close_stall() {
	# A host group: its messages are delivered at once, no transmit
	# queue pauses the writer, so pubd sees the hang-up at once too.
	h_pubd d <<-EOF
		groups:
		  - name: h
		    scope: host
	EOF
	local t0 t1 ms worst=0 asked=0 answered=0 committed pub gone
	it_bg hangon - "$HSHM" hangon -s "$(it_sock d)" -g h -n 20 --seconds 8 --ready "$IT_WORK/hangon.ready"
	it_wait "the writer hung up and goes on" 20 h_ready hangon || return
	# pubctl status, one after the other, for as long as the writer goes on.
	while kill -0 "$IT_BG_PID" 2>/dev/null && [ $asked -lt 200 ]; do
		t0=$(date +%s%N)
		timeout 3 "$PUBCTL" -s "$(it_sock d)" status >/dev/null 2>&1 && answered=$((answered + 1))
		t1=$(date +%s%N)
		asked=$((asked + 1))
		ms=$(((t1 - t0) / 1000000))
		[ $ms -gt $worst ] && worst=$ms
	done
	it_reap "$IT_BG_PID" 20
	committed=$(sed -n 's/.* \([0-9]*\) records committed.*/\1/p' "$IT_WORK/hangon.out")
	pub=$(h_settled d published)
	gone=$(it_q d drops '[.drops[] | select(.reason == "client_gone") | .count] | add // 0')
	h_fig "$(cat "$IT_WORK/hangon.out"); pubctl status meanwhile: $answered of $asked answered, the slowest in $worst ms; published $pub + client_gone $gone of ${committed:-?} committed"
	it_eq "every pubctl status answered while the writer goes on" "$answered" "$asked"
	it_check "each within 1 s (the slowest: $worst ms)" test "$worst" -lt 1000
	it_check "pubd read no more than a lap past the hang-up (published $pub)" test "$pub" -lt 100000
	it_check "published + client_gone ($((pub + gone))) within what was committed (${committed:-?})" \
		test $((pub + gone)) -le "${committed:-0}"
	it_check "pubd still answers" "$PUBCTL" -s "$(it_sock d)" pub h "after the writer"
}

# A client that commits records pubd answers with an ERROR (a req_id and a
# group that does not exist), as fast as its log takes them, and never
# reads its socket. Its unread replies stop pubd reading its log, as they
# stop pubd reading its socket (CTRL_BYTES_HIGH), within the client budget.
# Before, its replies queued without bound: in the audit pubd grew from
# 6.7 MB to 974 MB in 10 s, client_buffered 183 MB against a 64 MiB budget,
# and new clients got no shared-memory logs.
case_c_publog_reply_flood() {
	h_pubd d <<-EOF
		limits:
		  client_buffer_budget: 64MiB
		$(h_groups)
	EOF
	local r0 r1 buffered t0 t1 answered=no hold shm pid
	r0=$(h_rss "$H_PID")
	mkfifo "$IT_WORK/hold"
	it_bg flood - bash -c "exec \"\$0\" \"\$@\" <\"$IT_WORK/hold\"" "$HSHM" replies -s "$(it_sock d)" --seconds 4 \
		--ready "$IT_WORK/flood.ready" --hold yes
	pid=$IT_BG_PID
	exec {hold}>"$IT_WORK/hold"
	it_wait "the flood began" 20 h_ready flood || return
	t0=$(date +%s%N)
	timeout 5 "$PUBCTL" -s "$(it_sock d)" pub h "during the flood" && answered=yes
	t1=$(date +%s%N)
	it_wait "the flood's writer is done (it stays, unread)" 20 grep -q "^replies:" "$IT_WORK/flood.out"
	r1=$(h_rss "$H_PID")
	buffered=$(timeout 5 "$PUBCTL" -s "$(it_sock d)" --json status | jq -r '.status[0].client_buffered')
	shm=$(timeout 10 "$HSHM" truncate -s "$(it_sock d)" 2>&1)
	exec {hold}>&-
	it_reap "$pid" 20
	h_fig "$(cat "$IT_WORK/flood.out"); pubd RSS ${r0} -> ${r1} KiB (+$((r1 - r0)) KiB); client_buffered ${buffered:-?} of 64 MiB; another client's publish answered $answered in $(((t1 - t0) / 1000000)) ms; a new client: $shm"
	it_check "pubd's RSS grew by less than 48 MiB ($(((r1 - r0) / 1024)) MiB)" test $((r1 - r0)) -lt $((48 << 10))
	it_check "client_buffered within the 64 MiB budget (${buffered:-?})" test "${buffered:-999999999999}" -le $((64 << 20))
	it_eq "another client's publish answered during the flood" "$answered" yes
	it_check "in under 1 s ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -lt 1000
	it_check "a new client still gets shared-memory logs" grep -q "^truncate:" <<<"$shm"
}
