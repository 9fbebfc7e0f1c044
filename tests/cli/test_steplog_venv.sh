#!/bin/sh
# test_steplog_venv.sh — the training-loop hook installs offline as
# docs/steplog.md says: a venv made by Debian's python3-venv with
# --system-site-packages, `pip install --no-index --no-build-isolation
# ./python` (setuptools and wheel from python3-setuptools and
# python3-wheel), and the installed package — not the source tree — imports
# and writes a step log line; its version is pfi's.
. "$SRC/tests/cli/lib.sh"
PY=/usr/bin/python3
"$PY" -c 'import venv, setuptools, wheel' 2>"$T/py.err" || { cat "$T/py.err" >&2; fail "python3-venv, python3-setuptools and python3-wheel are needed (scripts/bootstrap.sh test)"; }
# a copy: pip builds in the tree it is given (build/, *.egg-info)
cp -R "$SRC/python" "$T/python"
rm -rf "$T/python/build" "$T/python"/*.egg-info
expect_status 0 "$PY" -m venv --system-site-packages "$T/venv"
cd "$T" || fail "cd $T"
EXPECT_TIMEOUT_S=300 expect_status 0 "$T/venv/bin/pip" install --no-index --no-build-isolation ./python
contains "$T/out" "Successfully installed pfi-steplog"
cd / || fail "cd /"
expect_status 0 env PFI_STEPLOG="$T/s.jsonl" "$T/venv/bin/python" -c '
import pfi_steplog, sys
print(pfi_steplog.__file__)
print(pfi_steplog.__version__)
with pfi_steplog.StepLogger() as sl:
    sys.exit(0 if sl.log(7, tokens=4096, step_time_s=0.5) else 1)
'
case $(head -n 1 "$T/out") in "$T/venv/"*/site-packages/pfi_steplog/__init__.py) ok;; *) fail "imported from $(head -n 1 "$T/out")";; esac
v=$("$PFI" --version | awk '{print $2}')
[ "$(sed -n 2p "$T/out")" = "$v" ] || fail "package version $(sed -n 2p "$T/out") is not pfi's $v"; ok
grep -q '^{"t_s": [0-9.]*, "step": 7, "tokens": 4096, "step_time_s": 0.5}$' "$T/s.jsonl" || { cat "$T/s.jsonl" >&2; fail "step log line"; }; ok
done_ok
