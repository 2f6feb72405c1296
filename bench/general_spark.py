"""Whole-run wall time of `tefq run` on Spark per query shape of issue 27: the general plan
against the fallback it replaces (same run of this script, same data), next to UC1 (the
specialised CURRENT operator) on the same data.

    .venv/bin/python bench/general_spark.py [--events 200000] [--data DIR] [--shapes genre,...]
                                            [--plans general,fallback] [--master local[2]]
    (--shapes: beginnings of shape names, e.g. --shapes genre,UC1)

Generates `tefq gen iptv --events N --epg` (Parquet) unless --data names such a directory, writes a
background giving every channel a genre and a rank, then runs each shape's document as a user
would: `tefq run --engine spark --stream DIR/log --stream DIR/epg --background BG DOC --out CSV
--metrics JSON`, once with the general plan and once with TEFQ_SPARK_GENERAL=0 (the planner's
fallback for what the specialised operators refuse). Reports the wall time of each command (Spark
start included: what the user waits for), events/s, the ratio fallback / general, whether both
plans wrote the same rows, and each run's state bytes per open fact.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
IPTV = "http://example.org/iptv#"
EVERY = 'EVERY "PT1M"^^xsd:duration'
FACTS = {
    "UserFact": "CONSTRUCT FACT UserFact {?user :watching ?channel .} (UNION (SINCE ?user :join ?channel) "
                "(UNTIL ?user :quit ?channel))",
    "ProgramFact": "CONSTRUCT FACT ProgramFact {?channel :showing ?program .} (UNION (SINCE ?channel :start ?program)"
                   " (UNTIL ?channel :finish ?program))",
    "GenreFact": "CONSTRUCT FACT GenreFact {?user :likes ?genre .} (UNION (SINCE ?user :join ?c . ?c :genre ?genre"
                 " FILTER(?c != :ch1)) (UNTIL ?user :quit ?c . ?c :genre ?genre))",
}
SHAPES = {  # name -> (facts, query)
    "UC1 (CURRENT operator)": (("UserFact",), "SELECT ?channel AS C, ?n AS N (AGGREGATE ?channel, COUNT ?user AS ?n"
                               " WHERE (CURRENT ?user :watching ?channel) GROUP BY ?channel {every})"),
    "genre (CURRENT + background)": (("UserFact",), "SELECT ?genre AS G, ?n AS N (AGGREGATE ?genre, COUNT DISTINCT"
                                     " ?user AS ?n WHERE {{ (CURRENT ?user :watching ?channel) . ?channel :genre ?genre"
                                     " }} GROUP BY ?genre {every})"),
    "event pattern": ((), "SELECT ?channel AS C, ?n AS N (AGGREGATE ?channel, COUNT ?user AS ?n WHERE"
                          " {{ ?user :join ?channel }} GROUP BY ?channel {every})"),
    "two facts joined": (("UserFact", "ProgramFact"), "SELECT ?program AS P, ?n AS N, ?t AS T (AGGREGATE ?program,"
                         " COUNT DISTINCT ?user AS ?n, SUM DURATION(?S,?E) AS ?t WHERE {{ ?user :watching ?channel"
                         " [?S,?E] . ?channel :showing ?program }} GROUP BY ?program {every})"),
    "fact pattern, SUM DURATION": (("UserFact",), "SELECT ?channel AS C, ?t AS T (AGGREGATE ?channel, SUM"
                                   " DURATION(?S,?E) AS ?t WHERE {{ ?user :watching ?channel [?S,?E] }} GROUP BY"
                                   " ?channel {every})"),
    "FILTER over pattern variables": (("UserFact",), "SELECT ?channel AS C, ?n AS N (AGGREGATE ?channel, COUNT"
                                      " ?user AS ?n WHERE {{ (CURRENT ?user :watching ?channel) . ?channel :rank ?r"
                                      " FILTER(?r > 10 && ?channel != :ch2) }} GROUP BY ?channel {every})"),
    "FILTER over interval variables": (("UserFact",), "SELECT ?channel AS C, ?n AS N (AGGREGATE ?channel, COUNT"
                                       " ?user AS ?n WHERE {{ ?user :watching ?channel [?S,?E] FILTER(DURATION(?S,?E)"
                                       " > 600) }} GROUP BY ?channel {every})"),
    "WHILE + background pattern": (("UserFact", "ProgramFact"), "SELECT ?channel AS C, ?g AS G, ?n AS N (AGGREGATE"
                                   " ?channel, ?g, COUNT DISTINCT ?user AS ?n WHERE {{ ?user :watching ?channel"
                                   " [?S,?E] . ?channel :genre ?g }} GROUP BY ?channel ?g WHILE ?channel :showing"
                                   " ?program [?SS,?ES] {every})"),
    "SINCE/UNTIL + background BGP": (("GenreFact",), "SELECT ?genre AS G, ?n AS N (AGGREGATE ?genre, COUNT ?user"
                                     " AS ?n WHERE (CURRENT ?user :likes ?genre) GROUP BY ?genre {every})"),
}


def document(name: str) -> str:
    facts, query = SHAPES[name]
    return "\n".join([f"PREFIX : <{IPTV}>"] + [FACTS[f] for f in facts] + [query.format(every=EVERY)]) + "\n"


def write_background(data: str, path: str) -> None:
    """Every channel of the log: a genre and a rank."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    channels: set[str] = set()
    for f in glob.glob(os.path.join(data, "log", "*.parquet")):
        channels.update(pc.unique(pq.read_table(f, columns=["o"]).column("o")).to_pylist())
    genres = ["News", "Sports", "Film", "Kids", "Music", "Docs"]
    with open(path, "w", encoding="utf-8") as fh:
        for i, ch in enumerate(sorted(channels)):
            fh.write(f"{ch} <{IPTV}genre> <{IPTV}{genres[i % len(genres)]}> .\n")
            fh.write(f'{ch} <{IPTV}rank> "{i}"^^<http://www.w3.org/2001/XMLSchema#integer> .\n')


def run_once(doc: str, data: str, bg: str, out: str, plan: str, master: str) -> dict:
    """One `tefq run` as a user types it; its wall time and metrics."""
    metrics = out + ".json"
    cmd = [os.path.join(os.path.dirname(sys.executable), "tefq"), "run", "--engine", "spark", "--master", master,
           "--stream", os.path.join(data, "log"), "--stream", os.path.join(data, "epg"), "--background", bg, doc,
           "--format", "csv", "--out", out, "--metrics", metrics, "--quiet"]
    env = dict(os.environ, TEFQ_SPARK_GENERAL="0" if plan == "fallback" else "1")
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode:
        return {"wall": wall, "error": proc.stderr.strip().splitlines()[-1:]}
    with open(metrics, encoding="utf-8") as fh:
        m = json.load(fh)
    return {"wall": wall, "events": m["events_in"], "rows": m["rows_out"],
            "per_open_fact": m.get("state_bytes_per_open_fact"), "out": out}


def same_rows(a: dict, b: dict) -> str:
    if "out" not in a or "out" not in b:
        return "-"
    with open(a["out"], "rb") as x, open(b["out"], "rb") as y:
        return "yes" if x.read() == y.read() else "NO"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--data", help="a `tefq gen iptv --epg` directory (default: generate one)")
    ap.add_argument("--shapes", help="comma-separated beginnings of shape names, e.g. genre,UC1 (default: all)")
    ap.add_argument("--plans", default="general,fallback")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tefq-general-spark-")
    data = args.data or os.path.join(work, "iptv")
    if not args.data:
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "tefq"), "gen", "iptv", "--out", data,
                        "--events", str(args.events), "--epg"], check=True, capture_output=True)
    bg = os.path.join(work, "background.nt")
    write_background(data, bg)
    wanted = args.shapes.split(",") if args.shapes else [""]
    names = [n for n in SHAPES if any(n.startswith(w) for w in wanted)]
    plans = args.plans.split(",")
    print(f"data {data}; background {bg}; master {args.master}; load {os.getloadavg()[0]:.1f}", flush=True)
    print("| shape | plan | wall s | events/s | rows | state B/open fact | fallback / general | same rows |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for name in names:
        doc = os.path.join(work, f"{abs(hash(name))}.tef")
        with open(doc, "w", encoding="utf-8") as fh:
            fh.write(document(name))
        runs = {p: run_once(doc, data, bg, os.path.join(work, f"{abs(hash(name))}-{p}.csv"), p, args.master)
                for p in (plans if not name.startswith("UC1") else plans[:1])}
        for p, r in runs.items():
            ratio = (f"{runs['fallback']['wall'] / runs['general']['wall']:.1f}x"
                     if p == "fallback" and "general" in runs else "")
            same = same_rows(runs["general"], r) if p == "fallback" and "general" in runs else ""
            if "error" in r:
                print(f"| {name} | {p} | {r['wall']:.1f} | error: {r['error']} | | | | |", flush=True)
                continue
            pof = f"{r['per_open_fact']:.0f}" if r.get("per_open_fact") else "-"
            print(f"| {name} | {p} | {r['wall']:.1f} | {r['events'] / r['wall']:,.0f} | {r['rows']:,} | {pof} |"
                  f" {ratio} | {same} |", flush=True)


if __name__ == "__main__":
    main()
