#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The man pages against the code, so they cannot drift apart.
#
#   check_man.sh lint     SRC                  mandoc -Tlint -W warning on every page: any
#                                              warning or error fails
#   check_man.sh drift    SRC PUBD PUBCTL [MAN] fails when something the code has is not in
#                                              its page (MAN: the pages' folder, default SRC/man):
#     - a config key of daemon/core/config_keys.c's table: an ".It Cm KEY" under
#       ".Ss SECTION" of pubd.yaml.5's KEYS, whose text says its reload, and its default
#       and range as the table has them (check_man_keys.pl);
#     - a pubctl command (from `pubctl --help` of the built binary): ".It Cm NAME" in pubctl.1;
#     - a pubctl or pubd option (from their --help, and getopt_long's short string and long
#       table in cli/*.c / daemon/main.c): a ".Fl" of it in pubctl.1 / pubd.8;
#     - an exported function of libpub/pub.map: a ".Nm NAME" in the NAME section of a man3
#       page (man/CMakeLists.txt installs a .so stub for each such name);
#     - a drop reason of common/pub_reasons.h: ".It Cm REASON" in pubd.8;
#     - a table or column of pubd's query replies (daemon/engine/query.c): quoted in
#       pubctl.1's JSON OUTPUT.
#     What a page documents beyond the code is printed as a warning, not a failure (features
#     documented before they are merged).
#   check_man.sh selftest SRC PUBD PUBCTL       shows drift can fail: removes one entry of each
#                                              kind from a copy of the pages and expects failure
#   check_man.sh install  SRC BUILD             installs the man component into a scratch
#                                              DESTDIR and renders every page and function
#                                              name from there, .so stubs resolved as man(1) does
set -u

die() {
	echo "check_man: $*" >&2
	exit 2
}

# ---- what the code has ----

config_keys() { # SECTION.KEY, one a line
	sed -nE 's/^[[:space:]]*\{"([a-z_]+\.[a-z_]+)",[[:space:]]*K_.*/\1/p' "$1/daemon/core/config_keys.c"
}

pubctl_commands() { # the first word of each line of the Commands: block of --help
	"$1" --help | awk '/^Commands:/ {on = 1; next} on && /^$/ {exit}
		on && /^  [a-z]/ {print $1}'
}

help_options() { # every -x and --long-name in a --help text
	"$1" --help | grep -oE '(^|[][ ,|])--?[A-Za-z][A-Za-z-]*' | sed -E 's/^[][ ,|]//' |
		grep -E '^(-[A-Za-z]|--[A-Za-z][A-Za-z-]+)$' | sort -u
}

# The options of getopt_long's short string and long table in the sources.
source_options() {
	grep -ohE 'getopt_long\(argc, argv, "[^"]*"' "$@" | sed -E 's/.*"\+?([^"]*)"/\1/' |
		grep -oE '[A-Za-z]' | sed 's/^/-/'
	grep -ohE '\{"[a-z][a-z-]*", (no|required|optional)_argument' "$@" | sed -E 's/^\{"([^"]*)".*/--\1/'
}

code_options() { # BIN SOURCES...: what --help shows and what the sources parse
	local bin=$1

	shift
	{
		help_options "$bin"
		source_options "$@"
	} | sort -u
}

query_tables() { # the tables and columns of pubd's query replies (daemon/engine/query.c)
	grep -ohE 'table_begin\(r, "[a-z_-]+"' "$1/daemon/engine/query.c" | sed -E 's/.*"(.*)"/\1/'
	grep -ohE '"[a-z_+]+:[sui]"' "$1/daemon/engine/query.c" | sed -E 's/"(.*):.*/\1/'
}

exported_functions() {
	sed -nE 's/^[[:space:]]+(pub_[a-z0-9_]+);.*/\1/p' "$1/libpub/pub.map"
}

drop_reasons() {
	sed -nE 's/.*X\([A-Z_]+, "([a-z_]+)", PUB_DROP_KIND_.*/\1/p' "$1/common/pub_reasons.h"
}

# ---- what the pages have ----

# pubd.yaml.5: "SECTION.KEY default reload" for each .It Cm under a .Ss of
# .Sh KEYS; default/reload are 1 when the entry's text says so.
page_keys() {
	awk '
	function flush() {
		if (key != "")
			print key, (txt ~ /(Default|Required)/), (txt ~ /Reload:/)
		key = ""; txt = ""
	}
	/^\.Sh / { flush(); keys = ($0 == ".Sh KEYS"); sec = ""; next }
	!keys { next }
	/^\.Ss / { flush(); sec = $2; next }
	/^\.It Cm / { flush(); if (sec != "") key = sec "." $3; next }
	/^\.(It|El)/ { flush(); next }
	{ txt = txt " " $0 }
	END { flush() }' "$1"
}

page_items() { # NAME of each ".It Cm NAME" in a page
	sed -nE 's/^\.It Cm ([A-Za-z0-9_.-]+).*/\1/p' "$1" | sort -u
}

page_options() { # every option a .Fl names: -x, or --long for "Fl \-long" / "Fl -long"
	grep -oE 'Fl (\\?-)?[A-Za-z][A-Za-z-]*' "$1" | sed -E 's/^Fl \\?-/--/; s/^Fl /-/' | sort -u
}

page_json_names() { # every "word" quoted in pubctl.1's JSON OUTPUT section
	awk '/^\.Sh / {on = ($0 == ".Sh JSON OUTPUT"); next} on' "$1" | grep -oE '"[a-z_+-]+"' | tr -d '"' | sort -u
}

page_functions() { # names in the NAME sections of the man3 pages
	awk '/^\.Sh / {on = ($0 == ".Sh NAME"); next} on && /^\.Nm [A-Za-z_]/ {print $2}' "$1"/*.3 | sort -u
}

# ---- comparing ----

fails=0

# need WHAT HAVE WANT: every line of WANT (the code's) must be in HAVE (the
# page's); what HAVE has beyond WANT is a warning.
need() {
	need_subset "$@"
	comm -23 <(sort -u <<<"$2") <(sort -u <<<"$3") | grep . |
		sed "s/^/warning: $1: documents /; s/\$/, which the code does not have/"
}

# Like need, but the page's list holds other things too (not warned about).
need_subset() {
	local missing

	missing=$(comm -13 <(sort -u <<<"$2") <(sort -u <<<"$3") | grep .)
	[ -n "$missing" ] || return 0
	sed "s/^/MISSING: $1: /; s/\$/ has no entry/" <<<"$missing"
	fails=$((fails + $(wc -l <<<"$missing")))
}

drift() {
	local src=$1 pubd=$2 pubctl=$3 man=${4:-$1/man} keys k d r

	if [ ! -x "$pubd" ] || [ ! -x "$pubctl" ]; then
		die "drift: $pubd or $pubctl is not an executable"
	fi
	for f in pubd.8 pubd.yaml.5 pubctl.1 libpub.3; do
		[ -f "$man/$f" ] || {
			echo "MISSING: page $man/$f"
			fails=$((fails + 1))
		}
	done
	keys=$(page_keys "$man/pubd.yaml.5")
	need "pubd.yaml.5 key" "$(awk '{print $1}' <<<"$keys")" "$(config_keys "$src")"
	while read -r k d r; do
		[ -n "$k" ] || continue
		[ "$d" = 1 ] || {
			echo "MISSING: pubd.yaml.5 key $k: no 'Default:' (or 'Required')"
			fails=$((fails + 1))
		}
		[ "$r" = 1 ] || {
			echo "MISSING: pubd.yaml.5 key $k: no 'Reload:'"
			fails=$((fails + 1))
		}
	done <<<"$keys"
	# Defaults and ranges as the key table has them.
	if ! perl "$(dirname "$0")/check_man_keys.pl" "$src/daemon/core/config_keys.c" "$man/pubd.yaml.5"; then
		fails=$((fails + 1))
	fi
	need "pubctl.1 command" "$(page_items "$man/pubctl.1")" "$(pubctl_commands "$pubctl")"
	need "pubctl.1 option" "$(page_options "$man/pubctl.1")" "$(code_options "$pubctl" "$src"/cli/*.c)"
	need "pubd.8 option" "$(page_options "$man/pubd.8")" "$(code_options "$pubd" "$src/daemon/main.c")"
	need_subset "pubctl.1 JSON table or column" "$(page_json_names "$man/pubctl.1")" "$(query_tables "$src")"
	need "man3 function" "$(page_functions "$man" | grep '^pub_')" "$(exported_functions "$src")"
	need_subset "pubd.8 drop reason" "$(page_items "$man/pubd.8")" "$(drop_reasons "$src")"
	if [ "$fails" -ne 0 ]; then
		echo "check_man: $fails entries missing from the man pages"
		return 1
	fi
	echo "check_man: the pages document every key, command, option, function, drop reason and JSON column"
}

lint() {
	local out rc

	out=$(mandoc -Tlint -W warning "$1"/man/*.[1-8] 2>&1)
	rc=$?
	if [ $rc -ne 0 ] || [ -n "$out" ]; then
		printf '%s\n' "$out"
		echo "check_man: mandoc -Tlint -W warning: not clean (exit $rc)"
		return 1
	fi
	echo "check_man: mandoc -Tlint clean on $(printf '%s\n' "$1"/man/*.[1-8] | wc -l) pages"
}

# Drift run on a copy of the pages with one line removed (sed expression on
# file): it must fail, naming what.
expect_fail() {
	local src=$1 pubd=$2 pubctl=$3 file=$4 expr=$5 what=$6 tmp out

	tmp=$(mktemp -d)
	cp "$src"/man/*.[1-8] "$tmp"/
	sed -i -E "$expr" "$tmp/$file"
	if cmp -s "$src/man/$file" "$tmp/$file"; then
		echo "selftest: the edit '$expr' changed nothing in $file"
		rm -rf "$tmp"
		return 1
	fi
	out=$(fails=0 drift "$src" "$pubd" "$pubctl" "$tmp" 2>&1)
	local rc=$?
	rm -rf "$tmp"
	if [ $rc -eq 0 ] || ! grep -q "MISSING: .*$what" <<<"$out"; then
		echo "selftest: breaking '$what' in $file did not fail the check"
		printf '%s\n' "$out"
		return 1
	fi
	echo "selftest: breaking '$what' in $file fails: $(grep -m1 MISSING <<<"$out")"
}

selftest() {
	local bad=0

	fails=0
	drift "$@" >/dev/null || {
		echo "selftest: the pages do not pass to begin with"
		return 1
	}
	expect_fail "$@" pubd.yaml.5 '/^\.It Cm srq_depth /,/^Reload:/d' 'fabric.srq_depth' || bad=1
	expect_fail "$@" pubd.yaml.5 '/^\.It Cm rx_linger_us /,/^Reload:/{/^Reload:/d}' 'rx_linger_us: no .Reload' || bad=1
	expect_fail "$@" pubctl.1 's/^\.It Cm sources$/.It Cm xsources/' 'command: sources' || bad=1
	expect_fail "$@" pubctl.1 's/Fl \\-timeout/Ar timeout/g' 'option: --timeout' || bad=1
	expect_fail "$@" pubd.8 's/Fl \\-check-config/Ar check-config/g' 'option: --check-config' || bad=1
	expect_fail "$@" pub_recv.3 '/^\.Nm pub_fd$/d; s/^\.Nm pub_recv ,$/.Nm pub_recv/' 'function: pub_fd' || bad=1
	expect_fail "$@" pubd.8 '/^\.It Cm stale$/d' 'drop reason: stale' || bad=1
	expect_fail "$@" pubctl.1 's/"receiving_ms"/"x"/' 'JSON table or column: receiving_ms' || bad=1
	expect_fail "$@" pubd.yaml.5 's/^Default: 4096\.$/Default: 4095./' 'max_sources: default 4096' || bad=1
	expect_fail "$@" pubd.yaml.5 's/^Range 64 KiB to 1 GiB\.$/Range 64 KiB to 2 GiB./' 'publish_log: no .Range 64 KiB to 1 GiB' || bad=1
	expect_fail "$@" pubd.yaml.5 '/^\.It Cm log_level /,/^Reload/s/^\.Cm info \.$/.Cm debug ./' 'log_level: default info' || bad=1
	return $bad
}

install_check() {
	local src=$1 build=$2 dest mandir page name bad=0

	dest=$(mktemp -d)
	DESTDIR=$dest cmake --install "$build" --component man >/dev/null || die "cmake --install failed"
	mandir=$(find "$dest" -type d -name man1 -path '*/man/man1' | head -1)
	mandir=${mandir%/man1}
	[ -d "$mandir" ] || die "no man1 folder installed under $dest"
	# mandoc resolves ".so man3/pub_connect.3" from the folder it runs in,
	# as man(1) does from the manual's root.
	for name in pubd:8 pubd.yaml:5 pubctl:1 libpub:3 $(exported_functions "$src" | sed 's/$/:3/'); do
		page=man${name#*:}/${name%:*}.${name#*:}
		if ! (cd "$mandir" && mandoc -Tmarkdown "$page" 2>/dev/null) | grep -q "SYNOPSIS"; then
			echo "MISSING: $page does not open from the installed tree (man ${name#*:} ${name%:*})"
			bad=1
		fi
	done
	rm -rf "$dest"
	[ $bad -eq 0 ] && echo "check_man: every page and every libpub function opens from the installed tree"
	return $bad
}

case ${1:-} in
lint) lint "$2" ;;
drift) drift "$2" "$3" "$4" "${5:-}" ;;
selftest) selftest "$2" "$3" "$4" ;;
install) install_check "$2" "$3" ;;
*) die "usage: check_man.sh lint SRC | drift SRC PUBD PUBCTL [MANDIR] | selftest SRC PUBD PUBCTL | install SRC BUILD" ;;
esac
