#!/bin/sh
# check-layers.sh BUILD SRC — the build graph is the architecture
# (docs/architecture.md). Fails, naming the file and the symbol or line, when:
#  1. a core object references a symbol defined in io, runtime or report;
#     an io object one defined in runtime or report; a runtime object one
#     defined in report, or a report object one defined in runtime (nm -u);
#  2. a source or header under src/ includes another file by a relative
#     path ("../"), or a layer includes a header that lives in a layer it
#     may not call (core: include/pfi + src/core; io: + src/io; runtime:
#     + src/runtime; report: + src/report);
#  3. libpfi.so exports a symbol that is not pfi_-prefixed, or one that no
#     public header declares PFI_API, or a public header declares PFI_API a
#     function the library does not export;
#  4. a public header (include/pfi) declares PFI_API functions of two
#     layers, core's and io's: each public header belongs to the one layer
#     that defines its functions, so that including it says which layer is
#     reached (a core source including a header of io's is then visible as
#     such, not hidden behind a core function declared beside io's).
set -eu
B=${1:?usage: check-layers.sh BUILD SRC}
S=${2:?usage: check-layers.sh BUILD SRC}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
bad=0
fail() { echo "check-layers: $*" >&2; bad=1; }

defined() { nm -g --defined-only "$1" 2>/dev/null | awk 'NF==3 && $2 ~ /[TDBRVW]/ {print $3}' | sort -u; }
for lib in core io runtime report; do
  f="$B/libpfi_$lib.a"
  if [ -f "$f" ]; then defined "$f" >"$T/def_$lib"; else : >"$T/def_$lib"; fi
done
# the layer of an archive may not reference what the named layers define
check_refs() { # layer forbidden...
  layer=$1; shift
  a="$B/libpfi_$layer.a"
  [ -f "$a" ] || return 0
  for other in "$@"; do
    nm -A -u "$a" 2>/dev/null | awk '{print $1, $NF}' | sed 's/^[^:]*:\([^:]*\):/\1/' | sort -u >"$T/undef"
    awk 'NR==FNR {d[$1]=1; next} ($2 in d) {print $1 ": references " $2}' "$T/def_$other" "$T/undef" >"$T/hits"
    while IFS= read -r line; do fail "$layer object $line, defined in $other"; done <"$T/hits"
  done
}
check_refs core io runtime report
check_refs io runtime report
check_refs runtime report
check_refs report runtime

# includes
allowed() { # layer -> directories its sources may include from
  case $1 in
    core) echo "include/pfi src/core" ;;
    io) echo "include/pfi src/core src/io" ;;
    runtime) echo "include/pfi src/core src/io src/runtime" ;;
    report) echo "include/pfi src/core src/io src/report" ;;
  esac
}
for layer in core io runtime report; do
  dirs=$(allowed $layer)
  for f in "$S"/src/$layer/*.[ch]; do
    [ -f "$f" ] || continue
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r l; do
      n=${l%%:*}
      h=$(printf '%s\n' "$l" | sed 's/.*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/')
      rel=${f#"$S"/}
      case $h in
        */../*|../*) echo "$rel:$n: includes $h by a relative path" ;;
        pfi/version.h) ;;
        *)
          found=""
          for d in $dirs; do
            case $d in include/pfi) p="$S/include/$h" ;; *) p="$S/$d/$h" ;; esac
            [ -f "$p" ] && found=$d
          done
          [ -n "$found" ] || echo "$rel:$n: includes $h, which is not in $dirs (a layer $layer may not include)"
          ;;
      esac
    done
  done
done >"$T/inc"
while IFS= read -r line; do fail "$line"; done <"$T/inc"
# relative includes anywhere else under src/
grep -rn '#[[:space:]]*include[[:space:]]*"\.\./' "$S/src" >"$T/rel" || true
while IFS= read -r line; do fail "relative include: ${line#"$S"/}"; done <"$T/rel"

# each public header's functions are defined in one layer (core or io)
for h in "$S"/include/pfi/*.h; do
  [ -s "$T/def_core" ] && [ -s "$T/def_io" ] || break
  tr '\n' ' ' <"$h" | sed 's/;/;\n/g' | grep 'PFI_API' |
    sed -n 's/.*[^A-Za-z0-9_]\(pfi_[A-Za-z0-9_]*\)[[:space:]]*[\[(;].*/\1/p' | sort -u >"$T/hdecl"
  c=$(comm -12 "$T/hdecl" "$T/def_core" | tr '\n' ' ')
  i=$(comm -12 "$T/hdecl" "$T/def_io" | tr '\n' ' ')
  if [ -n "$c" ] && [ -n "$i" ]; then
    fail "${h#"$S"/} declares functions of core (${c% }) and of io (${i% }): one public header per layer"
  fi
done

# exported symbols of the installed library
so="$B/libpfi.so"
if [ -f "$so" ]; then
  nm -D --defined-only "$so" | awk '{print $3}' | grep -v -E '^(__asan|__ubsan|__odr_asan|__sancov|___asan|_init$|_fini$|_edata$|_end$|__bss_start$)' | sort -u >"$T/exported"
  cat "$S"/include/pfi/*.h | tr '\n' ' ' | sed 's/;/;\n/g' | grep 'PFI_API' |
    sed -n 's/.*[^A-Za-z0-9_]\(pfi_[A-Za-z0-9_]*\)[[:space:]]*[\[(;].*/\1/p' | sort -u >"$T/declared"
  while IFS= read -r sym; do
    case $sym in pfi_*) ;; *) fail "libpfi.so exports $sym: not pfi_-prefixed" ;; esac
  done <"$T/exported"
  comm -23 "$T/exported" "$T/declared" >"$T/undeclared"
  while IFS= read -r sym; do fail "libpfi.so exports $sym, which no public header declares PFI_API"; done <"$T/undeclared"
  comm -13 "$T/exported" "$T/declared" >"$T/missing"
  while IFS= read -r sym; do fail "a public header declares $sym PFI_API, but libpfi.so does not export it"; done <"$T/missing"
  echo "check-layers: libpfi.so exports $(wc -l <"$T/exported") symbols, all pfi_ and declared in include/pfi/"
fi
[ $bad -eq 0 ] && echo "check-layers: ok (core -> io -> runtime/report, includes, exports, one layer per public header)"
exit $bad
