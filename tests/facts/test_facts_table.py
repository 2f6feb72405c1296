"""The fact table (spec §12): each row against a brute force over the events (hypothesis), UC1-UC3
fact tables on generated data, the file formats and reading a stored table back, `tefq facts`."""
from __future__ import annotations

import bisect
import math
import os
import subprocess
import sys
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.analysis import bind_text, load
from tefq.errors import TefqError
from tefq.facts.reader import read_fact_store
from tefq.facts.table import fact_table, store_rows
from tefq.facts.writer import write_facts
from tefq.io.readers import read_stream
from tefq.oracle import run
from tests.support.paths import ROOT

INF = math.inf
NS = "http://example.org/iptv#"
UC3 = os.path.join(ROOT, "examples", "programs", "uc3.tef")


def iri(local: str) -> str:
    return f"<{NS}{local}>"


# ---------------------------------------------------------------- brute force, millisecond by millisecond
def holds_per_ms(events, since: str, until: str, last: int) -> dict[tuple, list[bool]]:
    """identity (s, o) -> open after each ms 0..last, applying each ms's events in stream order."""
    out: dict[tuple, list[bool]] = {}
    by_ms = defaultdict(list)
    for t, s, p, o in events:
        if p in (since, until):
            by_ms[t].append((s, p, o))
    state: dict[tuple, bool] = {}
    idents = {(s, o) for evs in by_ms.values() for s, _, o in evs}
    for m in range(last + 1):
        for s, p, o in by_ms.get(m, ()):
            state[(s, o)] = p == since
        for ident in idents:
            out.setdefault(ident, []).append(state.get(ident, False))
    return out


def runs(timeline: list[bool]) -> list[tuple[int, float]]:
    """Maximal runs of True as [start, end) (end INF when still true at the last ms)."""
    ivs, start = [], None
    for m, held in enumerate(timeline + [False]):
        if held and start is None:
            start = m
        elif not held and start is not None:
            ivs.append((start, m if m < len(timeline) else INF))
            start = None
    return ivs


def brute_rows(events) -> set[tuple]:
    events = list(dict.fromkeys(events))  # spec §1: a stream is a set (the same triple at the same t is one element)
    last = max(t for t, *_ in events)
    watching = holds_per_ms(events, iri("join"), iri("quit"), last)
    showing = holds_per_ms(events, iri("start"), iri("finish"), last)
    rows = set()
    for name, table in (("UserFact", watching), ("ProgramFact", showing)):
        for (s, o), timeline in table.items():
            rows |= {(name, s, o, a, b) for a, b in runs(timeline)}
    attends: dict[tuple, list[bool]] = {}
    for (user, ch), w in watching.items():
        for (ch2, prog), sh in showing.items():
            if ch2 == ch:
                cur = attends.setdefault((user, prog), [False] * (last + 1))
                attends[(user, prog)] = [c or (a and b) for c, a, b in zip(cur, w, sh)]
    for (user, prog), timeline in attends.items():
        rows |= {("ViewShipFact", user, prog, a, b) for a, b in runs(timeline)}
    return rows


def table_rows(table) -> set[tuple]:
    out = set()
    for r in table.rows:
        ident = tuple(t for _, t in r.identity)
        out.add((r.fact, *ident, r.start, INF if r.end is None else r.end))
    return out


log_event = st.tuples(st.integers(0, 40), st.sampled_from(["u0", "u1", "u2"]), st.sampled_from(["join", "quit"]),
                      st.sampled_from(["A", "B"]))
epg_event = st.tuples(st.integers(0, 40), st.sampled_from(["A", "B"]), st.sampled_from(["start", "finish"]),
                      st.sampled_from(["p0", "p1"]))


@given(st.lists(st.one_of(log_event, epg_event), min_size=1, max_size=25))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_each_row_is_the_brute_force_interval(raw):
    events = sorted([(t, iri(s), iri(p), iri(o)) for t, s, p, o in raw], key=lambda e: e[0])
    table = fact_table(load(UC3), events)
    assert table_rows(table) == brute_rows(events)
    assert table.columns == ("user", "channel", "program")


# ---------------------------------------------------------------- UC1-UC3 on generated data
@pytest.fixture(scope="module")
def iptv(tmp_path_factory):
    from tefq.iptv.generator import IptvConfig
    from tefq.iptv.writer import generate

    out = str(tmp_path_factory.mktemp("iptv"))
    generate(IptvConfig(events=4000, users=150, channels=6, days=0.1, seed=3), out, epg=True, fmt="tsv")
    return out, [e for sub in ("log", "epg") for e in read_stream(os.path.join(out, sub))]


def holds_at(times: list[int], opens: list[bool], m: int) -> bool:
    """Open at ms m: the state after the identity's last event at or before m."""
    i = bisect.bisect_right(times, m)
    return i > 0 and opens[i - 1]


@pytest.mark.parametrize("uc", ["uc1", "uc2", "uc3"])
def test_use_case_fact_tables_on_generated_data(iptv, uc):
    """Every row agrees with a replay of its identity's events at each event time and either side of
    it (where intervals begin and end); intervals of one identity are sorted, disjoint and never touch;
    the counts are the run's facts_created / facts_closed."""
    _, events = iptv
    doc = load(os.path.join(ROOT, "tefq", "usecases", f"{uc}.tef"))
    table = fact_table(doc, events)
    per_ident: dict[tuple, list[tuple[int, int | None]]] = defaultdict(list)
    for r in table.rows:
        per_ident[(r.fact, r.identity)].append((r.start, r.end))
    for ivs in per_ident.values():
        assert all(a_end is not None and a_end < b_start for (_, a_end), (b_start, _) in zip(ivs, ivs[1:]))
    events = sorted(events, key=lambda e: e[0])
    replay: dict[tuple, tuple[list[int], list[bool]]] = {}
    for t, s, p, o in events:
        kind = {iri("join"): ("UserFact", True), iri("quit"): ("UserFact", False),
                iri("start"): ("ProgramFact", True), iri("finish"): ("ProgramFact", False)}.get(p)
        if kind is not None:
            times, opens = replay.setdefault((kind[0], s, o), ([], []))
            times.append(t)
            opens.append(kind[1])
    for (fact, s, o), (times, opens) in replay.items():
        if fact not in {r.fact for r in table.rows}:
            continue
        ivs = per_ident.get((fact, tuple(zip(("user", "channel") if fact == "UserFact" else ("channel", "program"),
                                               (s, o)))), [])
        for m in {x + d for x in times for d in (-1, 0, 1)}:
            in_table = any(a <= m and (b is None or m < b) for a, b in ivs)
            assert in_table == holds_at(times, opens, m), (fact, s, o, m)
    metrics = run(doc, events).metrics
    assert len(table.rows) == metrics.facts_created
    assert sum(1 for r in table.rows if r.end is not None) == metrics.facts_closed


# ---------------------------------------------------------------- files
@pytest.mark.parametrize("fmt", ["parquet", "tsv", "jsonl"])
def test_stored_table_reads_back_the_same(iptv, tmp_path, fmt):
    _, events = iptv
    doc = load(os.path.join(ROOT, "tefq", "usecases", "uc3.tef"))
    table = fact_table(doc, events)
    path = str(tmp_path / f"facts.{fmt}")
    write_facts(table, fmt, path)
    assert store_rows(doc, read_fact_store(path, doc)).rows == table.rows


def test_unnamed_fact_is_labelled_by_its_template_and_literals_survive(tmp_path):
    doc = bind_text('PREFIX : <http://example.org/iptv#>\nCONSTRUCT FACT {?s :level ?v .} '
                    '(UNION (SINCE ?s :set ?v) (UNTIL ?s :unset ?v))', "q.tef")
    events = [(5, iri("x"), iri("set"), '"3"^^<http://www.w3.org/2001/XMLSchema#integer>'),
              (9, iri("x"), iri("set"), '"hé\\tllo"@fr')]
    table = fact_table(doc, events)
    assert {r.fact for r in table.rows} == {"?s :level ?v"}
    for fmt in ("parquet", "tsv", "jsonl"):
        path = str(tmp_path / f"t.{fmt}")
        write_facts(table, fmt, path)
        assert store_rows(doc, read_fact_store(path, doc)).rows == table.rows


def test_csv_table_and_one_file_per_fact(tmp_path):
    doc = load(UC3)
    events = list(read_stream(os.path.join(ROOT, "examples", "programs", "events.tsv")))
    table = fact_table(doc, events)
    write_facts(table, "csv", str(tmp_path / "all.csv"))
    lines = (tmp_path / "all.csv").read_text().splitlines()
    assert lines[0] == "fact,user,channel,program,start,end"
    assert "UserFact,http://example.org/iptv#Bob,http://example.org/iptv#A,,9000," in lines
    assert "ViewShipFact,http://example.org/iptv#Alice,,http://example.org/iptv#News1,1000,10000" in lines
    written = write_facts(table, "tsv", str(tmp_path / "per") + "/")
    assert sorted(os.path.basename(p) for p in written) == ["ProgramFact.tsv", "UserFact.tsv", "ViewShipFact.tsv"]
    assert (tmp_path / "per" / "ProgramFact.tsv").read_text().splitlines()[0] == "?fact\t?channel\t?program\t?start\t?end"
    with pytest.raises(TefqError, match="CSV fact table cannot be read back"):
        read_fact_store(str(tmp_path / "all.csv"), doc)


def test_bad_stored_rows_are_named(tmp_path):
    doc = load(UC3)
    bad = tmp_path / "bad.tsv"
    bad.write_text('?fact\t?user\t?channel\t?start\t?end\n"UserFact"\t<http://x/u>\t<http://x/c>\t10\t5\n')
    with pytest.raises(TefqError, match="row 2: end 5 is not after start 10"):
        read_fact_store(str(bad), doc)
    bad.write_text('?fact\t?user\t?start\t?end\n"Nope"\t<http://x/u>\t10\t\n')
    with pytest.raises(TefqError, match="fact 'Nope' is not defined"):
        read_fact_store(str(bad), doc)


# ---------------------------------------------------------------- the command
def tefq(*args: str, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tefq", *args], capture_output=True, text=True, cwd=cwd)


def test_tefq_facts_command(tmp_path):
    events = os.path.join(ROOT, "examples", "programs", "events.tsv")
    out = tefq("facts", UC3, "--stream", events, "--where", "user=<http://example.org/iptv#Bob>", "--format", "tsv",
               cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1] == '"UserFact"\t<http://example.org/iptv#Bob>\t<http://example.org/iptv#A>\t\t9000\t'
    assert len(out.stdout.splitlines()) == 6 and "5 intervals (2 open)" in out.stderr
    stored = tefq("facts", UC3, "--stream", events, "--out", "t.parquet", cwd=str(tmp_path))
    assert stored.returncode == 0, stored.stderr
    again = tefq("facts", UC3, "--facts", "t.parquet", "--format", "csv", cwd=str(tmp_path))
    direct = tefq("facts", UC3, "--stream", events, cwd=str(tmp_path))
    assert again.returncode == 0 and again.stdout == direct.stdout
    bad = tefq("facts", UC3, "--stream", events, "--where", "nobody=<http://x>", cwd=str(tmp_path))
    assert bad.returncode == 2 and "--where" in bad.stderr and "Traceback" not in bad.stderr
