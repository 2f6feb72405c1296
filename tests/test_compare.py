"""`tefq compare`: approaches agree, counters match §7, JSON rows and figures are written."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from simulate_docs import spec10_elements, uc1, uc2, uc3  # noqa: E402

from tefq.errors import TefqError  # noqa: E402
from tefq.simulate.cli import parse_windows, register  # noqa: E402
from tefq.simulate.compare import compare  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def test_compare_spec10_counters_and_agreement():
    ms = compare(uc1(), spec10_elements(), [5000, 10_000], check_oracle=True)
    got = {(m.approach, m.window_s): m.intermediate_bindings for m in ms}
    assert got == {("tef", 5.0): 6, ("refresh", 5.0): 9, ("refresh-group", 5.0): 6, ("sequence", 5.0): 8,
                   ("tef", 10.0): 6, ("refresh", 10.0): 7, ("refresh-group", 10.0): 4, ("sequence", 10.0): 8}
    assert all(m.agrees for m in ms)
    assert all(len(m.wall) == 1 and m.events == 8 for m in ms)


def test_compare_uc3_programme_example():
    from test_simulate import _programme_stream

    ms = compare(uc3(), _programme_stream(), [1000, 5000], repeat=2, check_oracle=True)
    assert all(m.agrees for m in ms) and all(len(m.wall) == 2 for m in ms)
    by = {(m.approach, m.window_s): m.intermediate_bindings for m in ms}
    assert by[("tef", 1.0)] == by[("tef", 5.0)] == 15  # facts created, whatever the window
    assert by[("refresh", 1.0)] > by[("refresh", 5.0)]  # smaller windows refresh more often


def test_bad_inputs():
    with pytest.raises(TefqError, match="unknown approach"):
        compare(uc1(), spec10_elements(), [5000], approaches=["tef", "replay"])
    with pytest.raises(TefqError, match="--repeat"):
        compare(uc1(), spec10_elements(), [5000], repeat=0)
    with pytest.raises(TefqError, match="not a duration"):
        parse_windows("10s,fast")
    with pytest.raises(TefqError, match="positive"):
        parse_windows("0s")
    assert parse_windows("10s,100s,500ms,1m,PT2S") == [10_000, 100_000, 500, 60_000, 2000]


def _cli(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="tefq")
    register(p.add_subparsers())
    args = p.parse_args(argv)
    return args.func(args)


def test_cli_writes_json_and_plot(tmp_path, capsys, monkeypatch):
    # the document is the hand-built plan of examples/spec10/uc2.tef: this tests the command, not the parser
    import tefq.analysis

    monkeypatch.setattr(tefq.analysis, "load", lambda path, **kw: uc2())
    out, png = tmp_path / "rows.json", tmp_path / "fig.png"
    rc = _cli(["compare", "--usecase", "uc2", "--query", str(ROOT / "examples/spec10/uc2.tef"),
               "--stream", str(ROOT / "examples/spec10/events.tsv"), "--windows", "5s,10s", "--repeat", "2",
               "--json", str(out), "--plot", str(png), "--quiet"])
    assert rc == 0
    rows = json.loads(out.read_text())
    assert {r["approach"] for r in rows} == {"tef", "refresh", "refresh-group", "sequence"}
    for r in rows:
        assert set(r) >= {"approach", "window_s", "intermediate_bindings", "events_per_s", "wall_s"}
        assert r["repeats"] == 2 and r["events_per_s_min"] <= r["events_per_s"] <= r["events_per_s_max"]
    five = {r["approach"]: r["intermediate_bindings"] for r in rows if r["window_s"] == 5}
    assert five == {"tef": 6, "refresh": 9, "refresh-group": 6, "sequence": 8}
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    assert "refresh-group" in capsys.readouterr().out


def test_cli_missing_stream_and_spark(tmp_path):
    with pytest.raises(TefqError, match="no such stream"):
        _cli(["compare", "--usecase", "uc1", "--stream", str(tmp_path / "nope")])
    with pytest.raises(TefqError, match="oracle"):
        _cli(["compare", "--usecase", "uc1", "--stream", str(tmp_path), "--engine", "spark"])


def test_cli_uc3_needs_the_programme_guide(tmp_path):
    (tmp_path / "log").mkdir()
    with pytest.raises(TefqError, match="program guide"):
        _cli(["compare", "--usecase", "uc3", "--stream", str(tmp_path)])


def test_uc1_csparql_queries_lag_tef_by_one_window():
    """usecases/uc1_csparql.rspql (at 5 s) on spec §10: its currentCount at c is TEF's UC1 count at
    c - 5 s, and its currentCount triples are the per-group refresh bindings of those ticks."""
    from tefq.analysis import load
    from tefq.oracle.windowed import run as windowed_run
    from tefq.simulate import run

    text = (ROOT / "usecases/uc1_csparql.rspql").read_text().replace("RANGE 10s", "RANGE 5s")
    path = Path(__import__("tempfile").mkdtemp()) / "uc1_5s.rspql"
    path.write_text(text)
    out = windowed_run(load(str(path)), spec10_elements())
    counts = next(r for r in out if r.name == "UserChannelCounts")
    lagged = sorted((c - 5000, (s, o)) for c, (s, p, o) in counts.rows)
    tef = run(uc1(), spec10_elements(), "refresh-group", 5000)
    tef_rows = tef.results[0].rows
    last_tick = tef_rows[-1][0]
    assert lagged == [r for r in tef_rows if r[0] < last_tick]  # the last tick would be reported at +5 s
    per_group_before_last = 2 + 2  # spec §10: two channels with viewers at 5 s and at 10 s
    assert len(counts.rows) == per_group_before_last
