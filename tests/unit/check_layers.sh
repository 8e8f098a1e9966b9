#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The daemon's layering, checked rather than hoped for:
#  1. every #include "..." in daemon/LAYER/ names a header of LAYER or of a
#     layer below it (README.md, "Inside pubd"), never by a "../" path;
#  2. no two daemon source files call each other in a loop: the calls
#     between the compiled objects (from nm) form no cycle (tsort).
#
#   tests/unit/check_layers.sh REPO BUILD_DIR
set -uo pipefail
repo=${1:?usage: check_layers.sh REPO BUILD_DIR}
build=${2:?usage: check_layers.sh REPO BUILD_DIR}
cd "$repo" || exit 1
fail=0

# What each layer may include besides itself (common/ is open to all).
declare -A below=(
	[core]=""
	[sys]="core"
	[fabric]="sys core"
	[server]="sys core"
	[engine]="server fabric sys core"
)

# The layer a header belongs to ("" when it is not the daemon's).
layer_of_header() {
	local h=$1 l
	for l in core sys fabric server engine; do
		if [ -n "$(find "daemon/$l" -name "$h" -print -quit)" ]; then
			echo "$l"
			return
		fi
	done
	[ -e "common/$h" ] && echo common
}

for layer in "${!below[@]}"; do
	while IFS= read -r f; do
		while IFS= read -r inc; do
			case $inc in
			../*)
				echo "FAIL $f: #include \"$inc\" steps out by path"
				fail=1
				continue
				;;
			esac
			to=$(layer_of_header "$(basename "$inc")")
			[ -z "$to" ] && continue # a test's or a system header
			case " $layer common ${below[$layer]} " in
			*" $to "*) ;;
			*)
				echo "FAIL $f: includes $inc from daemon/$to (daemon/$layer may include: ${below[$layer]:-nothing})"
				fail=1
				;;
			esac
		done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
	done < <(find "daemon/$layer" -name '*.[ch]')
done

# Calls between files: "caller callee" pairs from the symbol tables of the
# layers' libraries as built now (stale objects of old layouts left in a
# build directory do not count).
libs=()
for l in core sys fabric server engine; do
	lib="$build/daemon/$l/libpubd_$l.a"
	if [ ! -f "$lib" ]; then
		echo "FAIL no $lib (build first)"
		exit 1
	fi
	libs+=("$lib")
done
defs=$(mktemp)
edges=$(mktemp)
trap 'rm -f "$defs" "$edges"' EXIT
syms() { # LIB -> "layer/member.c type symbol" per symbol
	local layer
	layer=$(basename "$(dirname "$1")")
	nm -A "$1" 2>/dev/null | sed -n "s|^[^:]*:\([^:]*\)\.o: *[0-9a-f]* *\([A-Za-z]\) \(.*\)$|$layer/\1 \2 \3|p"
}
for lib in "${libs[@]}"; do syms "$lib"; done | awk '$2 ~ /^[TDRB]$/ { print $3, $1 }' | sort >"$defs"
for lib in "${libs[@]}"; do syms "$lib"; done | awk '$2 == "U" { print $3, $1 }' | sort -u | join - "$defs" |
	awk '$2 != $3 { print $2, $3 }' | sort -u >"$edges"
[ -n "${CHECK_LAYERS_EDGES:-}" ] && cp "$edges" "$CHECK_LAYERS_EDGES"
if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
	echo "FAIL daemon files call each other in a loop:"
	sed 's/^/  /' "$edges.err"
	fail=1
fi
rm -f "$edges.err"
[ $fail = 0 ] && echo "layers: includes follow the layering; $(wc -l <"$edges") calls between daemon files, no loop"
exit $fail
