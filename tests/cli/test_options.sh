#!/bin/sh
# test_options.sh — what the option tables generate, end to end: "did you
# mean" for a misspelt command or option (exit 2, one line); every long
# option of every subcommand (read from the tables in the sources) is one the
# parser knows and is named by `pfi CMD --help`, the man page and the bash
# completion; the bash completion completes commands, options and their
# values; the zsh completion is valid zsh; both are installed.
. "$(dirname "$0")/lib.sh"
: "${BUILD:?}"

# --- did you mean: commands
expect_error 2 "pfi: unknown command 'indx'; did you mean 'index'?" "$PFI" indx
expect_error 2 "pfi: unknown command 'simluate'; did you mean 'simulate'?" "$PFI" simluate
expect_error 2 "pfi: unknown command 'indx'; did you mean 'index'?" "$PFI" help indx
expect_error 2 "pfi: unknown command 'frobnicate' (see 'pfi help')" "$PFI" frobnicate
lacks "$T/err" "did you mean"
# --- did you mean: options (an abbreviation getopt_long would take is refused too)
expect_error 2 "pfi index: unknown option '--cap'; did you mean '--caps'?" "$PFI" index --cap 3 "$SRC/data/zeus/summary_power_a40.csv"
[ ! -s "$T/out" ] || fail "index ran despite the unknown option"; ok
expect_error 2 "pfi allocate: unknown option '--stratgy'; did you mean '--strategy'?" "$PFI" allocate --stratgy=oracle x.csv
expect_error 2 "pfi index: unknown option '--frobnicate' (see 'pfi help index')" "$PFI" index --frobnicate x.csv
lacks "$T/err" "did you mean"
expect_error 2 "pfi index: option '--ratios' needs an argument (see 'pfi help index')" "$PFI" index x.csv --ratios
expect_error 2 "pfi index: option '--no-ci' takes no argument" "$PFI" index --no-ci=1 x.csv
expect_error 2 "pfi-agent: unknown option '--intervall'; did you mean '--interval'?" "$PFI_AGENT" --intervall 1
expect_error 2 "pfi-controller: unknown option '--dryrun'; did you mean '--dry-run'?" "$PFI_CONTROLLER_BIN" --dryrun
expect_error 2 "pfi help: --completion: 'fish' is not bash or zsh" "$PFI" help --completion fish

# --- every long option of every subcommand, from the tables in the sources
"$PFI" help --man >"$T/pfi.1" || fail "pfi help --man"; ok
"$PFI" help --completion bash >"$T/pfi.bash" || fail "pfi help --completion bash"; ok
# CMD(name, ...) and CMDN(identifier, "name", ...): the source is cmd_IDENTIFIER.c
cmds=$(sed -n 's/^CMD(\([a-z]*\),.*/\1/p; s/^CMDN([a-z_]*, "\([a-z-]*\)",.*/\1/p' "$SRC/src/cli/commands.def")
[ "$(echo "$cmds" | wc -w)" -ge 14 ] || fail "commands.def lists only: $cmds"; ok
echo "$cmds" | grep -qx "slurm-map" || fail "commands.def's CMDN lines were not read: $cmds"
for c in $cmds; do
  src="$SRC/src/cli/cmd_$(echo "$c" | tr - _).c"
  opts=$(grep -oE 'OPT_[A-Z_]+\((0|'"'"'.'"'"'), "[a-z0-9-]+"' "$src" | sed 's/.*"\(.*\)"$/\1/')
  grep -q 'OPT_INCLUDE(cli_out_options' "$src" && opts="$opts format json output"
  grep -q 'OPT_HELP()' "$src" && opts="$opts help"
  [ "$(echo "$opts" | wc -w)" -ge 2 ] || fail "no option table found in $src"; ok
  "$PFI" "$c" --help >"$T/help.txt" 2>"$T/err" || { cat "$T/err" >&2; fail "pfi $c --help"; }
  contains "$T/help.txt" "usage: pfi $c"
  "$PFI" help "$c" >"$T/help2.txt" || fail "pfi help $c"
  cmp -s "$T/help.txt" "$T/help2.txt" || fail "pfi help $c differs from pfi $c --help"; ok
  # this command's part of the bash completion: from "    CMD)" to its ";;"
  awk -v c="$c" '$0 == "    " c ")" {on = 1} on {print} on && /^        [^ ].*;;$|^        ;;$/ {exit}' "$T/pfi.bash" >"$T/bash.$c"
  [ -s "$T/bash.$c" ] || fail "the bash completion has no case for $c"; ok
  for o in $opts; do
    grep -qE -- "--$o( |$|,)" "$T/help.txt" || fail "pfi $c --help does not name --$o"; ok
    grep -qF -- "\\-\\-$(echo "$o" | sed 's/-/\\-/g')" "$T/pfi.1" || fail "the man page does not name --$o ($c)"; ok
    grep -qE -- "--$o( |\||\"|\))" "$T/bash.$c" || fail "the bash completion of $c lacks --$o"; ok
    # the parser knows it: an error about its value or the help, never "unknown option"
    "$PFI" "$c" "--$o=1" --help >/dev/null 2>"$T/err"
    rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || { cat "$T/err" >&2; fail "pfi $c --$o=1 --help: exit $rc"; }
    lacks "$T/err" "unknown option"
  done
done
# the man page is the one the build generated and installs
cmp -s "$T/pfi.1" "$BUILD/man/pfi.1" || fail "build/man/pfi.1 is not pfi help --man"; ok

# --- the bash completion: loads in bash, completes commands, options, values
command -v bash >/dev/null || fail "bash is needed"
cat >"$T/complete.bash" <<'EOF'
. "$1" || exit 3
c() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _pfi; echo "${COMPREPLY[*]}"; }
c pfi ind
c pfi index --ca
c pfi index --format ""
c pfi ingest --agg me
c pfi help --completion z
c pfi simulate --pool-w
c pfi event c
EOF
bash "$T/complete.bash" "$T/pfi.bash" >"$T/completed" 2>"$T/err" || { cat "$T/err" >&2; fail "bash could not load the completion"; }
[ ! -s "$T/err" ] || { cat "$T/err" >&2; fail "the bash completion wrote to stderr"; }
cat >"$T/want" <<'EOF'
index
--caps
csv json table
mean median
zsh
--pool-where
create cancel
EOF
cmp -s "$T/completed" "$T/want" || { diff "$T/want" "$T/completed" >&2; fail "bash completion"; }; ok

# --- the zsh completion is valid zsh (where zsh is installed)
"$PFI" help --completion zsh >"$T/_pfi" || fail "pfi help --completion zsh"; ok
contains "$T/_pfi" "#compdef pfi"
if command -v zsh >/dev/null; then
  zsh -n "$T/_pfi" || fail "zsh -n rejects the zsh completion"; ok
else
  echo "zsh not installed: zsh -n of the zsh completion skipped"
fi

# --- both are built and installed where bash-completion and zsh look
cmp -s "$T/pfi.bash" "$BUILD/completions/pfi" || fail "build/completions/pfi is not pfi help --completion bash"; ok
cmp -s "$T/_pfi" "$BUILD/completions/_pfi" || fail "build/completions/_pfi is not pfi help --completion zsh"; ok
cmake --install "$BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1 || { cat "$T/install.log" >&2; fail "install failed"; }
cmp -s "$T/prefix/share/bash-completion/completions/pfi" "$T/pfi.bash" || fail "bash completion not installed"; ok
cmp -s "$T/prefix/share/zsh/vendor-completions/_pfi" "$T/_pfi" || fail "zsh completion not installed"; ok
done_ok
