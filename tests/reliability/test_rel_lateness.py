"""Issue 17, fault 5: the oracle honours --lateness (it silently ignored it). Each stream file is one
arrival batch, as on Spark with one file per micro-batch: an event at or before a tick already
reported is late (counted, warned, not applied); events within the lateness apply in time order."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tefq.analysis import load
from tefq.oracle import run
from tefq.oracle.late import drop_late
from tests.support.paths import ROOT

pytestmark = pytest.mark.reliability

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
TEFQ = os.environ.get("TEFQ_CLI", f"{sys.executable} -m tefq").split()  # TEFQ_CLI: to try old code
X = "http://example.org/iptv#"


def join(ts: int, user: str) -> tuple[int, str, str, str]:
    return ts, f"<{X}{user}>", f"<{X}join>", f"<{X}A>"


FIRST = [join(1000, "u1"), join(25000, "u2")]  # after it, ticks up to 20 000 are reported (lateness 0)
SECOND = [join(5000, "u3"), join(22000, "u4")]  # u3 is late, u4 is not


@pytest.mark.parametrize("lateness,late", [(0, [5000]), (10_000, [5000]), (30_000, [])])
def test_drop_late_follows_sparks_rule(lateness, late) -> None:
    kept, dropped = drop_late(FIRST + SECOND, [2, 2], lateness, 10_000, 0)
    assert [ts for ts, _ in dropped] == late
    assert sorted(kept) == sorted(e for e in FIRST + SECOND if e[0] not in late)


def test_run_counts_and_does_not_apply_late_events(capsys) -> None:
    doc = load(UC1)
    r = run(doc, FIRST + SECOND, lateness_ms=0, batch_sizes=[2, 2])
    assert r.metrics.late_events == 1
    assert "late event at 5000 ms ignored" in capsys.readouterr().err
    assert [(t, c[1]) for t, c in r.results[0].rows] == [
        (10000, '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'),
        (20000, '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'),
        (30000, '"3"^^<http://www.w3.org/2001/XMLSchema#integer>')]
    everything = run(doc, FIRST + SECOND)  # no lateness given: the whole input in time order
    assert everything.metrics.late_events == 0 and everything.results[0].rows[0][1][1].startswith('"2"')


def test_cli_lateness_on_the_oracle(tmp_path) -> None:
    d = tmp_path / "log"
    d.mkdir()
    for name, rows in (("a.tsv", FIRST), ("b.tsv", SECOND)):
        (d / name).write_text("ts\ts\tp\to\n" + "".join("\t".join(map(str, e)) + "\n" for e in rows))
    base = ["run", UC1, "--engine", "oracle", "--stream", str(d), "--metrics", str(tmp_path / "m.json")]
    r = subprocess.run(TEFQ + base + ["--lateness", "1s"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "m.json").read_text())["late_events"] == 1
    assert "warning: late event at 5000 ms" in r.stderr
    assert r.stdout.splitlines()[1] == "10000,http://example.org/iptv#A,1"
    wide = subprocess.run(TEFQ + base + ["--lateness", "30s"], capture_output=True, text=True)
    assert wide.returncode == 0 and wide.stdout.splitlines()[1] == "10000,http://example.org/iptv#A,2"
