#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Misbehaving and unauthorised clients, one pubd on its own loopback:
#  - a client sending garbage frames (unknown type, an absurd length, a body
#    whose name runs past its end, a malformed HELLO) gets an ERROR with the
#    protocol error code and is disconnected; each is counted; the daemon
#    and a subscribed libpub client go on (it still receives);
#  - ACL denial: `pubctl pub` and `pubctl sub` on a group whose ACLs do not
#    name root exit non-zero with a message naming the ACL, and the denials
#    are counted (acl_denied drops, sub_denied).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup garbage_acl

it_host_lo h1
it_conf_write h1 - <<-EOF
	groups:
	  - name: open
	    address: 239.80.1.1
	  - name: secret
	    address: 239.80.1.2
	    publish: [uid:4242]
	    subscribe: [uid:4242]
EOF
it_pubd_start h1 "$(it_ns h1)" || it_die "pubd did not start"
sock=$(it_sock h1)

# A well-behaved subscriber that must not notice any of this.
it_bg good "$(it_ns h1)" "$ITEST_CLIENT" sub -s "$sock" -g open --log "$IT_WORK/good.log" --timeout-ms 120000
good_pid=$IT_BG_PID
it_wait "good subscriber" 20 it_subscribers_at_least h1 open 1 || it_die "no subscriber"
"$ITEST_CLIENT" pub -s "$sock" -g open --count 1 --size 64 --start 1 || it_fail "publish before"
it_wait "good subscriber got message 1" 20 it_lines_at_least "$IT_WORK/good.log" "^msg open .* 1 OK" 1

modes=(type length body hello)
for m in "${modes[@]}"; do
	out=$("$ITEST_CLIENT" garbage -s "$sock" --mode "$m" --timeout-ms 10000)
	st=$?
	it_log "garbage $m: $(tr '\n' ' ' <<<"$out")"
	it_eq "garbage ($m): protocol error reply, then disconnected" "$st" 0
done
it_eq "each garbage client counted (clients_protocol_errors)" "$(it_counter h1 clients_protocol_errors)" "${#modes[@]}"
it_check "pubd still answers" it_ctl h1 status >/dev/null
it_eq "the good subscriber is still connected" "$(it_group_val h1 open subscribers)" 1
"$ITEST_CLIENT" pub -s "$sock" -g open --count 1 --size 64 --start 2 || it_fail "publish after"
it_wait "good subscriber got message 2 after the garbage" 20 it_lines_at_least "$IT_WORK/good.log" "^msg open .* 2 OK" 1
it_eq "the good subscriber never saw an error" "$(it_lines "$IT_WORK/good.log" '^error')" 0

# ACL: root (uid 0) is not in secret's lists.
out=$(it_ctl h1 pub secret "not for you" 2>&1)
st=$?
it_log "pubctl pub secret: exit $st: $out"
it_check "pubctl pub to a group whose publish ACL denies us fails" test "$st" -ne 0
it_check "and says it was the ACL" grep -qi 'acl' <<<"$out"
it_eq "the denial is counted (acl_denied, group secret)" \
	"$(it_ctl h1 --json drops | jq '[.drops[] | select(.scope == "group" and .name == "secret" and .reason == "acl_denied") | .count] | add // 0')" 1
it_eq "secret published nothing" "$(it_group_val h1 secret published)" 0

out=$(it_ctl h1 sub secret --count 1 --timeout 10 2>&1)
st=$?
it_log "pubctl sub secret: exit $st: $out"
it_check "pubctl sub to a group whose subscribe ACL denies us fails" test "$st" -ne 0
it_check "and says it was the ACL" grep -qi 'acl' <<<"$out"
it_eq "the denial is counted (sub_denied, group secret)" "$(it_group_val h1 secret sub_denied)" 1
it_eq "secret has no subscriber" "$(it_group_val h1 secret subscribers)" 0

# Same through libpub directly: the error code is PUB_EACL.
"$ITEST_CLIENT" sub -s "$sock" -g secret --count 1 --timeout-ms 10000 --log "$IT_WORK/denied.log"
it_check "libpub subscribe returns PUB_EACL (2003)" grep -q '^subscribe-error 2003 ' "$IT_WORK/denied.log"

it_eq "after all that, the good subscriber is still there" "$(it_group_val h1 open subscribers)" 1
kill -TERM "$good_pid"
it_reap "$good_pid" 10
it_finish
