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

# The layer each header belongs to (the lowest layer wins a name two layers
# have; "" for a test's or a system header), found once: a find per
# #include made the check take over a minute, and time out under load.
declare -A header_layer=()
for l in engine server fabric sys core; do
	while IFS= read -r h; do
		header_layer[$(basename "$h")]=$l
	done < <(find "daemon/$l" -name '*.h')
done

for h in common/*.h; do
	[ -n "${header_layer[${h##*/}]:-}" ] || header_layer[${h##*/}]=common
done

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
			to=${header_layer[${inc##*/}]:-}
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
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
# One nm over every object (an nm, awk, sort and join per object took most
# of a minute): "object:address type symbol", or "object: U symbol". An object's source path,
# e.g. fabric/verbs/cq.c, from $build/daemon/fabric/CMakeFiles/pubd_fabric.dir/verbs/cq.c.o.
nm -A "${objs[@]}" | awk -v build="$build/daemon/" '
	function src(o,   l, rel) {
		sub(/:.*$/, "", o)
		o = substr(o, length(build) + 1)
		l = o; sub(/\/.*/, "", l)
		rel = o; sub(/^[^.]*\.dir\//, "", rel); sub(/\.o$/, "", rel)
		return l "/" rel
	}
	NF == 3 && $2 ~ /^[TDRB]$/ { def[$3] = src($1); next }
	NF == 3 && $2 == "U" { n++; usr[n] = src($1); sym[n] = $3 }
	END { for (i = 1; i <= n; i++) if ((sym[i] in def) && def[sym[i]] != usr[i]) print usr[i], def[sym[i]] }
' | sort -u >"$edges"
[ -n "${CHECK_LAYERS_EDGES:-}" ] && cp "$edges" "$CHECK_LAYERS_EDGES"
if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
	echo "FAIL daemon files call each other in a loop:"
	sed 's/^/  /' "$edges.err"
	fail=1
fi
rm -f "$edges.err"
[ $fail = 0 ] && echo "layers: includes follow the layering; $(wc -l <"$edges") calls between daemon files, no loop"
exit $fail
