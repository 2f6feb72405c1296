"""The use-case documents run on generated data, and the oracle's UC1/UC2 rows equal a direct
numpy computation from the generated sessions (two independent routes to the same numbers)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tefq.iptv import cli as icli
from tefq.iptv import sessions as S
from tefq.iptv.generator import IptvConfig
from tefq.iptv.writer import generate

pytest.importorskip("tefq.oracle")
NS = "http://example.org/iptv#"
CFG = IptvConfig(events=1_500, users=250, channels=8, days=0.04, seed=2)  # about an hour


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("uc") / "iptv")
    generate(CFG, out, epg=True, fmt="tsv")
    return out


def load_doc(name: str):
    from tefq.analysis import load

    return load(str(icli.usecase_file(name)))


def elements(path: str):
    from tefq.io.readers import read_stream

    return list(read_stream(path))


def number(cell: str) -> float:
    m = re.fullmatch(r'"([^"]*)"(\^\^<[^>]*>)?', cell)
    assert m, cell
    return float(m.group(1))


def log_sessions(rows):
    users = {u: i for i, u in enumerate(sorted({r[1] for r in rows}))}
    chans = sorted({r[3] for r in rows})
    code = {c: i for i, c in enumerate(chans)}
    ts = np.array([r[0] for r in rows], dtype=np.int64)
    ident = np.array([users[r[1]] * len(chans) + code[r[3]] for r in rows], dtype=np.int64)
    ses = S.sessions(ident, ts, np.array([r[2] == f"<{NS}join>" for r in rows]))
    return ses, chans, int(ts[0]), int(ts[-1])


def expected(rows, period: int) -> dict[tuple[int, str], tuple[int, float]]:
    """(tick, channel) -> (current viewers, their total seconds so far), by spec §4.1/§4.2."""
    ses, chans, first, last = log_sessions(rows)
    k0, k1 = S.tick_range(first, last, period)
    out = {}
    for k in range(k0, k1 + 1):
        tau = k * period
        live = (ses.start <= tau) & (tau < ses.end)
        for c in np.unique(ses.ident[live] % len(chans)):
            sel = live & (ses.ident % len(chans) == c)
            out[(tau, chans[c])] = (int(sel.sum()), float((tau - ses.start[sel]).sum()) / 1000)
    return out


def test_uc1_oracle_equals_direct_count(data):
    from tefq.oracle import run

    rows = elements(f"{data}/log")
    result = run(load_doc("uc1"), rows).results[0]
    got = {(tick, cells[0]): number(cells[1]) for tick, cells in result.rows}
    want = {key: n for key, (n, _) in expected(rows, 10_000).items()}
    assert got == want


def test_uc2_oracle_equals_direct_average(data):
    from tefq.oracle import run

    rows = elements(f"{data}/log")
    run_result = run(load_doc("uc2"), rows)
    got = {(tick, cells[0]): (number(cells[1]), number(cells[2])) for tick, cells in run_result.results[0].rows}
    want = expected(rows, 60_000)
    assert got.keys() == want.keys()
    for key, (n, total) in want.items():
        assert got[key][0] == n
        assert got[key][1] == pytest.approx(total / n, rel=1e-12)
    ses, *_ = log_sessions(rows)
    assert run_result.metrics.facts_created == len(ses)


def test_uc3_runs_on_log_and_guide(data):
    from tefq.oracle import run

    result = run(load_doc("uc3"), elements(data)).results[0]
    assert result.rows
    shows = {cells[0] for _, cells in result.rows}
    assert all(s.startswith(f"<{NS}prog") for s in shows)
    assert all(number(cells[1]) >= 1 and number(cells[2]) >= 0 for _, cells in result.rows)
