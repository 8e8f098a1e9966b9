#!/bin/bash
# SPDX-License-Identifier: MIT
#
# SIGHUP reload: a group added and one removed while subscribers are
# connected; the other groups' subscribers are untouched (same connection,
# counters go on, still receiving). A broken new configuration is reported
# (in the log with FILE:LINE:COLUMN, and by `pubctl reload`) and the running
# one is kept.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup reload

it_host_lo h1
conf=$(it_conf h1)
write_conf() { # GROUP...
	local g i=0
	{
		for g in "$@"; do
			i=$((i + 1))
			printf '  - name: %s\n    address: 239.82.1.%d\n' "$g" "$i"
		done
	} | {
		echo "groups:"
		cat
	} | it_conf_write h1 -
}
write_conf ka kb kc
ns=$(it_ns h1)
sock=$(it_sock h1)
it_pubd_start h1 "$ns" || it_die "pubd did not start"
pid=$(it_pid h1)

it_bg sub-ka "$ns" "$ITEST_CLIENT" sub -s "$sock" -g ka --log "$IT_WORK/ka.log" --timeout-ms 120000
ka_pid=$IT_BG_PID
it_bg sub-kc "$ns" "$ITEST_CLIENT" sub -s "$sock" -g kc --log "$IT_WORK/kc.log" --timeout-ms 120000
kc_pid=$IT_BG_PID
it_wait "ka subscriber" 20 it_subscribers_at_least h1 ka 1 || it_die "no subscriber"
it_wait "kc subscriber" 20 it_subscribers_at_least h1 kc 1 || it_die "no subscriber"
"$ITEST_CLIENT" pub -s "$sock" -g ka --count 3 --size 64 --start 0 || it_fail "publish ka"
it_wait "ka subscriber got 3" 20 it_lines_at_least "$IT_WORK/ka.log" '^msg ka ' 3
ka_client=$(it_q h1 group ka '.subscribers[0].client')

# pubctl pub refuses what would publish nothing, or what pubd would refuse,
# with words that say so (a zero count exited 0 without a word; a size past
# the limit said "out of memory" from allocating it), and sends nothing.
out=$(it_ctl h1 pub ka hello --count 0 2>&1)
st=$?
it_check "pubctl pub --count 0 fails ($st: $out)" test "$st" -eq 1
it_check "and says why" grep -q "expected at least 1 message" <<<"$out"
out=$(it_ctl h1 pub ka --size 99999999999 2>&1)
st=$?
it_check "pubctl pub --size past max_message_size fails ($st: $out)" test "$st" -eq 1
it_check "and names the limit" grep -q "larger than pubd's limits.max_message_size (16777216 bytes)" <<<"$out"
# A group query without a group is the caller's mistake (-EINVAL), not
# "no group named ''" from pubd.
out=$(it_ctl h1 group "" 2>&1)
it_check "pubctl group '' asks which group ($out)" grep -q "group: which group" <<<"$out"

# Reload: kc removed, kd added, ka and kb kept.
write_conf ka kb kd
kill -HUP "$pid"
it_wait "kd appeared" 20 it_group_is h1 kd joined 1
it_wait "kc is gone" 20 it_group_absent h1 kc
it_eq "reloads counted" "$(it_counter h1 reloads)" 1
it_eq "groups now" "$(it_q h1 groups '[.groups[].name] | sort | join(",")')" "ka,kb,kd"
it_eq "ka's subscriber is the same connection" "$(it_q h1 group ka '.subscribers[0].client')" "$ka_client"
it_eq "ka's counters went on (delivered 3)" "$(it_q h1 group ka '.subscribers[0].delivered')" 3
"$ITEST_CLIENT" pub -s "$sock" -g ka --count 3 --size 64 --start 3 || it_fail "publish ka after reload"
it_wait "ka subscriber got 6, untouched by the reload" 20 it_lines_at_least "$IT_WORK/ka.log" '^msg ka ' 6
it_eq "ka's subscriber saw no error" "$(it_lines "$IT_WORK/ka.log" '^error')" 0
it_eq "ka's subscriber did not reconnect" "$(it_lines "$IT_WORK/ka.log" '^reconnected')" 0
it_wait "kc's subscriber was told its group is gone (PUB_ENOGROUP)" 20 \
	it_lines_at_least "$IT_WORK/kc.log" '^error 2004 ' 1
# The new group works.
it_bg sub-kd "$ns" "$PUBCTL" -s "$sock" sub kd --count 1 --timeout 30 --output "$IT_WORK/kd.bin"
kd_pid=$IT_BG_PID
it_wait "kd subscriber" 20 it_subscribers_at_least h1 kd 1
it_ctl h1 pub kd "hello kd" >/dev/null || it_fail "publish kd"
it_reap "$kd_pid" 30
it_eq "the new group delivers" "$IT_STATUS:$(cat "$IT_WORK/kd.bin")" "0:hello kd"
"$ITEST_CLIENT" pub -s "$sock" -g kc --count 1 --size 64 >/dev/null 2>&1 &&
	it_fail "publishing to the removed group kc still works"

# A broken configuration: reported, the running one kept.
cp "$conf" "$IT_WORK/good.yaml"
printf 'groups:\n  - name: kz\n    address: not-an-address\n  - name: [broken\n' >>"$conf"
kill -HUP "$pid"
it_wait "the failed reload is counted" 20 it_counter_is h1 reload_failures 1
it_wait "the log names the file, line and column" 20 grep -Eq "$conf:[0-9]+:[0-9]+:" "$IT_WORK/h1.log"
grep -E "$conf:[0-9]+:[0-9]+:" "$IT_WORK/h1.log" | head -3 >&2
it_check "pubd still runs" kill -0 "$pid"
it_eq "the running groups are kept" "$(it_q h1 groups '[.groups[].name] | sort | join(",")')" "ka,kb,kd"
# reload_refused WHAT REGEX FAILURES: pubctl reload fails on the file, says
# REGEX, the failure is counted, and the running groups stay.
reload_refused() {
	local out st
	out=$(it_ctl h1 reload 2>&1)
	st=$?
	RELOAD_OUT=$out
	it_log "pubctl reload of $1: exit $st: $out"
	it_check "pubctl reload fails on $1" test "$st" -ne 0
	it_check "and says so ($2)" grep -Eq "$2" <<<"$out"
	it_eq "reload failures counted" "$(it_counter h1 reload_failures)" "$3"
	it_eq "the running groups are kept" "$(it_q h1 groups '[.groups[].name] | sort | join(",")')" "ka,kb,kd"
}
reload_refused "the broken file" "$conf:[0-9]+:[0-9]+:" 2
"$ITEST_CLIENT" pub -s "$sock" -g ka --count 1 --size 64 --start 6 || it_fail "publish ka after a failed reload"
it_wait "ka subscriber still receives" 20 it_lines_at_least "$IT_WORK/ka.log" '^msg ka ' 7

# An empty file (the classic failed edit: truncated, or saved half-way) is
# refused at reload: applied, it took every group away and put socket_mode
# back to its default.
printf '# nothing yet\n' >"$conf"
reload_refused "an empty file" "holds no settings" 3

# Many errors: pubctl is told each, as the log is (the reply was cut at
# 511 bytes, mid-word, naming 4 of 8).
cp "$IT_WORK/good.yaml" "$conf"
for i in 1 2 3 4 5 6 7 8; do printf '  - name: kbad%d\n    address: 10.0.0.%d\n' "$i" "$i"; done >"$IT_WORK/bad8.yaml"
sed -i "/^groups:\$/r $IT_WORK/bad8.yaml" "$conf"
reload_refused "a file with 8 bad addresses" "$conf:[0-9]+:[0-9]+:" 4
it_eq "pubctl is told of all 8" "$(grep -Eo "$conf:[0-9]+:[0-9]+:" <<<"$RELOAD_OUT" | sort -u | wc -l)" 8

# Only root and pubd's own user may reload: another user is told so, in
# words that do not blame a group's ACL (there is no group in a reload).
if setpriv --reuid=65534 --regid=65534 --clear-groups "$PUBCTL" --version >/dev/null 2>&1; then
	dmode=$(stat -c %a "$(dirname "$sock")")
	chmod o+x "$(dirname "$sock")"
	chmod 666 "$sock"
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$PUBCTL" -s "$sock" reload 2>&1)
	st=$?
	chmod 660 "$sock"
	chmod "$dmode" "$(dirname "$sock")"
	it_check "pubctl reload by another user fails ($st: $out)" test "$st" -eq 1
	it_check "with permission denied, not a group's ACL" \
		grep -q "reload: permission denied (pubd: only root or pubd's own user may reload)" <<<"$out"
else
	it_log "skipped: uid 65534 cannot run $PUBCTL here (its directory is not open to it)"
fi

# A good config again applies.
cp "$IT_WORK/good.yaml" "$conf"
it_check "pubctl reload of a good file" it_ctl h1 reload
it_eq "reloads counted" "$(it_counter h1 reloads)" 2

# daemon.socket_mode follows at a reload: who may connect from now on.
it_eq "the socket's mode at start" "$(stat -c %a "$sock")" 660
sed -i "s|^daemon:\$|daemon:\n  socket_mode: \"0600\"|" "$conf"
it_check "pubctl reload with a tighter socket_mode" it_ctl h1 reload
it_eq "the socket's mode after it" "$(stat -c %a "$sock")" 600
# Applied, but not all of it: a fabric key needs a restart. pubctl says
# which, and fails, instead of "reloaded".
sed -i "s|^fabric:\$|fabric:\n  mtu: 1024|" "$conf"
out=$(it_ctl h1 reload 2>&1)
st=$?
it_log "pubctl reload: exit $st: $out"
it_check "pubctl reload of a restart-only change fails" test "$st" -ne 0
it_check "and says it was applied but for the fabric key it names" \
	grep -q "applied the new configuration, but not all of it (pubd: fabric.mtu changed; applied when pubd restarts)" <<<"$out"
it_eq "reloads counted (it was applied)" "$(it_counter h1 reloads)" 4
# The key put back: what runs is what the file says, nothing to report
# (before, a reload compared with the last file read, and said it changed).
sed -i "/^  mtu: 1024\$/d" "$conf"
it_check "pubctl reload of the fabric key put back succeeds" it_ctl h1 reload
# A fabric.address set where none was is a restart-only change too (it
# was accepted without a word).
sed -i "s|^fabric:\$|fabric:\n  address: 127.0.0.1|" "$conf"
out=$(it_ctl h1 reload 2>&1)
it_check "pubctl reload that sets fabric.address names it ($out)" grep -q "pubd: fabric.address changed" <<<"$out"
sed -i "/^  address: 127.0.0.1\$/d" "$conf"
it_check "and succeeds once it is taken out again" it_ctl h1 reload
it_eq "reloads counted" "$(it_counter h1 reloads)" 7

# A group made anew (ka's address changes): its subscriber is told, and
# libpub subscribes again by itself; the application sees no error.
write_conf kb ka kd
kill -HUP "$pid"
it_wait "the reload is applied" 20 it_counter_is h1 reloads 8
it_wait "ka's subscriber is back" 20 it_subscribers_at_least h1 ka 1
it_check "on a new subscription" test "$(it_q h1 group ka '.subscribers[0].delivered')" = 0
"$ITEST_CLIENT" pub -s "$sock" -g ka --count 3 --size 64 --start 7 || it_fail "publish ka after it was remade"
it_wait "ka's subscriber receives from the remade group" 20 it_lines_at_least "$IT_WORK/ka.log" '^msg ka ' 10
it_eq "and saw no error" "$(it_lines "$IT_WORK/ka.log" '^error')" 0
it_eq "nor reconnected" "$(it_lines "$IT_WORK/ka.log" '^reconnected')" 0

kill -TERM "$ka_pid" "$kc_pid"
it_reap "$ka_pid" 10
it_reap "$kc_pid" 10

# A fabric that cannot open stops pubd at start with status 1, saying why
# (it crashed after saying so: closing a socket server it never began).
sed -e "s|h1.sock|h9.sock|" -e "s|^fabric:\$|fabric:\n  address: nosuchif0|" "$conf" >"$IT_WORK/h9.yaml"
ip netns exec "$ns" timeout 20 "$PUBD" -c "$IT_WORK/h9.yaml" >"$IT_WORK/h9.log" 2>&1
it_eq "a pubd whose fabric.address names no interface exits with status 1" "$?" 1
it_check "naming it" grep -q "no interface named nosuchif0" "$IT_WORK/h9.log"
# fabric.type verbs where the address is on no RDMA device: status 1, and
# the error says which address and what devices there are.
sed -e "s|h1.sock|h9.sock|" -e "s|^fabric:\$|fabric:\n  type: verbs\n  address: 127.0.0.1|" "$conf" >"$IT_WORK/h9v.yaml"
sed -i "/^  type: udp\$/d" "$IT_WORK/h9v.yaml"
ip netns exec "$ns" timeout 20 "$PUBD" -c "$IT_WORK/h9v.yaml" >"$IT_WORK/h9v.log" 2>&1
it_eq "a verbs pubd whose address is on no RDMA device exits with status 1" "$?" 1
if ! grep -q "built without the verbs fabric" "$IT_WORK/h9v.log"; then
	it_check "saying which address and what devices it found ($(grep -m1 'RDMA devices' "$IT_WORK/h9v.log"))" \
		grep -q "fabric.address 127.0.0.1.*RDMA devices found: " "$IT_WORK/h9v.log"
fi
it_finish
