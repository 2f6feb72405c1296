"""Where a live micro-batch's time goes, stage by stage, from Spark's event log (a profile, not a test).

    PYSPARK_SUBMIT_ARGS="--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file:///tmp/ev pyspark-shell" \
        python bench/live.py --rates 50000 --source redis ...
    python bench/event_log_stages.py /tmp/ev

Per job (one per micro-batch with input): its wall time and, per stage, the wall time, the tasks,
the wait from submission to the first task, the records read and the summed task metrics. A
tefq micro-batch has two stages: the source and the mapper (one task per input partition: a
Redis micro-batch or a small file is one), then the stateful operator, the state store and the
file sink (one task per shuffle partition). Python time is inside the run times (the JVM's CPU
time does not include it).
"""
from __future__ import annotations

import collections
import glob
import json
import subprocess
import sys

TASK_TIMES = ("Executor Deserialize Time", "Executor Run Time", "JVM GC Time")


def events(directory: str) -> list[dict]:
    out = []
    for path in sorted(glob.glob(f"{directory}/**/events_*", recursive=True)):
        if path.endswith(".zstd"):  # Spark's default codec for rolled event logs
            text = subprocess.run(["zstd", "-dc", path], capture_output=True, check=True).stdout.decode()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        out += [json.loads(line) for line in text.splitlines() if line.strip()]
    return out


def stage_line(stage: dict, tasks: list[dict]) -> str:
    sums: collections.Counter = collections.Counter()
    for t in tasks:
        m = t.get("Task Metrics") or {}
        for k in TASK_TIMES:
            sums[k] += m.get(k, 0)
        sums["records read"] += m.get("Input Metrics", {}).get("Records Read", 0)
        sums["shuffle records read"] += m.get("Shuffle Read Metrics", {}).get("Total Records Read", 0)
    first = min((t["Task Info"]["Launch Time"] for t in tasks), default=stage["Submission Time"])
    return (f"   stage {stage['Stage ID']}: {len(tasks)} tasks, wall {stage['Completion Time'] - stage['Submission Time']} "
            f"ms (first task after {first - stage['Submission Time']} ms); "
            + ", ".join(f"{k} {v:.0f}" for k, v in sums.items()))


def main() -> None:
    jobs: dict[int, dict] = {}
    stages: dict[int, dict] = {}
    tasks: dict[int, list] = collections.defaultdict(list)
    for e in events(sys.argv[1]):
        kind = e["Event"]
        if kind == "SparkListenerJobStart":
            batch = (e.get("Properties") or {}).get("streaming.sql.batchId")
            jobs[e["Job ID"]] = {"start": e["Submission Time"], "stages": e["Stage IDs"], "batch": batch}
        elif kind == "SparkListenerJobEnd" and e["Job ID"] in jobs:
            jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            stages[e["Stage Info"]["Stage ID"]] = e["Stage Info"]
        elif kind == "SparkListenerTaskEnd":
            tasks[e["Stage ID"]].append(e)
    for job_id, job in sorted(jobs.items()):
        print(f"job {job_id} (micro-batch {job['batch']}): wall {job.get('end', job['start']) - job['start']} ms")
        for sid in job["stages"]:
            if "Submission Time" in stages.get(sid, {}):
                print(stage_line(stages[sid], tasks[sid]))


if __name__ == "__main__":
    main()
