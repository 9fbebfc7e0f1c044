#!/bin/sh
# run-tests.sh BUILD_DIR TITLE EXCLUDE_LABEL — run one build's tests with
# ctest, keep the full log in BUILD_DIR/test.log, print each unit test's
# cmocka summary line and each test's result, and exit with ctest's status.
set -u
dir=$1; title=$2; exclude=$3
log="$dir/test.log"
echo "== tests: $title ($dir)"
if [ -n "$exclude" ]; then
  ctest --test-dir "$dir" -j "${JOBS:-2}" -V -LE "$exclude" >"$log" 2>&1
else
  ctest --test-dir "$dir" -j "${JOBS:-2}" -V >"$log" 2>&1
fi
rc=$?
# cmocka summary lines ("[  PASSED  ] N test(s)." / "[  FAILED  ] ...") and
# ctest's per-test result lines and totals
grep -E '^[0-9]+: \[  (PASSED|FAILED)  \]|Test +#[0-9]+: |tests passed|tests failed|^[0-9]+: (ok|FAIL|SKIP)' "$log" \
  | sed -E 's/^[0-9]+: //'
if [ $rc -ne 0 ]; then
  echo "== FAILED: $title — output of failed tests:"
  ctest --test-dir "$dir" --rerun-failed --output-on-failure 2>&1 | tail -n 200
fi
exit $rc
