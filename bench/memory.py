"""Peak resident memory of this process and its descendants (the Spark JVM, its Python workers),
sampled from /proc in a background thread (no psutil needed)."""
from __future__ import annotations

import os
import threading

PAGE = os.sysconf("SC_PAGE_SIZE")


def children() -> dict[int, list[int]]:
    """parent pid -> child pids, for every process visible in /proc."""
    out: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        out.setdefault(ppid, []).append(int(name))
    return out


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm", encoding="utf-8") as fh:
            return int(fh.read().split()[1]) * PAGE / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def is_jvm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().split(b"\0", 1)[0].endswith(b"java")
    except OSError:
        return False


class PeakMemory:
    """`with PeakMemory() as m: ...` then m.peaks: MB at the sampled peak of the driver (`root`,
    this process by default), the JVM(s), the sum of every other descendant (Spark's Python
    workers) and the largest of those."""

    def __init__(self, root: int | None = None, every_s: float = 0.5) -> None:
        self.root, self.every_s = root or os.getpid(), every_s
        self.peaks = {"driver_mb": 0.0, "jvm_mb": 0.0, "python_workers_mb": 0.0, "python_worker_max_mb": 0.0,
                      "total_mb": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        tree, todo, seen = children(), [self.root], []
        while todo:
            pid = todo.pop()
            seen.append(pid)
            todo.extend(tree.get(pid, []))
        now = {"driver_mb": rss_mb(self.root), "jvm_mb": 0.0, "python_workers_mb": 0.0, "python_worker_max_mb": 0.0}
        for pid in seen[1:]:
            mb = rss_mb(pid)
            if is_jvm(pid):
                now["jvm_mb"] += mb
            else:
                now["python_workers_mb"] += mb
                now["python_worker_max_mb"] = max(now["python_worker_max_mb"], mb)
        now["total_mb"] = now["driver_mb"] + now["jvm_mb"] + now["python_workers_mb"]
        for k, v in now.items():
            self.peaks[k] = max(self.peaks[k], round(v, 1))

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    def start(self) -> "PeakMemory":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def __enter__(self) -> "PeakMemory":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def du_bytes(path: str) -> int:
    """Bytes of every file under `path` (a checkpoint directory)."""
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs
               if os.path.exists(os.path.join(d, f)))


def cpu_ticks(root: int, reaped: bool = True) -> dict[int, int]:
    """CPU time (clock ticks, user + system; with `reaped`, also that of reaped children) of `root`
    and every descendant: a run's driver, its JVM and its Python workers. On a shared machine the
    CPU a run spends compares settings where the wall time cannot."""
    last = 15 if reaped else 13  # /proc/PID/stat after the name: utime, stime, cutime, cstime at 11..14
    tree, todo, out = children(), [root], {}
    while todo:
        pid = todo.pop()
        todo.extend(tree.get(pid, []))
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            out[pid] = sum(int(v) for v in fields[11:last])
        except (OSError, IndexError, ValueError):
            continue
    return out


def cpu_seconds_since(before: dict[int, int], root: int | None = None) -> dict[str, float]:
    """CPU seconds the driver (`root`, this process by default), its JVM(s) and its other
    descendants (Spark's Python workers) spent since `before` (`cpu_ticks(root)` taken then;
    processes started since count whole). On 2 cores, `total_s` / 2 is the least wall time the
    same work could take."""
    root = root or os.getpid()
    tick = os.sysconf("SC_CLK_TCK")
    out = {"driver_s": 0.0, "jvm_s": 0.0, "python_workers_s": 0.0}
    for pid, ticks in cpu_ticks(root).items():
        kind = "driver_s" if pid == root else "jvm_s" if is_jvm(pid) else "python_workers_s"
        out[kind] += (ticks - before.get(pid, 0)) / tick
    out = {k: round(v, 2) for k, v in out.items()}
    out["total_s"] = round(sum(out.values()), 2)
    return out
