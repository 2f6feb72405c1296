"""Whole-run and steady events/s of `tefq run` on Spark per query shape of issue 27, next to UC1 (the
specialised CURRENT operator) on the same data in the same run, with peak memory: the general plan
(and, with --plans general,fallback, the fallback it replaces) at one or more input sizes.

    .venv/bin/python bench/general_spark.py [--events 2000000,10000000] [--data DIR] [--shapes genre,...]
                                            [--plans general] [--master local[2]] [--report DIR] [--profile]
    (--shapes: beginnings of shape names, e.g. --shapes genre,UC1; UC1 always runs: the yardstick)

Per size: generates `tefq gen iptv --events N --epg` (Parquet) unless --data names such a
directory (one size then), writes a background giving every channel a genre and a rank, then runs
each shape's document as a user would: `tefq run --engine spark --stream DIR/log --stream DIR/epg
--background BG DOC --out CSV --metrics JSON` (TEFQ_SPARK_GENERAL=0 for the fallback). While it
runs, /proc is sampled every 0.5 s for the peak RSS of the driver (the `tefq` process), the JVM
and Spark's Python workers (the largest one and all of them together). Reports per run: wall time
(Spark start included: what the user waits for), whole-run events/s and its ratio to UC1's, the
CPU seconds of the run's process tree (`TreeCpu`) and UC1's over them (`x UC1 CPU`: what a shared
machine still measures of the rate ratio),
steady events/s (events of the micro-batches that read input over their trigger time) and its
ratio to UC1's, the driver's collect seconds (merging and formatting rows), rows, the operators'
state bytes per open fact (at the batch holding the most open facts) and the largest state of a
micro-batch (Spark's state store), peak memory, and whether the fallback wrote the same rows. With
--profile (TEFQ_SPARK_PROFILE), also the mappers' and the operator's seconds, summed over tasks
(wall time inside the Python workers: at high load mostly waiting for a core) and the general
operator's worker peak RSS as the worker reports it. Run it from a directory without a `tefq`
package (not a checkout): Spark's local Python workers start in the driver's working directory
and import `tefq` from there first. Writes REPORT/general_spark.md (the table) and
REPORT/general_spark.png (rate per shape against UC1's; peak memory per size).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from memory import PeakMemory, cpu_ticks  # noqa: E402 (bench/memory.py)

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


def tefq_cli() -> str:
    return os.path.join(os.path.dirname(sys.executable), "tefq")


def run_once(doc: str, data: str, bg: str, out: str, plan: str, master: str, profile: bool = False,
             files_per_trigger: int = 0) -> dict:
    """One `tefq run` as a user types it: its wall time, metrics and peak memory (`profile`: and
    the workers' seconds, `worker_seconds`)."""
    metrics = out + ".json"
    cmd = [tefq_cli(), "run", "--engine", "spark", "--master", master, "--stream", os.path.join(data, "log"),
           "--stream", os.path.join(data, "epg"), "--background", bg, doc, "--format", "csv", "--out", out,
           "--metrics", metrics, "--quiet"]
    if files_per_trigger:  # micro-batches of that many files: what bounds a bucket's batch
        cmd += ["--max-files-per-trigger", str(files_per_trigger)]
    env = dict(os.environ, TEFQ_SPARK_GENERAL="0" if plan == "fallback" else "1")
    if profile:
        env["TEFQ_SPARK_PROFILE"] = out + ".profile.jsonl"
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    cpu = TreeCpu(proc.pid)
    cpu.start()
    with PeakMemory(proc.pid) as memory:
        _, err = proc.communicate()
    wall, cpu_s = time.perf_counter() - started, cpu.total()
    if proc.returncode:
        return {"wall": wall, "error": err.strip().splitlines()[-1:]}
    with open(metrics, encoding="utf-8") as fh:
        m = json.load(fh)
    read = [b for b in m.get("micro_batches", []) if b.get("rows")]
    busy_s = sum(b["ms"] for b in read) / 1000
    return {"wall": wall, "cpu": cpu_s, "events": m["events_in"], "rows": m["rows_out"], "steady": m["events_in"] / busy_s if busy_s
            else None, "collect": m.get("collect_seconds"), "per_open_fact": m.get("state_bytes_per_open_fact"),
            "state_mb": max([b.get("state_bytes", 0) for b in m.get("micro_batches", [])], default=0) / 2**20,
            "out": out, **worker_seconds(env.get("TEFQ_SPARK_PROFILE")), **memory.peaks}


class TreeCpu(threading.Thread):
    """User + system CPU seconds of a process and its descendants (the driver, the JVM, Spark's
    Python workers), each read from /proc/PID/stat at its last 0.5 s sample: next to UC1's, a rate
    ratio that the machine's other jobs disturb less than the wall time's."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.seconds, self.done = root, {}, threading.Event()

    def run(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self.done.wait(0.5):
            self.seconds.update({pid: t / tick for pid, t in cpu_ticks(self.root, reaped=False).items()})

    def total(self) -> float:
        self.done.set()
        self.join()
        return sum(self.seconds.values())


def worker_seconds(path: str | None) -> dict:
    """From a TEFQ_SPARK_PROFILE file: the mappers' seconds and the general operator's read and
    compute seconds (summed over tasks and buckets)."""
    if not path or not os.path.exists(path):
        return {}
    out = {"mapper_s": 0.0, "operator_read_s": 0.0, "operator_compute_s": 0.0, "worker_peak_mb": 0.0}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if r["where"] in ("mapper", "columnar_mapper"):
                out["mapper_s"] += r["total_s"]
            elif r["where"].endswith("operator"):
                out["operator_read_s"] += r["read_s"]
                out["operator_compute_s"] += r["compute_s"]
            elif r["where"] == "general_memory":  # the bucket's worker's own peak RSS (operators/general.py)
                out["worker_peak_mb"] = max(out["worker_peak_mb"], r["peak_mb"])
    return out


def same_rows(a: dict, b: dict) -> str:
    if "out" not in a or "out" not in b:
        return "-"
    with open(a["out"], "rb") as x, open(b["out"], "rb") as y:
        return "yes" if x.read() == y.read() else "NO"


COLUMNS = ("events", "shape", "plan", "wall s", "events/s", "x UC1", "steady events/s", "x UC1 steady", "CPU s",
           "x UC1 CPU",
           "collect s", "rows", "state B/open fact", "state MB (max)", "driver MB", "JVM MB", "worker MB (max)",
           "workers MB", "mapper s", "operator read s", "operator compute s", "bucket worker peak MB",
           "same rows as general")


def cells(r: dict, uc1: dict) -> list[str]:
    """One table row: the run's figures, its rates next to UC1's."""
    if "error" in r:
        return [f"{r['size']:,}", r["shape"], r["plan"], f"{r['wall']:.1f}", f"error: {r['error']}"] + [""] * 18
    rate, steady = r["events"] / r["wall"], r.get("steady")
    uc1_rate, uc1_steady = (uc1["events"] / uc1["wall"], uc1.get("steady")) if "events" in uc1 else (None, None)

    def num(x, fmt: str = ",.0f") -> str:
        return "-" if x is None else format(x, fmt)

    uc1_cpu = uc1.get("cpu")
    return [f"{r['size']:,}", r["shape"], r["plan"], f"{r['wall']:.1f}", num(rate),
            num(rate / uc1_rate if uc1_rate else None, ".2f"), num(steady),
            num(steady / uc1_steady if steady and uc1_steady else None, ".2f"), num(r.get("cpu"), ".1f"),
            num(uc1_cpu / r["cpu"] if uc1_cpu and r.get("cpu") else None, ".2f"), num(r.get("collect"), ".1f"),
            f"{r['rows']:,}", num(r.get("per_open_fact")), num(r.get("state_mb"), ".1f"), num(r["driver_mb"]),
            num(r["jvm_mb"]), num(r["python_worker_max_mb"]), num(r["python_workers_mb"]),
            num(r.get("mapper_s"), ".1f"), num(r.get("operator_read_s"), ".1f"), num(r.get("operator_compute_s"), ".1f"),
            num(r.get("worker_peak_mb") or None), r.get("same", "")]


def run_size(size: int, data: str, names: list[str], plans: list[str], master: str, work: str,
             profile: bool = False, files_per_trigger: int = 0) -> list[dict]:
    """Every shape (UC1 first) at one input size; each run's figures as it ends."""
    bg = os.path.join(work, f"background-{size}.nt")
    write_background(data, bg)
    results: list[dict] = []
    for i, name in enumerate(names):
        doc = os.path.join(work, f"shape{i}.tef")
        with open(doc, "w", encoding="utf-8") as fh:
            fh.write(document(name))
        runs = {p: run_once(doc, data, bg, os.path.join(work, f"{size}-shape{i}-{p}.csv"), p, master, profile,
                             files_per_trigger)
                for p in (plans if not name.startswith("UC1") else ["general"])}
        if "fallback" in runs and "general" in runs:
            runs["fallback"]["same"] = same_rows(runs["general"], runs["fallback"])
        for p, r in runs.items():
            results.append({"size": size, "shape": name, "plan": p, **r})
            print("| " + " | ".join(cells(results[-1], results[0])) + " |", flush=True)
    return results


def write_report(results: list[dict], path: str, header: str) -> None:
    """The table as markdown: every run, UC1 of its size as the yardstick."""
    uc1 = {r["size"]: r for r in results if r["shape"].startswith("UC1")}
    lines = [header, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cells(r, uc1.get(r["size"], {}))) + " |" for r in results]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def write_plot(results: list[dict], path: str) -> None:
    """Left: whole-run events/s per shape (general plan) at each size, UC1's among them; right:
    peak driver and largest-worker RSS per shape at each size (flat from size to size: bounded state)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in results if r["plan"] == "general" and "events" in r]
    shapes = list(dict.fromkeys(r["shape"] for r in ok))
    sizes = sorted({r["size"] for r in ok})
    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 0.5 * len(shapes) + 3), sharey=True)
    width = 0.8 / max(len(sizes), 1)
    for j, size in enumerate(sizes):
        by = {r["shape"]: r for r in ok if r["size"] == size}
        ys = [i + j * width for i in range(len(shapes))]
        left.barh(ys, [by[s]["events"] / by[s]["wall"] if s in by else 0 for s in shapes], width, label=f"{size:,} events")
        right.barh(ys, [by[s]["driver_mb"] if s in by else 0 for s in shapes], width / 2, label=f"driver, {size:,}")
        right.barh([y + width / 2 for y in ys], [by[s]["python_worker_max_mb"] if s in by else 0 for s in shapes],
                   width / 2, label=f"largest worker, {size:,}")
    left.set_yticks(range(len(shapes)), shapes)
    left.set_xlabel("whole-run events/s (UC1: the specialised operator)")
    right.set_xlabel("peak RSS, MB")
    left.legend(), right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", default="200000", help="input sizes, comma-separated (e.g. 2000000,10000000)")
    ap.add_argument("--data", help="a `tefq gen iptv --epg` directory (one size; default: generate one per size)")
    ap.add_argument("--shapes", help="comma-separated beginnings of shape names, e.g. genre,UC1 (default: all)")
    ap.add_argument("--plans", default="general", help="general and/or fallback, comma-separated")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--max-files-per-trigger", type=int, default=0,
                    help="`tefq run --max-files-per-trigger N`: micro-batches of N files (default: one micro-batch)")
    ap.add_argument("--profile", action="store_true", help="also the workers' seconds (TEFQ_SPARK_PROFILE)")
    ap.add_argument("--report", help="directory for general_spark.md and .png (default: the work directory)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tefq-general-spark-")
    report = args.report or work
    os.makedirs(report, exist_ok=True)
    sizes = [int(x) for x in args.events.split(",")]
    wanted = args.shapes.split(",") if args.shapes else [""]
    names = [n for n in SHAPES if n.startswith("UC1") or any(n.startswith(w) for w in wanted)]
    batching = f" --max-files-per-trigger {args.max_files_per_trigger}" if args.max_files_per_trigger else ""
    header = (f"`bench/general_spark.py --events {args.events}{batching}`: master {args.master}, {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.1f} at the start")
    print(f"work {work}; {header}", flush=True)
    print("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS), flush=True)
    results: list[dict] = []
    for size in sizes:
        data = args.data or os.path.join(work, f"iptv-{size}")
        if not args.data:
            subprocess.run([tefq_cli(), "gen", "iptv", "--out", data, "--events", str(size), "--epg"], check=True,
                           capture_output=True)
        results += run_size(size, data, names, args.plans.split(","), args.master, work, args.profile,
                            args.max_files_per_trigger)
    write_report(results, os.path.join(report, "general_spark.md"), header + f", {os.getloadavg()[0]:.1f} at the end")
    write_plot(results, os.path.join(report, "general_spark.png"))
    print(f"wrote {report}/general_spark.md and general_spark.png", flush=True)


if __name__ == "__main__":
    main()
