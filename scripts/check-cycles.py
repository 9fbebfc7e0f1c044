#!/usr/bin/env python3
"""check-cycles.py BUILD SRC — no circles between the files of a daemon
folder (issue 43). For each folder of src/daemon and src/runtime, a graph
file -> file: an edge A -> B when A's object references a symbol B's object
defines (nm on the objects, as scripts/check-layers.sh reads the archives;
every agent file includes only agent.h, so an include graph cannot see a
circle). Fails, naming the files of each cycle and a symbol on each edge,
when the graph has one (a strongly connected component of two files or
more)."""
import os
import subprocess
import sys


def objects(build, src):
    """{folder: {source file: object path}} for src/daemon/* and src/runtime"""
    out = {}
    # the build's own objects (not a nested build's, e.g. BUILD/deb)
    for root, _, files in os.walk(os.path.join(build, "CMakeFiles")):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            p = os.path.join(root, f)
            i = p.find("/src/")
            if i < 0 or "/tests/" in p or "/bench/" in p:
                continue
            rel = p[i + 1:-2]  # src/daemon/agent/x.c
            folder = os.path.dirname(rel)
            if not (folder.startswith("src/daemon/") or folder == "src/runtime"):
                continue
            if not os.path.exists(os.path.join(src, rel)):
                continue
            out.setdefault(folder, {}).setdefault(rel, p)
    return out


def nm(path, flag):
    r = subprocess.run(["nm", flag, path], capture_output=True, text=True, check=False)
    syms = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if flag == "-u" and len(parts) == 2:
            syms.add(parts[1])
        elif flag == "--defined-only" and len(parts) == 3 and parts[1] in "TDBRVW":
            syms.add(parts[2])
    return syms


def sccs(nodes, edges):
    """Tarjan's strongly connected components"""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check-cycles.py BUILD SRC")
    build, src = sys.argv[1], sys.argv[2]
    bad = 0
    folders = objects(build, src)
    if not folders:
        sys.exit("check-cycles: no daemon objects under %s (build the daemons first)" % build)
    for folder, files in sorted(folders.items()):
        defs = {f: nm(o, "--defined-only") for f, o in files.items()}
        owner = {}
        for f, ds in defs.items():
            for d in ds:
                owner[d] = f
        edges, why = {}, {}
        for f, o in files.items():
            for u in nm(o, "-u"):
                g = owner.get(u)
                if g and g != f:
                    edges.setdefault(f, set()).add(g)
                    why.setdefault((f, g), u)
        for comp in sccs(sorted(files), edges):
            if len(comp) < 2:
                continue
            bad = 1
            cs = set(comp)
            detail = ["%s -> %s (%s)" % (os.path.basename(a), os.path.basename(b), why[(a, b)])
                      for a in sorted(comp) for b in sorted(edges.get(a, ())) if b in cs]
            print("check-cycles: %s: a circle of %d files: %s" % (folder, len(comp), "; ".join(detail)),
                  file=sys.stderr)
    if not bad:
        print("check-cycles: no circles in %s" % ", ".join(sorted(folders)))
    return bad


if __name__ == "__main__":
    sys.exit(main())
