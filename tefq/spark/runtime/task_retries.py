"""Task retries for embedded Spark: a Python worker killed mid-batch (the OOM killer, an operator's
`kill`) costs a retry of its task, not the run.

Spark's local mode gives each task a single attempt unless the master string says otherwise
(`local[N,F]`: N threads, F attempts; `spark.task.maxFailures` is ignored there), so `local[N]`,
`local[*]` and `local` are run as `local[N,4]`. A retried task reads its input and its bucket's
state again from the checkpoint's last committed version and the sink keeps only committed files,
so the output is the same. Cluster masters keep their own retry settings.
"""
from __future__ import annotations

TASK_ATTEMPTS = 4  # as spark.task.maxFailures' default on a cluster


def with_retries(master: str) -> str:
    """`local[N]` (or `local`, `local[*]`) as `local[N,TASK_ATTEMPTS]`; any other master as is."""
    inner = master[6:-1] if master.startswith("local[") and master.endswith("]") else None
    if master == "local" or (inner is not None and "," not in inner):
        return f"local[{inner or 1},{TASK_ATTEMPTS}]"
    return master
