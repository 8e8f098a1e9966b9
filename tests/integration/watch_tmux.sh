#!/bin/bash
# SPDX-License-Identifier: MIT
#
# pubctl watch on a real terminal: tmux runs it in a detached 80x24 pane
# against a pubd with two groups while one of them carries traffic at a
# known rate. The test reads the screen (tmux capture-pane) until the busy
# group's row shows its rate and the idle one 0, checks the screen fits the
# pane without wrapping, resizes the pane and sees the layout follow, stops
# and restarts pubd under it, quits with q and checks the exit status and
# that the terminal was given back as it was (canonical mode, echo, the
# normal screen). Then the plain frames when stdout is a pipe.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup watch_tmux
command -v tmux >/dev/null || it_die "needs tmux (package tmux)"

TMUX_SOCK=$IT_WORK/tmux.sock
tm() { tmux -S "$TMUX_SOCK" "$@"; }
# The tmux server is ours too: gone with the rest at teardown.
trap 'rc=$?; tm kill-server >/dev/null 2>&1; (exit $rc); it_teardown' EXIT

it_host_lo h1
it_conf_write h1 - <<-EOF
	limits:
	  subscriber_queue: 64
	groups:
	  - name: busy
	    address: 239.81.14.1
	  - name: idle
	    address: 239.81.14.2
EOF
ns=$(it_ns h1)
sock=$(it_sock h1)
it_pubd_start h1 "$ns" || it_die "pubd did not start"

# The pane's shell runs watch, then records its exit status and the
# terminal's settings as watch left them, then waits (cat) so the pane stays.
cat >"$IT_WORK/pane.sh" <<EOF
"$PUBCTL" -s "$sock" watch --interval 0.5 2>>"$IT_WORK/watch_stderr.log"
echo "exit=\$?" >"$IT_WORK/watch.status.tmp"
stty -a >"$IT_WORK/stty.after"
mv "$IT_WORK/watch.status.tmp" "$IT_WORK/watch.status"
exec cat >/dev/null
EOF
stty_before() { tm new-session -d -s probe -x 80 -y 24 "stty -a >'$IT_WORK/stty.before'; exec cat"; }
stty_before || it_die "tmux new-session failed"
it_wait "the terminal's settings recorded" 10 test -s "$IT_WORK/stty.before"
tm new-session -d -s w -x 80 -y 24 "bash '$IT_WORK/pane.sh'" || it_die "tmux new-session failed"
# Only now: the server exits with its last session, and a new-session racing
# that exit fails ("server exited unexpectedly").
tm kill-session -t probe
# A detached session keeps the size it is given (no client to follow).
tm set-option -t w window-size manual >/dev/null 2>&1

screen() { tm capture-pane -p -t w; }
screen_has() { screen | grep -q -- "$1"; }

# A rate as watch prints it (12.5, 950, 1.2k, 3.4M) in units.
to_num() { awk -v v="$1" 'BEGIN { m = 1; if (v ~ /k$/) m = 1e3; if (v ~ /M$/) m = 1e6; if (v ~ /G$/) m = 1e9;
	sub(/[kMG]$/, "", v); if (v !~ /^[0-9.]+$/) exit 1; printf "%.0f\n", v * m }'; }
# row GROUP FIELD: a field of the group's row (1 name, 2 SUBS, 3 PUB/s, 4 PUB B/s, 5 DLV/s, 6 DLV B/s ...)
row() { screen | awk -v g="$1" -v f="$2" '$1 == g { print $f; exit }'; }
between() { # GROUP FIELD LOW HIGH
	local v
	v=$(to_num "$(row "$1" "$2")") || return 1
	[ "$v" -ge "$3" ] && [ "$v" -le "$4" ]
}

it_wait "watch shows pubd" 20 screen_has "GROUP" || { screen >&2; it_die "no watch screen"; }

# Traffic on busy only: 200 messages/s of 1000 bytes, one subscriber.
rate=200 size=1000
it_bg sub - "$PUBCTL" -s "$sock" sub busy --count 100000 --timeout 120
it_wait "the subscriber is in" 20 it_subscribers_at_least h1 busy 1 || it_die "no subscriber"
it_bg pub - "$PUBCTL" -s "$sock" pub busy --count 100000 --size $size --rate $rate
pub_pid=$IT_BG_PID
busy_at_rate() { # SUBSCRIBERS
	between busy 3 $((rate * 7 / 10)) $((rate * 13 / 10)) &&
		between busy 4 $((rate * size * 7 / 10)) $((rate * size * 13 / 10)) &&
		between busy 5 $((rate * 7 / 10)) $((rate * 13 / 10)) &&
		between busy 6 $((rate * size * 7 / 10)) $((rate * size * 13 / 10)) &&
		[ "$(row busy 2)" = "$1" ]
}
if it_wait "busy shows ~$rate msg/s and ~$((rate * size / 1000))k B/s published and delivered" 30 busy_at_rate 1; then
	it_pass "busy row: $(screen | grep '^busy')"
else
	screen >&2
fi
idle_zero() { [ "$(row idle 3)" = 0 ] && [ "$(row idle 4)" = 0 ] && [ "$(row idle 5)" = 0 ] && [ "$(row idle 7)" = 0 ]; }
it_check "idle shows 0 messages, bytes and drops per second" idle_zero
screen >"$IT_WORK/frame-80x24.txt"
tm capture-pane -e -p -t w >"$IT_WORK/frame-80x24.ansi"

# The screen fits: the header on the first line, the footer on the last, no
# line longer than the pane and none wrapped (tmux joins wrapped lines with -J).
fits() { # WIDTH HEIGHT
	local s lines joined
	s=$(screen)
	lines=$(printf '%s\n' "$s" | wc -l)
	joined=$(tm capture-pane -p -J -t w | wc -l)
	[ "$lines" -le "$2" ] && [ "$joined" = "$lines" ] &&
		[ "$(printf '%s\n' "$s" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')" -le "$1" ] &&
		printf '%s\n' "$s" | head -n1 | grep -q '^pubd ' &&
		printf '%s\n' "$s" | sed -n "${2}p" | grep -q '^every '
}
it_check "the screen fits 80x24: header first, footer last, no wrapped line" fits 80 24
it_check "changed values are highlighted (reverse video)" grep -q $'\033\\[7m' "$IT_WORK/frame-80x24.ansi"
no_rcv() { ! grep -q 'RCV/s' "$IT_WORK/frame-80x24.txt"; }
it_check "no received-rate columns at 80 columns" no_rcv

# A subscriber that does not read: its queue (64) overflows, and busy's row
# shows drops per second with their reason, as does the drops line. Off the
# direct path (PUBD_DIRECT=off): there it would lose nothing until the
# publisher lapped its direct log (4 MiB, not 64 messages).
mkfifo "$IT_WORK/hold.fifo"
PUBD_DIRECT=off it_bg held - bash -c "exec \"\$0\" \"\$@\" <\"$IT_WORK/hold.fifo\"" "$ITEST_CLIENT" sub -s "$sock" -g busy --hold \
	--ready "$IT_WORK/held.ready" --timeout-ms 120000
exec {hold}>"$IT_WORK/hold.fifo"
it_wait "the held subscriber is in" 20 test -e "$IT_WORK/held.ready" || it_die "no held subscriber"
drops_shown() {
	local v
	v=$(to_num "$(row busy 7)") && [ "$v" -gt 0 ] && [ "$(row busy 8)" = sub_overflow ] &&
		[ "$(row busy 2)" = 2 ] && screen | grep -Eq '^drops/s +[0-9.]+[kM]? +sub_overflow [0-9.]'
}
it_wait "busy shows drops per second and their reason (sub_overflow)" 30 drops_shown &&
	it_pass "drops: $(screen | grep -E '^(busy|drops/s)' | tr -s ' ' | paste -sd'|')"
it_check "idle still shows 0 drops per second" idle_zero
screen >"$IT_WORK/frame-drops.txt"

# Resize: the layout follows (SIGWINCH), with the columns a wider screen has room for.
tm resize-window -t w -x 100 -y 30 || it_fail "tmux resize-window"
wide() { screen_has "RCV/s" && fits 100 30; }
it_wait "the screen follows a resize to 100x30" 20 wide && it_pass "100x30: $(screen | grep '^GROUP')"
it_wait "busy still at rate after the resize" 20 busy_at_rate 2 || screen >&2
screen >"$IT_WORK/frame-100x30.txt"
# Frames worth a look after the run (README shows one).
[ -n "$IT_ARTIFACTS" ] && cp "$IT_WORK"/frame-*.txt "$IT_ARTIFACTS/" 2>/dev/null

# pubd goes away: the screen says so and watch keeps trying; pubd back: rates again.
kill "$pub_pid" 2>/dev/null
exec {hold}>&-
it_pubd_stop h1
it_wait "watch says pubd is unreachable" 20 screen_has "unreachable at $sock" || screen >&2
still_running() { ! test -e "$IT_WORK/watch.status"; }
it_check "watch is still running" still_running
it_pubd_start h1 "$ns" || it_die "pubd did not start again"
it_wait "watch shows pubd again" 20 screen_has "^GROUP" || screen >&2

# q quits with status 0 and gives the terminal back.
tm send-keys -t w q
it_wait "watch exits on q" 20 test -e "$IT_WORK/watch.status" || screen >&2
it_eq "watch's exit status" "$(cat "$IT_WORK/watch.status" 2>/dev/null)" "exit=0"
# stty -a as before, but for the size (the pane was resized).
stty_modes() { sed -E 's/rows [0-9]+; columns [0-9]+;//' "$1"; }
it_eq "terminal settings restored (stty -a as before, size aside)" "$(stty_modes "$IT_WORK/stty.after" | md5sum)" \
	"$(stty_modes "$IT_WORK/stty.before" | md5sum)"
it_check "canonical mode on again" grep -Eq '(^| )icanon( |$)' "$IT_WORK/stty.after"
it_check "echo on again" grep -Eq '(^| )echo( |$)' "$IT_WORK/stty.after"
it_eq "back on the normal screen" "$(tm display-message -p -t w '#{alternate_on}')" 0
it_eq "cursor visible again" "$(tm display-message -p -t w '#{cursor_flag}')" 1
screen_gone() { ! screen_has '^GROUP'; }
it_check "watch's screen is gone" screen_gone

# Ctrl-C (SIGINT from the terminal) ends it the same way.
sed -e 's/watch\.status/watch2.status/g' -e 's/stty\.after/stty2.after/' "$IT_WORK/pane.sh" >"$IT_WORK/pane2.sh"
tm new-session -d -s w2 -x 80 -y 24 "bash '$IT_WORK/pane2.sh'" || it_fail "tmux new-session"
it_wait "the second watch is up" 20 bash -c "tmux -S '$TMUX_SOCK' capture-pane -p -t w2 | grep -q '^GROUP'"
tm send-keys -t w2 C-c
it_wait "watch exits on Ctrl-C" 20 test -e "$IT_WORK/watch2.status"
it_eq "watch's exit status after Ctrl-C" "$(cat "$IT_WORK/watch2.status" 2>/dev/null)" "exit=0"
it_eq "terminal settings restored after Ctrl-C" "$(stty_modes "$IT_WORK/stty2.after" | md5sum)" \
	"$(stty_modes "$IT_WORK/stty.before" | md5sum)"
it_eq "back on the normal screen after Ctrl-C" "$(tm display-message -p -t w2 '#{alternate_on}')" 0

# Not a terminal: plain frames, one per interval, no escape sequence; --count ends it.
out=$IT_WORK/plain.txt
"$PUBCTL" -s "$sock" watch --interval 0.2 --count 3 >"$out" 2>>"$IT_WORK/watch_stderr.log"
it_eq "plain watch --count 3 exits 0" "$?" 0
it_eq "three frames" "$(grep -c '^GROUP' "$out")" 3
no_escape() { ! grep -q $'\033' "$out"; }
it_check "no escape sequence in plain frames" no_escape
it_check "plain frames have rates (measured over ~0.2s)" grep -Eq '^every 0.2s \(last 0\.[1-9][0-9]*s\)' "$out"
# pubd absent at the start: status 2 and a message.
"$PUBCTL" -s "$IT_WORK/nothing.sock" watch --count 1 >/dev/null 2>"$IT_WORK/absent.err"
it_eq "watch without pubd exits 2" "$?" 2
it_check "and says why" grep -q "cannot reach pubd" "$IT_WORK/absent.err"
it_finish
