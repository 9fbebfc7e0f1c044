#!/usr/bin/python3
"""prom_query.py — the Prometheus HTTP API for the shell tests (standard
library only; run with Debian's /usr/bin/python3).

  prom_query.py URL query EXPR       instant query: one line per series,
                                     "{label="v",...} VALUE" (sorted); exit 1
                                     unless HTTP 200 and status "success"
  prom_query.py URL dashboard FILE   every PromQL expression ("expr") of a
                                     Grafana dashboard, its variables
                                     ($instance, ${hpc_job}) as ".*" and
                                     $__interval-like ones as 1m, queried:
                                     exit 1 naming each one Prometheus
                                     refuses; prints "N exprs, E empty"
                                     and each empty one's expression
  prom_query.py URL rules            exit 1 unless every loaded rule's
                                     health is "ok"; prints the count
  prom_query.py URL alerts           the active alerts (/api/v1/alerts), one
                                     line each: "NAME STATE {label="v",...}"
                                     (sorted; STATE pending or firing)
  free-port                          a free TCP port on 127.0.0.1 (bound to
                                     port 0 and closed; no URL)
"""
import json
import re
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request


def get(url, path, params=None):
    q = "?" + urllib.parse.urlencode(params) if params else ""
    try:
        with urllib.request.urlopen(url + path + q, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def series_line(s):
    labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(s["metric"].items()))
    return "{%s} %s" % (labels, s["value"][1])


def query(url, expr):
    code, body = get(url, "/api/v1/query", {"query": expr})
    if code != 200 or body.get("status") != "success":
        return None, "HTTP %d %s: %s" % (code, body.get("errorType", ""), body.get("error", ""))
    return body["data"], None


def exprs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                yield v
            else:
                yield from exprs(v)
    elif isinstance(node, list):
        for v in node:
            yield from exprs(v)


def substitute(e):
    e = re.sub(r"\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}", "1m", e)
    return re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", ".*", e)


def main(argv):
    if argv[1:] == ["free-port"]:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])
        s.close()
        return 0
    url, what = argv[1].rstrip("/"), argv[2]
    if what == "query":
        data, err = query(url, argv[3])
        if err:
            print(err, file=sys.stderr)
            return 1
        if data["resultType"] == "scalar":
            print(data["result"][1])
        else:
            for line in sorted(series_line(s) for s in data["result"]):
                print(line)
        return 0
    if what == "dashboard":
        dash = json.load(open(argv[3]))
        bad, empty, n = 0, [], 0
        for e in exprs(dash):
            n += 1
            data, err = query(url, substitute(e))
            if err:
                print("dashboard expr refused: %s: %s" % (e, err), file=sys.stderr)
                bad += 1
            elif not data["result"]:
                empty.append(e)
        print("%d exprs, %d empty" % (n, len(empty)))
        for e in empty:
            print("empty: " + e)
        return 1 if bad or n == 0 else 0
    if what == "rules":
        code, body = get(url, "/api/v1/rules")
        if code != 200 or body.get("status") != "success":
            print("rules: HTTP %d" % code, file=sys.stderr)
            return 1
        rules = [r for g in body["data"]["groups"] for r in g["rules"]]
        bad = [r for r in rules if r.get("health") != "ok"]
        for r in bad:
            print("rule %s: %s %s" % (r["name"], r.get("health"), r.get("lastError", "")), file=sys.stderr)
        print("%d rules" % len(rules))
        return 1 if bad else 0
    if what == "alerts":
        code, body = get(url, "/api/v1/alerts")
        if code != 200 or body.get("status") != "success":
            print("alerts: HTTP %d" % code, file=sys.stderr)
            return 1
        lines = []
        for a in body["data"]["alerts"]:
            labels = dict(a["labels"])
            name = labels.pop("alertname", "")
            lines.append("%s %s {%s}" % (name, a["state"],
                                         ",".join('%s="%s"' % kv for kv in sorted(labels.items()))))
        for line in sorted(lines):
            print(line)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
