#!/usr/bin/python3
"""check-test-programs.py — every program the test suite runs is installed by
scripts/bootstrap.sh (issue 39).

A hand-kept list of "programs the suite calls" missed sqlite3, so `make test`
failed on a fresh Debian 12 machine while passing on every developer's. This
script derives the list from the scripts themselves:

  1. It parses each shell script that `make test` runs (tests/cli/*.sh,
     scripts/*.sh, .ci/run) with shfmt's syntax tree (`shfmt --to-json`, a
     real POSIX/bash parser, not a regular expression) and takes the first
     word of every simple command, also behind the wrappers the tests use
     (timeout, env, setpriv, nice, exec, xargs, ...) and inside literal
     `sh -c '...'` strings. Words that are not literal ("$PFI", "$TOOLS/x")
     are the project's own binaries and are not looked at; nor are shell
     builtins and the functions the scripts define.
  2. For each program it finds the Debian package that owns it (`dpkg -S` on
     the path `command -v` gives, and on its resolved link), then checks that
     the package is one a fresh machine has after the bootstrap: the
     bootstrap's three lists, what a minimal root has (Essential: yes, apt,
     and the ca-certificates, make and git a newcomer who cloned has; the
     root tests/cli/test_fresh_root.sh and ../shared/tools/fresh-root build),
     and everything those depend on (Depends and Pre-Depends, recursively,
     read from dpkg's database: no network, no apt lists).

A program that is not on this machine at all, that no Debian package owns, or
whose package is outside that set makes the check fail with the program's
name, the script and line that calls it, and the package to add. The only
programs allowed without a package are node and npm, which the bootstrap
itself accepts from any Node.js build (its comment says why).

Limits: programs run from C tests (system(): rm, mkdir, ls, wc, test) and
from Python (sys.executable) are coreutils and python3, and are not parsed;
a command word built at run time (eval, a variable) is not seen. Alternatives
in a dependency (a | b) follow the first one installed here, as apt follows
the first one it can.

  check-test-programs.py SRC            check; exit 1 with one line per problem
  check-test-programs.py --list SRC     print the programs, one per line (the
                                        fresh-root test checks each there)
  --scripts F... / --bootstrap FILE     other scripts, another bootstrap list
                                        (the check's own test,
                                        tests/cli/test_check_test_programs.sh)
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

# dash's and bash's builtins and keywords: never a program to install
BUILTINS = set("""
. : [ alias bg break cd command continue echo eval exec exit export false fc fg getopts hash
jobs kill local printf pwd read readonly return set shift test times trap true type ulimit
umask unalias unset wait source declare typeset let builtin
""".split())

# wrapper WORD -> options that take a value; the wrapped command is the
# first word after the wrapper's options (and after a literal count for
# timeout/nice, a directory for chroot, VAR=value words for env)
WRAPPERS = {
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "env": {"-u", "--unset", "-C", "--chdir", "-S"},
    "nice": {"-n", "--adjustment"},
    "nohup": set(),
    "exec": set(),
    "setpriv": {"--reuid", "--regid", "--ruid", "--rgid", "--euid", "--egid", "--groups", "--inh-caps",
                "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label",
                "--apparmor-profile"},
    "unshare": {"--propagation", "--setgroups", "--map-user", "--map-group", "--root", "--wd", "-S",
                "--setuid", "-G", "--setgid", "-R", "-w"},
    "chroot": set(),
    "xargs": {"-I", "-n", "-P", "-L", "-d", "-a", "-E", "-s"},
    "stdbuf": {"-i", "-o", "-e"},
    "runuser": {"-u", "-g", "-G"},
    "ionice": {"-c", "-n", "-p"},
    "taskset": set(),
    "flock": {"-w", "-E"},
    "setsid": set(),
    "time": set(),
}
# wrappers whose first positional argument is not the command
FIRST_POSITIONAL_SKIPPED = {"timeout": 1, "chroot": 1, "taskset": 1, "flock": 1}
SHELLS = {"sh", "bash", "dash"}
# tests/cli/lib.sh's functions that run a command: how many of their own
# arguments come before it
LIB_RUNNERS = {"expect_status": 1, "expect_error": 2, "start_daemon": 3}
# ... and those that evaluate a shell string: its argument's index
LIB_EVALS = {"wait_for": 3, "eval": 1}

# the packages a fresh minimal root has besides Essential: yes ones
# (mmdebstrap --variant=apt --include=ca-certificates,make,git)
ROOT_EXTRA = {"apt", "ca-certificates", "make", "git"}
# programs the bootstrap accepts from any install (scripts/bootstrap.sh)
NO_PACKAGE_OK = {"node", "npm"}


def word_literal(word):
    """The word's text if it is made only of literal parts, else None."""
    out = []
    for part in word.get("Parts", []):
        t = part.get("Type")
        if t == "Lit":
            out.append(part.get("Value", ""))
        elif t == "SglQuoted":
            out.append(part.get("Value", ""))
        elif t == "DblQuoted":
            inner = word_literal(part)
            if inner is None:
                return None
            out.append(inner)
        else:
            return None
    return "".join(out)


def param_name(word):
    """NAME where the word is exactly $NAME, ${NAME} or "$NAME", else None."""
    parts = word.get("Parts", [])
    if len(parts) == 1 and parts[0].get("Type") == "DblQuoted":
        parts = parts[0].get("Parts", [])
    if len(parts) == 1 and parts[0].get("Type") == "ParamExp" and len(parts[0]) and "Param" in parts[0]:
        pe = parts[0]
        if not any(k in pe for k in ("Exp", "Repl", "Index", "Slice", "Length", "Excl")):
            return pe["Param"].get("Value")
    return None


def unwrap(words):
    """Index of the real command in a call's literal words (None: not literal)."""
    i = 0
    while i < len(words):
        w = words[i]
        if w is None:
            return None
        base = os.path.basename(w)
        if base == "command":
            # command -v/-V only looks a program up; command X runs X
            if i + 1 < len(words) and words[i + 1] in ("-v", "-V"):
                return None
            i += 1
            continue
        if base not in WRAPPERS:
            return i
        takes = WRAPPERS[base]
        skip = FIRST_POSITIONAL_SKIPPED.get(base, 0)
        i += 1
        while i < len(words):
            a = words[i]
            if a is None:
                return None
            if a == "--":
                i += 1
                break
            if a.startswith("-") and len(a) > 1:
                i += 2 if a in takes else 1
                continue
            if base == "env" and "=" in a:
                i += 1
                continue
            if skip:
                skip -= 1
                i += 1
                continue
            break
    return None


def looked_up(stmts, loops=None):
    """Programs that a condition looks up with `command -v X` (X literal, or
    the variable of an enclosing `for X in literal words`)."""
    found = set()
    loops = loops or {}

    def visit(n):
        if isinstance(n, list):
            for x in n:
                visit(x)
        elif isinstance(n, dict):
            if n.get("Type") == "CallExpr" and n.get("Args"):
                w = [word_literal(a) for a in n["Args"]]
                if len(w) >= 3 and w[0] == "command" and w[1] == "-v":
                    if w[2]:
                        found.add(w[2])
                    elif param_name(n["Args"][2]) in loops:
                        found.update(loops[param_name(n["Args"][2])])
            for k, v in n.items():
                if k not in ("Pos", "End"):
                    visit(v)

    visit(stmts)
    return frozenset(found)


def collect_calls(node, out):
    if isinstance(node, list):
        for n in node:
            collect_calls(n, out)
    elif isinstance(node, dict):
        if node.get("Type") == "CallExpr" and node.get("Args"):
            out.append(node)
        for k, v in node.items():
            if k not in ("Pos", "End"):
                collect_calls(v, out)


class Collector:
    def __init__(self):
        self.calls = []  # (program, script, line)
        self.functions = set()
        self.runners = dict(LIB_RUNNERS)  # function -> arguments before its command
        self.loops = {}  # for-loop variable -> its literal words

    def learn_functions(self, node):
        """Functions, and those that run their arguments ("$@" after shift N)."""
        if isinstance(node, list):
            for n in node:
                self.learn_functions(n)
            return
        if not isinstance(node, dict):
            return
        if node.get("Type") == "FuncDecl":
            name = node["Name"]["Value"]
            self.functions.add(name)
            calls = []
            collect_calls(node["Body"], calls)
            runs = False
            shift = 0
            for c in calls:
                w = [word_literal(a) for a in c["Args"]]
                if w[0] == "shift":
                    shift = int(w[1]) if len(w) > 1 and w[1] and w[1].isdigit() else 1
                    continue
                i = unwrap([x if x is not None else "" for x in w])
                if i is not None and i < len(c["Args"]) and param_name(c["Args"][i]) == "@":
                    runs = True
            if runs and name not in self.runners:
                self.runners[name] = shift
        for k, v in node.items():
            if k not in ("Pos", "End") and isinstance(v, (dict, list)):
                self.learn_functions(v)

    def walk(self, node, script, guarded=frozenset()):
        if isinstance(node, list):
            for n in node:
                self.walk(n, script, guarded)
            return
        if not isinstance(node, dict):
            return
        t = node.get("Type")
        if t == "FuncDecl":
            self.functions.add(node["Name"]["Value"])
        if t == "CallExpr" and node.get("Args"):
            self.call(node, script, guarded)
        if t == "BinaryCmd" and node.get("Op") == 10:
            # command -v X && X ...: X is optional there
            self.walk(node["X"], script, guarded)
            self.walk(node["Y"], script, guarded | looked_up(node["X"]))
            return
        if t == "BinaryCmd" and node.get("Op") == 11:
            # command -v X || fail ...: X is required
            line = node["Pos"]["Line"]
            self.calls.extend((p, script, line) for p in looked_up(node["X"], self.loops))
        if t == "ForClause" and node.get("Loop", {}).get("Type") == "WordIter":
            items = [word_literal(w) for w in node["Loop"].get("Items", [])]
            if items and None not in items:
                self.loops[node["Loop"]["Name"]["Value"]] = items
        if t == "IfClause" and "Cond" in node:
            # if command -v X ...; then X ...: X is optional there
            self.walk(node["Cond"], script, guarded)
            self.walk(node.get("Then", []), script, guarded | looked_up(node["Cond"]))
            self.walk(node.get("Else", []), script, guarded)
            return
        for k, v in node.items():
            if k not in ("Pos", "End") and isinstance(v, (dict, list)):
                self.walk(v, script, guarded)

    def call(self, node, script, guarded):
        words = [word_literal(a) for a in node["Args"]]
        line = node["Pos"]["Line"]
        if words[0] in LIB_EVALS:
            k = LIB_EVALS[words[0]]
            if k < len(words) and words[k]:
                tree = parse(words[k], f"{script}:{line} ({words[0]})")
                if tree is not None:
                    self.walk(tree, script, guarded)
            return
        if words[0] in self.runners:
            words = words[self.runners[words[0]] + 1:]
            if not words:
                return
        i = unwrap(words)
        # the wrappers before the command are programs too (timeout, setpriv, env, ...)
        for w in words[: len(words) if i is None else i]:
            if w is None:
                break
            if os.path.basename(w) in WRAPPERS and w not in BUILTINS and w not in guarded:
                self.calls.append((w, script, line))
        if i is None or words[i] in guarded:
            return
        prog = words[i]
        self.calls.append((prog, script, line))
        # sh -c 'literal': its commands too
        if os.path.basename(prog) in SHELLS and i + 2 < len(words) and words[i + 1] == "-c" and words[i + 2]:
            tree = parse(words[i + 2], f"{script}:{line} (sh -c)")
            if tree is not None:
                self.walk(tree, script, guarded)

    def programs(self):
        """{program: (script, line)} of the first call of each external program."""
        out = {}
        for prog, script, line in self.calls:
            if prog in BUILTINS or prog in self.functions or prog in out:
                continue
            if "=" in prog or prog.startswith(("{", "(", "!")):
                continue
            if "/" in prog and not prog.startswith("/"):
                continue  # ./build/pfi, the project's own
            out[prog] = (script, line)
        return out


def parse(text, name):
    r = subprocess.run(["shfmt", "--to-json"], input=text.encode(), capture_output=True)
    if r.returncode != 0:
        sys.stderr.write(f"check-test-programs: {name}: shfmt cannot parse it: {r.stderr.decode().strip()}\n")
        return None
    return json.loads(r.stdout)


def bootstrap_packages(path):
    """The bootstrap's RUN_PKGS, DEB_PKGS and TEST_PKGS, read from the script."""
    text = open(path).read()
    pkgs = set()
    for var in ("RUN_PKGS", "DEB_PKGS", "TEST_PKGS"):
        m = re.search(r'^%s="([^"]*)"' % var, text, re.M)
        if not m:
            raise SystemExit(f"check-test-programs: scripts/bootstrap.sh: no {var}=\"...\" list")
        pkgs.update(m.group(1).split())
    return pkgs


def installed_db():
    """dpkg's installed packages: name -> (essential, [[alternatives]]), and provides."""
    fmt = "${Package}\\t${Status}\\t${Essential}\\t${Pre-Depends}, ${Depends}\\t${Provides}\\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True).stdout
    pkgs, provides = {}, {}
    for row in out.splitlines():
        name, status, essential, deps, prov = (row.split("\t") + [""] * 5)[:5]
        if not status.endswith("installed") or "not-installed" in status or "config-files" in status:
            continue
        alts = []
        for dep in deps.split(","):
            names = [re.sub(r"[\s(:].*", "", a.strip()) for a in dep.split("|")]
            names = [n for n in names if n]
            if names:
                alts.append(names)
        pkgs[name] = (essential == "yes", alts)
        for p in prov.split(","):
            p = re.sub(r"[\s(:].*", "", p.strip())
            if p:
                provides.setdefault(p, []).append(name)
    return pkgs, provides


def closure(roots, pkgs, provides):
    """roots and what they depend on, as installed here."""
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in pkgs:
            for real in provides.get(name, [])[:1]:
                todo.append(real)
            continue
        for alts in pkgs[name][1]:
            pick = next((a for a in alts if a in pkgs or a in provides), None)
            if pick:
                todo.append(pick)
    return seen


def twins(path):
    """PATH and its /usr-merged twin (dpkg may list either)."""
    return [path, path[4:]] if path.startswith("/usr/") else [path, "/usr" + path]


def owners(paths):
    """{path: package} for the paths (and /usr-merged twins) dpkg knows, in one query."""
    queries = sorted({q for p in paths for q in twins(p)})
    if not queries:
        return {}
    r = subprocess.run(["dpkg-query", "-S"] + queries, capture_output=True, text=True)
    found = {}
    for line in r.stdout.splitlines():
        pkg, _, f = line.partition(": ")
        if f.strip() in queries and not pkg.startswith("diversion"):
            found[f.strip()] = pkg.split(",")[0].split(":")[0].strip()
    return {p: next((found[q] for q in twins(p) if q in found), None) for p in paths}


def find(prog):
    # a fresh Debian root's programs: the packages' directories, not
    # /usr/local (where a developer's own python3 or node may come first)
    path = "/usr/sbin:/usr/bin:/sbin:/bin"
    if prog.startswith("/"):
        return prog if os.access(prog, os.X_OK) else None
    return shutil.which(prog, path=path)


def scripts_of(src):
    files = sorted(glob.glob(os.path.join(src, "tests/cli/*.sh")) + glob.glob(os.path.join(src, "scripts/*.sh")))
    ci = os.path.join(src, ".ci/run")
    if os.path.exists(ci):
        files.append(ci)
    return files


def collect(files, src):
    c = Collector()
    trees = []
    for f in files:
        tree = parse(open(f).read(), f)
        if tree is None:
            raise SystemExit(1)
        trees.append((tree, os.path.relpath(f, src)))
        c.learn_functions(tree)
    for tree, name in trees:
        c.walk(tree, name)
    return c.programs()


def main(argv):
    ap = argparse.ArgumentParser(prog="check-test-programs.py",
                                 description="every program the test scripts run is installed by scripts/bootstrap.sh")
    ap.add_argument("src", help="the source tree")
    ap.add_argument("--list", action="store_true", help="print the programs, one a line, and check nothing")
    ap.add_argument("--scripts", nargs="+", metavar="FILE", help="these scripts instead of the suite's (after SRC)")
    ap.add_argument("--bootstrap", metavar="FILE", help="this bootstrap script instead of SRC/scripts/bootstrap.sh")
    args = ap.parse_args(argv)
    src = args.src
    listing = args.list
    files = args.scripts
    if not shutil.which("shfmt"):
        sys.stderr.write("check-test-programs: shfmt is not installed (scripts/bootstrap.sh test installs it)\n")
        return 1
    progs = collect(files if files is not None else scripts_of(src), src)
    if listing:
        for p in sorted(progs):
            print(p)
        return 0
    pkgs, provides = installed_db()
    roots = bootstrap_packages(args.bootstrap or os.path.join(src, "scripts/bootstrap.sh")) | ROOT_EXTRA | {n for n, (ess, _) in pkgs.items() if ess}
    allowed = closure(roots, pkgs, provides)
    paths = {prog: find(prog) for prog in progs}
    real = [p for v in paths.values() if v for p in (v, os.path.realpath(v))]
    owned = owners(real)
    problems = []
    for prog in sorted(progs):
        script, line = progs[prog]
        where = f"{script}:{line}"
        if os.path.basename(prog) in NO_PACKAGE_OK and shutil.which(prog):
            continue
        path = paths[prog]
        if path is None:
            problems.append(f"{where}: calls '{prog}', which is not installed here after scripts/bootstrap.sh test (add its Debian package to TEST_PKGS)")
            continue
        pkg = owned.get(os.path.realpath(path)) or owned.get(path)
        if pkg is None:
            problems.append(f"{where}: calls '{prog}' ({path}), which no Debian package owns: scripts/bootstrap.sh cannot install it")
        elif pkg not in allowed:
            problems.append(f"{where}: calls '{prog}' from package {pkg}, which scripts/bootstrap.sh does not install (add {pkg} to TEST_PKGS)")
    for p in problems:
        print(f"check-test-programs: {p}", file=sys.stderr)
    if not problems:
        print(f"check-test-programs: ok: {len(progs)} programs, each from a package the bootstrap installs")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
