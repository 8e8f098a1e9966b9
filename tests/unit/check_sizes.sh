#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The sizes the code keeps to (a closed issue's contract), checked rather than
# hoped for: every C source file of daemon/, libpub/src, cli and common has at
# most 800 lines, and every function in them at most 80, counted from the line
# of its opening `{` to the line of its closing `}`. A long function is hard to
# review and hides the steps it takes; split it into named helpers.
#
#   tests/unit/check_sizes.sh SRC
#
# The files are git's (git ls-files: tracked, and new ones not ignored), or
# every *.c and *.h under the folders when SRC is not a git work tree (a
# release tarball). CHECK_SIZES_MAX_FILE and CHECK_SIZES_MAX_FUNC set other
# limits (0 lists every function with its size). A function body is found
# the way the code is formatted (.clang-format, kernel style): its `{` alone on
# a line at column 0, its `}` the next line starting at column 0. Anything at
# column 0 that breaks that pattern (a `{` inside a body, a body never closed)
# fails the check too, so that a function the check cannot see is not passed
# silently.
set -uo pipefail
src=${1:?usage: check_sizes.sh SRC}
cd "$src" || exit 2

max_file=${CHECK_SIZES_MAX_FILE:-800}
max_func=${CHECK_SIZES_MAX_FUNC:-80}
dirs=(daemon libpub/src cli common)

files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# (A file deleted but not yet committed is gone: not read.)
	while IFS= read -r -d '' f; do
		[ -f "$f" ] && files+=("$f")
	done < <(git ls-files -z --cached --others --exclude-standard -- "${dirs[@]/%//*.c}" "${dirs[@]/%//*.h}" |
		sort -zu)
else
	while IFS= read -r -d '' f; do
		files+=("$f")
	done < <(find "${dirs[@]}" -type f -name '*.[ch]' -print0 | sort -z)
fi
if [ ${#files[@]} -eq 0 ]; then
	echo "FAIL no C source files under ${dirs[*]} in $src"
	exit 1
fi

# One awk over every file: "FAIL file:line ..." for each offender, then a
# last line "checked FILES FUNCTIONS LONGEST_FUNCTION".
out=$(LC_ALL=C awk -v max_file="$max_file" -v max_func="$max_func" '
	function fail(msg) { print "FAIL " msg; bad++ }
	# The function name of a header held in hdr: the identifier before its
	# first "(", attributes aside.
	function name_of(h,   s) {
		s = h
		gsub(/__attribute__[[:space:]]*\(\([^)]*\)\)/, "", s)
		if (match(s, /[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(/))
			return substr(s, RSTART, RLENGTH - 1)
		return "?"
	}
	function end_file() {
		if (file == "")
			return
		if (open_line)
			fail(file ":" open_line ": " fname "() has no closing } at column 0")
		if (lines > max_file)
			fail(file ":1: " lines " lines (max " max_file ")")
	}
	FNR == 1 { end_file(); file = FILENAME; nfiles++; open_line = 0; hdr = ""; lines = 0 }
	{ lines = FNR; sub(/\r$/, "") }
	/^\{[[:space:]]*$/ {
		if (open_line) {
			fail(file ":" FNR ": { at column 0 inside " fname "() (opened at line " open_line ")")
			next
		}
		open_line = FNR
		fname = name_of(hdr)
		hdr = ""
		next
	}
	/^\}/ {
		if (open_line) {
			n = FNR - open_line + 1
			nfuncs++
			if (n > longest)
				longest = n
			if (n > max_func)
				fail(file ":" open_line ": " fname "() " n " lines (max " max_func ")")
			open_line = 0
		}
		hdr = ""
		next
	}
	open_line { next }
	# Outside a body: keep the lines since the last declaration, comment or
	# blank line, the header of the body that may follow.
	/^[[:space:]]*$/ || /;[[:space:]]*$/ || /^#/ || /\*\/[[:space:]]*$/ { hdr = ""; next }
	{ hdr = hdr " " $0 }
	END {
		end_file()
		print "checked", nfiles, nfuncs + 0, longest + 0
		exit (bad > 0)
	}
' "${files[@]}")
rc=$?
if [ "$rc" -gt 1 ]; then
	printf '%s\n' "$out"
	echo "FAIL awk could not read the sources (exit $rc)"
	exit 1
fi

grep '^FAIL ' <<<"$out"
read -r _ nfiles nfuncs longest < <(grep '^checked ' <<<"$out")
if [ "$rc" -ne 0 ]; then
	echo "check_sizes: $(grep -c '^FAIL ' <<<"$out") offenders (files at most $max_file lines, functions at most $max_func)"
	exit 1
fi
if [ "${nfuncs:-0}" -eq 0 ]; then
	echo "FAIL no function bodies found in $nfiles files: is the code still formatted as .clang-format says?"
	exit 1
fi
echo "check_sizes: $nfiles files of at most $max_file lines, $nfuncs functions of at most $max_func (longest $longest)"
