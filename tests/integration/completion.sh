#!/bin/bash
# SPDX-License-Identifier: MIT
#
# pubctl's bash completion (cli/completion/pubctl), loaded with
# bash-completion's helpers as an interactive shell would: commands,
# global and per-command options, file names after --file/--output, and
# group names asked from a running pubd on the socket given with -s (none,
# quickly, when nothing answers there).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
it_setup completion

BASH_COMPLETION=${BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}
COMPLETION=$(cd "$(dirname "$0")/../.." && pwd)/cli/completion/pubctl
[ -r "$BASH_COMPLETION" ] || it_die "needs $BASH_COMPLETION (package bash-completion)"

it_host_lo h1
# Names the completion can only know from the daemon.
it_conf_write h1 - <<-EOF
	groups:
	  - name: quotes.eu
	    address: 239.81.15.1
	  - name: quotes.us
	    address: 239.81.15.2
	  - name: trades
	    address: 239.81.15.3
EOF
it_pubd_start h1 "$(it_ns h1)" || it_die "pubd did not start"
sock=$(it_sock h1)
touch "$IT_WORK/payload.bin" "$IT_WORK/payload.txt"

# complete WORD...: the completions (sorted, one a line) for the command line
# WORD... with the cursor at the end of its last word ("" for a new word).
complete_words() {
	bash --norc --noprofile -c '
		. "$1" && . "$2" || exit 1
		shift 2
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		COMPREPLY=()
		_pubctl pubctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$BASH_COMPLETION" "$COMPLETION" "$@"
}
# expect DESC WANT WORD...: WANT is the completions joined by spaces.
expect() {
	local desc=$1 want=$2 got
	shift 2
	got=$(complete_words "$@" | paste -sd' ')
	it_eq "$desc" "$got" "$want"
}

expect "commands" "clients drops group groups help metrics pub reload sources status sub watch" "$PUBCTL" ""
expect "commands starting with s" "sources status sub" "$PUBCTL" s
expect "global options" "--help --json --socket --version" "$PUBCTL" --
expect "commands after -s SOCKET" "group groups" "$PUBCTL" -s "$sock" gr
expect "socket paths after -s" "$IT_WORK/h1.sock" "$PUBCTL" -s "$IT_WORK/h1.so"
expect "live group names for sub" "quotes.eu quotes.us trades" "$PUBCTL" -s "$sock" sub ""
expect "live group names for sub, by prefix" "quotes.eu quotes.us" "$PUBCTL" -s "$sock" sub quo
expect "sub takes more groups" "trades" "$PUBCTL" -s "$sock" sub quotes.eu t
expect "group NAME with --socket=" "trades" "$PUBCTL" "--socket=$sock" group tr
expect "group takes one name" "" "$PUBCTL" -s "$sock" group trades ""
expect "pub GROUP" "quotes.eu" "$PUBCTL" -s "$sock" pub quotes.e
expect "pub's options" "--count --file --rate --size" "$PUBCTL" -s "$sock" pub trades --
expect "nothing after --count (a number)" "" "$PUBCTL" -s "$sock" pub trades --count ""
expect "file names after --file" "$IT_WORK/payload.bin $IT_WORK/payload.txt" "$PUBCTL" pub trades --file "$IT_WORK/pay"
expect "file names after --output" "$IT_WORK/payload.bin $IT_WORK/payload.txt" "$PUBCTL" sub trades --output "$IT_WORK/pay"
expect "sub's options" "--count --output --timeout" "$PUBCTL" sub trades --
expect "watch's options" "--count --interval" "$PUBCTL" watch --
expect "query options" "--json" "$PUBCTL" drops --
# $PUBD_SOCKET, as pubctl itself reads it, when there is no -s.
got=$(PUBD_SOCKET=$sock complete_words "$PUBCTL" sub tr | paste -sd' ')
it_eq "group names through \$PUBD_SOCKET" "$got" "trades"
# No pubd there: no names, no error, no wait.
start=$(date +%s%N)
got=$(complete_words "$PUBCTL" -s "$IT_WORK/none.sock" sub "" 2>&1 | paste -sd' ')
it_eq "no group names (and no noise) when pubd is not there" "$got" ""
it_check "and at once (under 2 s)" test $((($(date +%s%N) - start) / 1000000)) -lt 2000
registered() { bash --norc -c ". '$BASH_COMPLETION'; . '$COMPLETION'; complete -p pubctl" | grep -q _pubctl; }
it_check "the completion registers for pubctl" registered
it_finish
