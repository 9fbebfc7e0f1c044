#!/bin/sh
# check-format.sh SRC [CLANG_FORMAT] — every C file git tracks under src/,
# include/, tests/ and bench/ is formatted as .clang-format says. The
# formatter is pinned to clang-format-14 (Debian 12's; the test bootstrap
# installs it) so that the check gives the same answer everywhere. Lists
# each file that differs and how to fix it; exits 1 then.
set -eu
S=${1:?usage: check-format.sh SRC [CLANG_FORMAT]}
CF=${2:-clang-format-14}
command -v "$CF" >/dev/null 2>&1 || { echo "check-format: $CF not found: install the Debian package clang-format-14" >&2; exit 1; }
cd "$S"
if [ -d .git ] || git rev-parse --git-dir >/dev/null 2>&1; then
  files=$(git ls-files 'src/*.[ch]' 'include/*.h' 'include/*.h.in' 'tests/*.[ch]' 'bench/*.[ch]' | grep -v '\.h\.in$' || true)
else
  files=$(find src include tests bench -name '*.[ch]' | sort)
fi
bad=0
for f in $files; do
  [ -f "$f" ] || continue
  if ! "$CF" --style=file "$f" | cmp -s - "$f"; then
    echo "check-format: $f is not formatted (run: $CF -i $f)" >&2
    bad=$((bad + 1))
  fi
done
n=$(printf '%s\n' $files | grep -c . || true)
if [ $bad -ne 0 ]; then echo "check-format: $bad of $n files differ from .clang-format" >&2; exit 1; fi
echo "check-format: $n files formatted as .clang-format says"
