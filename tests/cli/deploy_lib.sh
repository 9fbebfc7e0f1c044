# deploy_lib.sh — what the tests of docs/deploy.md share (sourced first,
# before lib.sh): the test re-run in a network and mount namespace of its
# own (unshare; as root without a user namespace), the page's marked
# blocks extracted, and ssh and scp between the hosts' directories under $T.
if [ -z "${PFI_DEPLOY_NETNS:-}" ]; then
  command -v unshare >/dev/null || { echo "FAIL: unshare is not installed (util-linux)" >&2; exit 1; }
  if [ "$(id -u)" -eq 0 ]; then
    PFI_DEPLOY_NETNS=1 exec unshare -m -n --propagation private sh "$0"
  else
    PFI_DEPLOY_NETNS=1 exec unshare -r -m -n --propagation private sh "$0"
  fi
fi

# doc_blocks MARK DOC DIR: each block of DOC after a line
# `<!-- MARK: run|file REST -->`, in order, as DIR/NN.run or DIR/NN.file,
# with REST in DIR/NN.mark; prints how many
doc_blocks() {
  mkdir -p "$3"
  python3 - "$2" "$3" "$1" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
n, i = 0, 0
while i < len(lines):
    m = re.match(r"^<!-- %s: (run|file) (.*) -->$" % re.escape(sys.argv[3]), lines[i])
    if m:
        j = i + 1
        assert lines[j].startswith("```"), "line %d: a mark not before a block" % (i + 1)
        k = j + 1
        while not lines[k].startswith("```"):
            k += 1
        n += 1
        open("%s/%02d.%s" % (sys.argv[2], n, m.group(1)), "w").write("\n".join(lines[j + 1:k]) + "\n")
        open("%s/%02d.mark" % (sys.argv[2], n), "w").write(m.group(2) + "\n")
        i = k
    i += 1
print(n)
PY
}
# a path of one host's directory in another's: $T/ANY/p -> $T/HOST/p
onto() { printf '%s\n' "$2" | sed "s#^$T/[a-z0-9]*/#$T/$1/#"; }
# ssh root@HOST.cluster CMD...: CMD on HOST (its paths in HOST's directory)
ssh() {
  sh_host=${1#root@}; sh_host=${sh_host%.cluster}; shift
  [ -d "$T/$sh_host" ] || fail "ssh: no host $sh_host"
  sh_cmd=$1; shift
  sh_args=
  for a in "$@"; do sh_args="$sh_args '$(onto "$sh_host" "$a")'"; done
  eval "$sh_cmd $sh_args"
}
# scp [-p] FILE... root@HOST.cluster:PATH: into HOST's directory
scp() {
  sc_p=
  [ "$1" = -p ] && { sc_p=-p; shift; }
  sc_files=
  while [ $# -gt 1 ]; do sc_files="$sc_files '$1'"; shift; done
  sc_host=${1%%:*}; sc_host=${sc_host#root@}; sc_host=${sc_host%.cluster}
  [ -d "$T/$sc_host" ] || fail "scp: no host $sc_host"
  sc_dest=$(onto "$sc_host" "${1#*:}")
  case $sc_dest in /*) ;; *) sc_dest=$T/$sc_host/root/$sc_dest ;; esac
  eval "cp $sc_p $sc_files '$sc_dest'"
}
