#!/bin/sh
# check-function-length.sh SRC [EXEMPT] — no C function in src/ (issue 43;
# src/core and src/daemon since issue 28) is longer than 100 lines (docs/architecture.md). A
# long function is split along its concepts, into named helpers that each do
# one thing, not into numbered pieces.
#
# The sources are clang-formatted (.clang-format: Linux braces), so a
# function body opens with "{" in column 0 and closes with "}" in column 0;
# nothing else does. A function's length is its lines from that "{" to that
# "}", both included; its name is the identifier before the first "(" of
# the last unindented line above the "{" that has one (the signature).
#
# EXEMPT (default SRC/scripts/function-length-exempt.txt; the environment's
# PFI_FNLEN_EXEMPT overrides it) lists functions let through for now, one
# "PATH FUNCTION" per line, PATH relative to SRC, "#" starting a comment.
# An exemption that no longer matches a function over the limit is named
# as one to remove, without failing.
#
# Fails, naming FILE:LINE, the function and its length, for each function
# over the limit that is not exempt; exits 1 then. MAX_LINES (environment)
# changes the limit, for the self-test.
set -eu
S=${1:?usage: check-function-length.sh SRC [EXEMPT]}
E=${2:-${PFI_FNLEN_EXEMPT:-$S/scripts/function-length-exempt.txt}}
MAX=${MAX_LINES:-100}
cd "$S"
if git rev-parse --git-dir >/dev/null 2>&1 && [ -n "$(git ls-files src | head -n 1)" ]; then
  files=$(git ls-files 'src/*.c')
else
  files=$(find src -name '*.c' 2>/dev/null | sort)
fi
files=$(for f in $files; do [ -f "$f" ] && echo "$f"; done) # not a deletion yet uncommitted
[ -n "$files" ] || { echo "check-function-length: no C files under $S/src" >&2; exit 1; }
if [ -f "$E" ]; then ex=$E; else ex=/dev/null; fi
# shellcheck disable=SC2086 # the file list is split on purpose
awk -v max="$MAX" -v exfile="$ex" '
BEGIN {
    while ((getline l < exfile) > 0) {
        sub(/#.*/, "", l)
        if (split(l, f, " ") >= 2) exempt[f[1] " " f[2]] = 1
    }
}
FNR == 1 { sig = ""; open = 0 }
/^\{/ { start = FNR; name = sig; open = 1; next }
/^\}/ && open {
    len = FNR - start + 1
    if (len > max) {
        key = FILENAME " " name
        if (key in exempt) { used[key] = 1; printf "check-function-length: %s:%d: %s is %d lines (exempt)\n", FILENAME, start, name, len }
        else { printf "check-function-length: %s:%d: %s is %d lines, over %d\n", FILENAME, start, name, len, max > "/dev/stderr"; bad++ }
    }
    n_fn++; open = 0; sig = ""; next
}
!open && /^[A-Za-z_]/ && match($0, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/) {
    sig = substr($0, RSTART, RLENGTH); sub(/[ \t]*\($/, "", sig)
}
!open && /;[ \t]*$/ && /^[A-Za-z_}]/ { sig = "" }
END {
    for (k in exempt) if (!(k in used)) { split(k, f, " "); printf "check-function-length: %s %s is exempt, but no function of that name there is over %d lines (split, renamed or gone): remove it from %s\n", f[1], f[2], max, exfile }
    if (bad) { printf "check-function-length: %d function(s) over %d lines: split them along their concepts\n", bad, max > "/dev/stderr"; exit 1 }
    printf "check-function-length: %d functions in %d files, none over %d lines but the exempt\n", n_fn, nfiles, max
}
FNR == 1 { nfiles++ }
' $files
