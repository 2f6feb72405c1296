"""Issue 17, fault 2: one stray timestamp must not exhaust memory. The oracle runs under resource
limits (RLIMIT_AS, RLIMIT_CPU) in a subprocess: it either finishes (the cost follows the ticks that
have rows) or stops with exit 2 naming the row; before the fix these runs allocated without bound."""
from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.reliability

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
TEFQ = os.environ.get("TEFQ_CLI", f"{sys.executable} -m tefq").split()  # TEFQ_CLI: to try old code
MEMORY = 1 << 30  # bytes of address space
CPU_SECONDS = 60
X = "http://example.org/iptv#"
BASE = 1_700_000_000_000  # ms, Nov 2023
# The quick part (make test) stops at 10,000 ticks; the long part (make test-faults) at the default.
LONG = os.environ.get("TEFQ_FAULTS_LONG") == "1"
BOUND = [] if LONG else ["--max-ticks", "10000"]


def limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def run_bounded(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(TEFQ + args, capture_output=True, text=True, preexec_fn=limits)


def stream(tmp_path, stray: list[tuple[int, str]], name: str = "s.tsv") -> str:
    """Ten joins at BASE + seconds and quits of the even users (the odd ones keep watching: a gap
    in the stream has rows at every tick), then the stray rows (ts, predicate)."""
    rows = ["ts\ts\tp\to"]
    for i in range(10):
        rows.append(f"{BASE + i * 1000}\t<{X}u{i}>\t<{X}join>\t<{X}ch{i % 3}>")
        quit = "quit" if i % 2 == 0 else "zap"
        rows.append(f"{BASE + 60_000 + i * 1000}\t<{X}u{i}>\t<{X}{quit}>\t<{X}ch{i % 3}>")
    rows += [f"{ts}\t<{X}stray>\t<{X}{p}>\t<{X}ch9>" for ts, p in stray]
    f = tmp_path / name
    f.write_text("\n".join(rows) + "\n")
    return str(f)


STRAYS = {
    "zero": 0,
    "minus_one": -1,
    "seconds_not_ms": BASE // 1000,
    "near_the_end_of_the_range": (1 << 61) - 1000,
    "hundred_years_later": BASE + 100 * 365 * 86_400_000,
}


@pytest.mark.parametrize("name", STRAYS)
def test_a_stray_timestamp_stops_with_the_row_named(tmp_path, name) -> None:
    """A join at an absurd time opens a fact across the whole range: exit 2, FILE:LINE:COL of it."""
    path = stream(tmp_path, [(STRAYS[name], "join")])
    r = run_bounded(["run", UC1, "--engine", "oracle", "--stream", path, "--quiet"] + BOUND)
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"{path}:22:1: error: " in r.stderr and "--max-ticks" in r.stderr, r.stderr
    assert f"{STRAYS[name]} ms" in r.stderr and "Traceback" not in r.stderr


def test_the_stray_row_is_found_past_recorded_bad_rows(tmp_path) -> None:
    path = stream(tmp_path, [(0, "join")])
    with open(path, "a") as fh:
        fh.write("noon\t<http://x/s>\t<http://x/p>\t<http://x/o>\n")
    r = run_bounded(["run", UC1, "--engine", "oracle", "--stream", path, "--quiet", "--bad-rows",
                     str(tmp_path / "bad")] + BOUND)
    assert r.returncode == 2 and f"{path}:22:1: error: " in r.stderr, r.stderr[-2000:]


def test_a_stray_event_that_opens_nothing_costs_nothing(tmp_path) -> None:
    """An unmatched event at 0 stretches the range, but no tick in the gap has rows: it runs."""
    path = stream(tmp_path, [(0, "other")])
    r = run_bounded(["run", UC1, "--engine", "oracle", "--stream", path, "--quiet"])
    assert r.returncode == 0, r.stderr[-2000:]
    ticks = {line.split(",")[0] for line in r.stdout.splitlines()[1:]}
    assert ticks and min(int(t) for t in ticks) >= BASE


def test_the_bound_is_an_option(tmp_path) -> None:
    path = stream(tmp_path, [])
    args = ["run", UC1, "--engine", "oracle", "--stream", path, "--quiet"]
    small = run_bounded(args + ["--max-ticks", "3"])
    assert small.returncode == 2 and "more than 3 ticks (--max-ticks)" in small.stderr, small.stderr
    assert run_bounded(args + ["--max-ticks", "-1"]).returncode == 2


def test_a_timestamp_beyond_64_bits_is_a_bad_row(tmp_path) -> None:
    path = stream(tmp_path, [(1 << 64, "join")])
    r = run_bounded(["run", UC1, "--engine", "oracle", "--stream", path, "--quiet"])
    assert r.returncode == 2 and f"{path}:22:1: error: timestamp" in r.stderr, r.stderr


def test_an_implicit_group_over_a_gap_is_bounded(tmp_path) -> None:
    """No GROUP BY reports a row at every tick: the stray row is named, memory stays bounded."""
    q = tmp_path / "count.tef"
    q.write_text((open(UC1).read().split("SELECT")[0]) + "SELECT ?n AS N (AGGREGATE COUNT ?user AS ?n "
                 "WHERE (CURRENT ?user :watching ?channel) EVERY \"PT1S\"^^xsd:Duration)\n")
    path = stream(tmp_path, [(-1, "other")])
    r = run_bounded(["run", str(q), "--engine", "oracle", "--stream", path, "--quiet"] + BOUND)
    assert r.returncode == 2 and f"{path}:22:1: error: " in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("how", [[os.path.join(ROOT, "usecases", "uc1_csparql.rspql")], [UC1, "--simulate", "refresh"]],
                         ids=["windowed", "simulated"])
def test_runs_that_visit_every_window_are_bounded_too(tmp_path, how) -> None:
    """Windowed queries close every window and simulations re-send every window's facts, rows or
    not: a stray row at 0 made them enumerate ~1.7e8 windows (they ignored --max-ticks); now they
    stop before the first, naming the row, as the TEF oracle does."""
    path = stream(tmp_path, [(0, "other")])
    r = run_bounded(["run", *how, "--engine", "oracle", "--stream", path, "--quiet"] + BOUND)
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"{path}:22:1: error: " in r.stderr and "--max-ticks" in r.stderr and "Traceback" not in r.stderr, r.stderr
