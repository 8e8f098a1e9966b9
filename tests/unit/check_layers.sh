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
# layers' objects as built now: an object counts only while its source file
# exists (stale objects of an old layout left in a build directory do not).
objs=()
for l in core sys fabric server engine; do
	dir="$build/daemon/$l/CMakeFiles/pubd_$l.dir"
	if [ ! -d "$dir" ]; then
		echo "FAIL no $dir (build first)"
		exit 1
	fi
	while IFS= read -r o; do
		rel=${o#"$dir"/}
		[ -f "daemon/$l/${rel%.o}" ] && objs+=("$o")
	done < <(find "$dir" -name '*.c.o' | sort)
done
defs=$(mktemp)
edges=$(mktemp)
trap 'rm -f "$defs" "$edges"' EXIT
src_of() { # object -> daemon source path, e.g. fabric/verbs/cq.c
	local rel=${1#"$build"/daemon/}
	local l=${rel%%/*}
	rel=${rel#*.dir/}
	echo "$l/${rel%.o}"
}
for o in "${objs[@]}"; do
	nm "$o" | awk -v f="$(src_of "$o")" 'NF == 3 && $2 ~ /^[TDRB]$/ { print $3, f }'
done | sort >"$defs"
for o in "${objs[@]}"; do
	nm "$o" | awk 'NF == 2 && $1 == "U" { print $2 }' | sort -u | join - "$defs" |
		awk -v f="$(src_of "$o")" '$2 != f { print f, $2 }'
done | sort -u >"$edges"
[ -n "${CHECK_LAYERS_EDGES:-}" ] && cp "$edges" "$CHECK_LAYERS_EDGES"
if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
	echo "FAIL daemon files call each other in a loop:"
	sed 's/^/  /' "$edges.err"
	fail=1
fi
rm -f "$edges.err"
[ $fail = 0 ] && echo "layers: includes follow the layering; $(wc -l <"$edges") calls between daemon files, no loop"
exit $fail
