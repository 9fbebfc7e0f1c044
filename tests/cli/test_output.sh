#!/bin/sh
# test_output.sh — where `-o FILE` (and --ratios FILE) may write: a symlink
# stays a link and its target gets the output; a FIFO and a character device
# are written through, never replaced; /dev/stdout into a pipe works and
# stays what it was; an existing file keeps its mode (and owner, as root); a
# directory is a one-line error. The real /dev is touched only inside a
# private mount namespace with a tmpfs over /dev.
. "$(dirname "$0")/lib.sh"

# wait_gone PID SECONDS: poll until PID has exited, at most SECONDS of wall time
wait_gone() {
  end=$(($(date +%s) + $2))
  while kill -0 "$1" 2>/dev/null; do
    [ "$(date +%s)" -lt "$end" ] || { kill "$1" 2>/dev/null; return 1; }
    sleep 0.05
  done
}
no_tmp() { ! ls -a "$@" | grep -q '\.tmp\.' || fail "temporary file left in $*"; ok; }

cat >"$T/s.csv" <<'CSV'
group,gpu_model,gpus,cap_w,tokens_per_s,power_w
a,H200,8,200,500,1600
a,H200,8,500,930,3800
a,H200,8,700,1000,5000
CSV
HDR="gpu_model,group"

# --- a symlink into another directory: the link stays, its target is rewritten
mkdir "$T/a" "$T/b"
echo old >"$T/b/real.csv"
ln -s ../b/real.csv "$T/a/link.csv"
expect_status 0 timeout 30 "$PFI" index --no-ci -o "$T/a/link.csv" "$T/s.csv"
[ -L "$T/a/link.csv" ] || fail "-o LINK replaced the symlink"; ok
contains "$T/b/real.csv" "$HDR"
no_tmp "$T/a" "$T/b"
# a dangling link: its target is created, as the shell's > would
ln -s made.csv "$T/dangling.csv"
expect_status 0 timeout 30 "$PFI" index --no-ci --ratios "$T/dangling.csv" -o "$T/o.csv" "$T/s.csv"
[ -L "$T/dangling.csv" ] && [ -f "$T/made.csv" ] || fail "dangling link"; ok
contains "$T/made.csv" "gpu_model,group,cap_w"

# --- fs.protected_symlinks kept: another user's link in a sticky
# world-writable directory (/tmp-like) is not followed (as root here)
if [ "$(id -u)" -eq 0 ]; then
  mkdir "$T/sticky"; chmod 1777 "$T/sticky"
  echo "root's own" >"$T/victim"
  ln -s "$T/victim" "$T/sticky/out.csv"; chown -h 65534:65534 "$T/sticky/out.csv"
  expect_error 1 "not followed (fs.protected_symlinks)" timeout 30 "$PFI" index --no-ci -o "$T/sticky/out.csv" "$T/s.csv"
  contains "$T/victim" "root's own"
  # root's own link there is followed as before
  ln -s "$T/b/real.csv" "$T/sticky/mine.csv"
  expect_status 0 timeout 30 "$PFI" index --no-ci -o "$T/sticky/mine.csv" "$T/s.csv"
  contains "$T/b/real.csv" "$HDR"
else
  echo "skip: protected symlinks (needs root to own a link as another user)"
fi

# --- mode (and owner, as root) of an existing file are kept; a new file follows the umask
echo old >"$T/m.csv"; chmod 600 "$T/m.csv"
[ "$(id -u)" -eq 0 ] && chown 4321:4321 "$T/m.csv"
expect_status 0 timeout 30 "$PFI" index --no-ci -o "$T/m.csv" "$T/s.csv"
[ "$(stat -c %a "$T/m.csv")" = 600 ] || fail "mode became $(stat -c %a "$T/m.csv")"; ok
if [ "$(id -u)" -eq 0 ]; then
  [ "$(stat -c %u:%g "$T/m.csv")" = 4321:4321 ] || fail "owner became $(stat -c %u:%g "$T/m.csv")"; ok
fi
contains "$T/m.csv" "$HDR"
(umask 027; exec timeout 30 "$PFI" index --no-ci -o "$T/new.csv" "$T/s.csv") || fail "new file"
[ "$(stat -c %a "$T/new.csv")" = 640 ] || fail "new file mode $(stat -c %a "$T/new.csv") under umask 027"; ok

# --- a FIFO is written through (a background reader, bounded by a deadline)
mkfifo "$T/fifo"
cat "$T/fifo" >"$T/fifo.out" &
reader=$!
expect_status 0 timeout 30 "$PFI" index --no-ci -o "$T/fifo" "$T/s.csv"
wait_gone $reader 10 || fail "the FIFO's reader got no end of file"; ok
[ -p "$T/fifo" ] || fail "the FIFO was replaced"; ok
contains "$T/fifo.out" "$HDR"
no_tmp "$T"

# --- a pipe through /dev/fd/N; a symlink of ours to /proc/self/fd/1
timeout 30 "$PFI" index --no-ci -o /dev/fd/3 "$T/s.csv" 3>&1 >/dev/null | cat >"$T/p1.out"
contains "$T/p1.out" "$HDR"
ln -s /proc/self/fd/1 "$T/stdout"
timeout 30 "$PFI" index --no-ci -o "$T/stdout" "$T/s.csv" | cat >"$T/p2.out"
[ -L "$T/stdout" ] || fail "a link to /proc/self/fd/1 was replaced"; ok
contains "$T/p2.out" "$HDR"

# --- a character device (root: our own /dev/null stand-in) is written, not replaced
if [ "$(id -u)" -eq 0 ] && mknod "$T/null" c 1 3 2>/dev/null; then
  expect_status 0 timeout 30 "$PFI" index --no-ci -o "$T/null" "$T/s.csv"
  [ -c "$T/null" ] || fail "the character device was replaced"; ok
  no_tmp "$T"
else
  echo "skip: character device (needs root and mknod)"
fi

# --- the real names, /dev/stdout into a pipe and /dev/null, in a private /dev
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
  T="$T" unshare -m sh -c '
    mount -t tmpfs pfi-test-dev /dev || exit 3
    mknod /dev/null c 1 3 && chmod 666 /dev/null
    ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd /dev/fd
    timeout 30 "$PFI" index --no-ci --ratios /dev/stdout -o /dev/null "$T/s.csv" | cat >"$T/ns.out" || exit 4
    [ -L /dev/stdout ] || exit 5
    [ -c /dev/null ] || exit 6
    ls -a /dev | grep -q "\.tmp\." && exit 7
    exit 0'
  rc=$?
  [ $rc -eq 0 ] || fail "in a private /dev: check $rc failed (4: pfi failed, 5: /dev/stdout, 6: /dev/null replaced, 7: temp file)"; ok
  contains "$T/ns.out" "gpu_model,group,cap_w"
else
  echo "skip: /dev/stdout and /dev/null (needs root and unshare -m)"
fi

# --- a directory is a one-line error, and nothing is left in it
expect_error 1 "$T/a: is a directory" timeout 30 "$PFI" index --no-ci -o "$T/a" "$T/s.csv"
expect_error 1 "$T/b: is a directory" timeout 30 "$PFI" index --no-ci --ratios "$T/b" "$T/s.csv"
no_tmp "$T/a" "$T/b"
done_ok
