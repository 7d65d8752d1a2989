#!/usr/bin/env python3
"""Checks that the PromQL in a Grafana dashboard (.json) or a Prometheus
rules file (.yml) names only metrics a daemon exports.

  check-promql.py SCRAPE [--prometheus URL] FILE...

SCRAPE is a scrape of a running daemon (the text exposition); every metric
an expression names must have a family there (a histogram's _bucket, _sum
and _count included), or be Prometheus's own `up`. With --prometheus, each
expression (Grafana variables replaced) must also be accepted by that
server's query API. Prints one line per problem and exits 1 on any.
"""
import json
import re
import sys
import urllib.parse
import urllib.request

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2"}
BUILTIN = {"up"}


def exported(scrape):
    names = set(BUILTIN)
    for line in scrape.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            names.add(m.group(1))
            if m.group(2) in ("histogram", "summary"):
                names.update(m.group(1) + s for s in ("_bucket", "_sum", "_count"))
    return names


def grafana_exprs(path):
    with open(path) as f:
        d = json.load(f)
    out = []

    def panels(ps):
        for p in ps:
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((f"panel '{p.get('title')}' {t.get('refId')}", t["expr"]))
            panels(p.get("panels", []))
    panels(d.get("panels", []))
    for v in d.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.match(r"label_values\((.*),\s*\w+\)$", q or "")
        if m:
            out.append((f"variable '{v['name']}'", m.group(1)))
    return out


def rules_exprs(path):
    import yaml
    with open(path) as f:
        d = yaml.safe_load(f)
    return [(f"rule '{r.get('alert') or r.get('record')}'", r["expr"])
            for g in d["groups"] for r in g["rules"]]


def concrete(expr):
    """The expression with Grafana's variables replaced by valid values."""
    expr = expr.replace("$__rate_interval", "1m").replace("$__interval", "1m")
    return re.sub(r"\$\{?\w+\}?", ".*", expr)


def metric_names(expr):
    e = re.sub(r'"(\\.|[^"\\])*"', '""', expr)          # strings
    e = re.sub(r"\{[^}]*\}", " ", e)                      # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                      # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = []
    for m in re.finditer(r"(?<![\w.])([A-Za-z_:][\w:]*)\b(\s*\()?", e):
        if m.group(2) or m.group(1).lower() in KEYWORDS:
            continue  # a function call or an operator
        names.append(m.group(1))
    return names


def accepted(url, expr):
    q = urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
            return json.load(r).get("status") == "success", ""
    except urllib.error.HTTPError as e:
        return False, e.read().decode(errors="replace")


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        known = exported(f.read())
    files, url = [], None
    args = iter(argv[2:])
    for a in args:
        if a == "--prometheus":
            url = next(args)
        else:
            files.append(a)
    problems = 0
    for path in files:
        exprs = grafana_exprs(path) if path.endswith(".json") else rules_exprs(path)
        if not exprs:
            print(f"{path}: no expression found")
            problems += 1
        for where, expr in exprs:
            names = metric_names(concrete(expr))
            if not names:
                print(f"{path}: {where}: names no metric: {expr}")
                problems += 1
            for n in names:
                if n not in known:
                    print(f"{path}: {where}: '{n}' is not exported by the daemon")
                    problems += 1
            if url:
                ok, why = accepted(url, concrete(expr))
                if not ok:
                    print(f"{path}: {where}: Prometheus rejects it: {why.strip()}")
                    problems += 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
