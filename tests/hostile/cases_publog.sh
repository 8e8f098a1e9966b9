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
