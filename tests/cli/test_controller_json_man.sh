#!/bin/sh
# test_controller_json_man.sh — pfi-controller.json(5) documents every key
# of the controller's configuration: the keys are read from the key tables
# in src/daemon/controller/ctl_config.c (each "const pfi_jkey keys[]" of
# read_keys, agent_entry, operator_entry, openadr_field and failover_field), and each must
# be a ".B KEY" entry in the man page's section of that object (KEYS,
# AGENTS, OPERATORS, OPENADR, FAILOVER).
# Also: the page renders with groff without warnings, and the keys the page
# documents exist (no stale entries).
. "$SRC/tests/cli/lib.sh"
C="$SRC/src/daemon/controller/ctl_config.c"
M="$SRC/man/pfi-controller.json.5"
# FUNCTION -> the keys of the table inside it, one per line
table_keys() {
  awk -v fn="$1" '
    $0 ~ "^static pfi_status " fn "\\(" { inf = 1 }
    inf && /const pfi_jkey keys\[\] = \{/ { intab = 1; next }
    intab && /^ *\};/ { exit }
    intab { while (match($0, /(CFG_STR|CFG_NUM)\("[a-z_0-9]+"|\{"[a-z_0-9]+", PFI_J_/)) {
              k = substr($0, RSTART, RLENGTH); sub(/^[^"]*"/, "", k); sub(/".*/, "", k); print k
              $0 = substr($0, RSTART + RLENGTH) } }' "$C"
}
# SECTION -> the ".B KEY" entries of that .SH section of the man page
man_keys() {
  awk -v sec="$1" '/^\.SH / { in_s = ($2 == sec); next } in_s && prev == ".TP" && /^\.B [a-z_0-9]+$/ { print $2 } { prev = $0 }' "$M"
}
for pair in read_keys:KEYS:8 agent_entry:AGENTS:8 operator_entry:OPERATORS:3 openadr_field:OPENADR:8 failover_field:FAILOVER:8; do
  fn=${pair%%:*}; sec=${pair#*:}; least=${sec#*:}; sec=${sec%%:*}
  table_keys "$fn" | sort >"$T/src.$sec"
  man_keys "$sec" | sort >"$T/man.$sec"
  n=$(wc -l <"$T/src.$sec")
  [ "$n" -ge "$least" ] || fail "only $n keys found in $fn's table in ctl_config.c (is the extraction broken?)"; ok
  missing=$(comm -23 "$T/src.$sec" "$T/man.$sec" | tr '\n' ' ')
  [ -z "$missing" ] || fail "pfi-controller.json(5), section $sec, does not document: $missing"; ok
  stale=$(comm -13 "$T/src.$sec" "$T/man.$sec" | tr '\n' ' ')
  [ -z "$stale" ] || fail "pfi-controller.json(5), section $sec, documents keys $fn does not read: $stale"; ok
done
# the tables found are the ones the controller reads: a key known from docs
grep -qx agents "$T/src.KEYS" && grep -qx url "$T/src.AGENTS" && grep -qx vtn_url "$T/src.OPENADR" &&
  grep -qx scopes "$T/src.OPERATORS" ||
  fail "the key extraction missed agents / url / vtn_url / scopes"
ok
# the strategy entry names in bold exactly the strategies the strategy table
# marks for the controller (PFI_TRAIT_CONTROLLER in src/core/strategy.c, their
# names from src/core/strategy.h)
awk 'NR == FNR { if ($1 == "#define" && $2 ~ /^PFI_STRAT_NAME_/) { v = $3; gsub(/"/, "", v); name[substr($2, 16)] = v }; next }
     /^ *\[PFI_STRAT_[A-Z_]+\] = / { id = $0; sub(/^ *\[PFI_STRAT_/, "", id); sub(/\].*/, "", id) }
     /PFI_TRAIT_CONTROLLER/ && id != "" { print name[id]; id = "" }' \
  "$SRC/src/core/strategy.h" "$SRC/src/core/strategy.c" | sort >"$T/src.strategies"
awk '/^\.B strategy$/ { on = 1; next } on && /^\.TP/ { exit }
     on { while (match($0, /\\fB[a-z-]+\\fR/)) { print substr($0, RSTART + 3, RLENGTH - 6); $0 = substr($0, RSTART + RLENGTH) } }' \
  "$M" | sort -u >"$T/man.strategies"
n=$(grep -c . "$T/src.strategies")
[ "$n" -ge 3 ] && grep -qx safe-online "$T/src.strategies" ||
  fail "only $n controller strategies found in src/core/strategy.c (is the extraction broken?)"
ok
cmp -s "$T/src.strategies" "$T/man.strategies" ||
  fail "pfi-controller.json(5)'s strategy entry names $(tr '\n' ' ' <"$T/man.strategies"), the table's controller strategies are $(tr '\n' ' ' <"$T/src.strategies")"
ok
# renders without warnings
command -v groff >/dev/null || fail "groff is missing"
groff -man -ww -z "$M" 2>"$T/groff.err"
[ ! -s "$T/groff.err" ] || { cat "$T/groff.err"; fail "groff warns about pfi-controller.json.5"; }
ok
done_ok
