"""The IPTV generator: paper-sized defaults, realistic shape, consistency and determinism."""
from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest

from tefq.errors import TefqError
from tefq.iptv import model as m
from tefq.iptv import sessions as S
from tefq.iptv.generator import IptvConfig, simulate_log
from tefq.iptv.writer import generate

NS = m.NS
SMALL = IptvConfig(events=20_000, users=3_000, channels=40, days=1.0, seed=7)


def read_dir(d: str) -> list[tuple[int, str, str, str]]:
    rows: list[tuple[int, str, str, str]] = []
    for name in sorted(os.listdir(d)):
        t = pq.read_table(os.path.join(d, name))
        rows.extend(zip(t["ts"].to_pylist(), t["s"].to_pylist(), t["p"].to_pylist(), t["o"].to_pylist()))
    return rows


def file_ts(d: str) -> list[list[int]]:
    return [pq.read_table(os.path.join(d, n))["ts"].to_pylist() for n in sorted(os.listdir(d))]


@pytest.fixture(scope="module")
def default_data(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("iptv") / "default")
    generate(IptvConfig(), out, epg=True)
    return out


@pytest.fixture(scope="module")
def default_log(default_data) -> list[tuple[int, str, str, str]]:
    return read_dir(os.path.join(default_data, "log"))


def check_viewing(rows) -> tuple[int, int]:
    """Replay the log: a join needs the user to watch nothing, a quit closes the channel the user
    watches. Returns (sessions opened, sessions still open)."""
    watching: dict[str, str] = {}
    opened = 0
    for ts, s, p, o in rows:
        if p == f"<{NS}join>":
            assert s not in watching, f"{s} joins {o} at {ts} while watching {watching.get(s)}"
            watching[s] = o
            opened += 1
        else:
            assert p == f"<{NS}quit>", p
            assert watching.get(s) == o, f"{s} quits {o} at {ts} without an open join"
            del watching[s]
    return opened, len(watching)


# ---------------------------------------------------------------- the paper's data set
def test_defaults_reproduce_the_paper_data_set(default_log):
    assert len(default_log) == 100_000
    users = {s for _, s, _, _ in default_log}
    channels = {o for _, _, _, o in default_log}
    assert len(users) == 22_872
    assert len(channels) == 234
    assert all(u.startswith(f"<{NS}u") for u in users) and all(c.startswith(f"<{NS}ch") for c in channels)
    first, last = default_log[0][0], default_log[-1][0]
    assert first >= m.EPOCH_MS
    assert 0.9 * m.DAY <= last - m.EPOCH_MS <= 1.15 * m.DAY  # about one day


def test_log_is_consistent_and_time_ordered(default_data, default_log):
    per_file = file_ts(os.path.join(default_data, "log"))
    assert len(per_file) >= 5  # several files, so a file source can stream them
    flat = [t for f in per_file for t in f]
    assert flat == sorted(flat)  # each file sorted and files in time order
    opened, still_open = check_viewing(default_log)
    assert opened > 40_000 and 0 < still_open < opened // 10


def test_switches_quit_and_join_in_the_same_millisecond(default_log):
    switches = sum(1 for a, b in zip(default_log, default_log[1:])
                   if a[1] == b[1] and a[0] == b[0] and a[2].endswith("quit>") and b[2].endswith("join>"))
    assert switches > 5_000


def test_calibration_uc2_over_uc1_refresh_bindings(default_log):
    ts = np.array([r[0] for r in default_log], dtype=np.int64)
    users = {u: i for i, u in enumerate(sorted({r[1] for r in default_log}))}
    chans = {c: i for i, c in enumerate(sorted({r[3] for r in default_log}))}
    ident = np.array([users[r[1]] * len(chans) + chans[r[3]] for r in default_log], dtype=np.int64)
    joins = np.array([r[2].endswith("join>") for r in default_log])
    ses = S.sessions(ident, ts, joins)
    per_fact = S.refresh_per_fact(ses, int(ts[0]), int(ts[-1]), 10_000)
    per_channel = S.refresh_per_group(ses, ses.ident % len(chans), int(ts[0]), int(ts[-1]), 10_000)
    assert 5 <= per_fact / per_channel <= 20


def test_channel_popularity_is_zipf_like(default_log):
    joins = Counter(o for _, _, p, o in default_log if p.endswith("join>"))
    freq = np.array(sorted(joins.values(), reverse=True)[:100], dtype=float)
    slope = np.polyfit(np.log(np.arange(1, len(freq) + 1)), np.log(freq), 1)[0]
    assert -1.3 <= slope <= -0.7
    assert joins[f"<{NS}ch1>"] == max(joins.values())  # ch1 is the most popular


def test_evening_peak(default_log):
    hours = Counter(((ts - m.EPOCH_MS) // m.HOUR) % 24 for ts, _, p, _ in default_log if p.endswith("join>"))
    peak = max(hours, key=hours.get)
    assert 18 <= peak <= 23
    assert max(hours[h] for h in (2, 3, 4, 5)) < hours[peak] / 3


def test_session_lengths_are_heavy_tailed(default_log):
    start: dict[tuple[str, str], int] = {}
    lengths = []
    for ts, s, p, o in default_log:
        if p.endswith("join>"):
            start[(s, o)] = ts
        else:
            lengths.append((ts - start.pop((s, o))) / 1000)
    q = dict(zip(("min", "p10", "p50", "p90", "p99"), np.quantile(lengths, [0, 0.1, 0.5, 0.9, 0.99])))
    assert q["min"] >= 1                   # segments last at least a second
    assert q["p10"] < 30                   # zapping: seconds
    assert 5 * 60 <= q["p50"] <= 60 * 60   # a typical session: minutes
    assert q["p90"] > 3600 / 2 and q["p99"] > 2 * 3600  # long tail: hours


def test_sessions_last_days_when_the_data_spans_days():
    cfg = IptvConfig(events=60_000, users=6_000, channels=50, days=7.0, seed=1)
    chunks = list(simulate_log(cfg))
    ts = np.concatenate([c.ts for c in chunks])
    ident = np.concatenate([c.subject.astype(np.int64) * cfg.channels + c.obj for c in chunks])
    ses = S.sessions(ident, ts, np.concatenate([c.kind for c in chunks]) == 1)
    end = np.where(ses.end == S.OPEN_END, ts[-1], ses.end)
    assert (end - ses.start).max() > m.DAY
    assert 6 * m.DAY <= ts[-1] <= 8 * m.DAY


# ---------------------------------------------------------------- sizes, seeds, determinism
@pytest.mark.parametrize("events,users", [(1, 1), (7, 3), (1_000, 200), (12_345, 1_000)])
def test_exact_number_of_events(events, users):
    cfg = IptvConfig(events=events, users=users, channels=10, seed=3)
    chunks = list(simulate_log(cfg))
    assert sum(len(c) for c in chunks) == events
    assert all(len(c) for c in chunks)


def test_same_seed_same_bytes_other_seed_other_data(tmp_path):
    cfg = SMALL
    a, b, c = (str(tmp_path / x) for x in "abc")
    generate(cfg, a, epg=True)
    generate(cfg, b, epg=True)
    generate(IptvConfig(**{**cfg.__dict__, "seed": 8}), c, epg=True)
    for sub in ("log", "epg"):
        names = sorted(os.listdir(os.path.join(a, sub)))
        assert names == sorted(os.listdir(os.path.join(b, sub)))
        for n in names:
            with open(os.path.join(a, sub, n), "rb") as f1, open(os.path.join(b, sub, n), "rb") as f2:
                assert f1.read() == f2.read(), n
    assert read_dir(os.path.join(a, "log")) != read_dir(os.path.join(c, "log"))


def test_the_log_does_not_depend_on_the_program_guide(tmp_path):
    generate(SMALL, str(tmp_path / "with"), epg=True)
    generate(SMALL, str(tmp_path / "without"))
    assert read_dir(str(tmp_path / "with" / "log")) == read_dir(str(tmp_path / "without" / "log"))
    assert not (tmp_path / "without" / "epg").exists()


@pytest.mark.parametrize("seed", [11, 12])
def test_small_runs_at_the_paper_density_keep_every_user_and_channel(seed):
    cfg = IptvConfig(events=8_800, users=2_000, channels=60, seed=seed)
    chunks = list(simulate_log(cfg))
    assert len(np.unique(np.concatenate([c.subject for c in chunks]))) == 2_000
    assert len(np.unique(np.concatenate([c.obj for c in chunks]))) == 60


@pytest.mark.parametrize("kw,option", [({"events": 0}, "--events"), ({"users": 0}, "--users"),
                                       ({"channels": 1}, "--channels"), ({"days": 0}, "--days"),
                                       ({"events": 10, "users": 11}, "--users"), ({"seed": -1}, "--seed")])
def test_bad_sizes_are_user_errors(kw, option):
    with pytest.raises(TefqError) as e:
        IptvConfig(**kw).check()
    assert e.value.file == option


def test_too_few_events_for_all_users_is_reported(tmp_path, capsys):
    w = generate(IptvConfig(events=3_000, users=2_000, channels=60), str(tmp_path / "d"))
    assert w.users_seen < 2_000
    assert "users" in capsys.readouterr().err


def test_output_into_a_generated_directory_is_refused(tmp_path):
    generate(IptvConfig(events=100, users=10, channels=5), str(tmp_path / "d"))
    with pytest.raises(TefqError):
        generate(IptvConfig(events=100, users=10, channels=5), str(tmp_path / "d"))


# ---------------------------------------------------------------- the program guide
def test_program_guide(default_data, default_log):
    rows = read_dir(os.path.join(default_data, "epg"))
    on_air: dict[str, tuple[str, int]] = {}
    channels_of: dict[str, set[str]] = {}
    lengths, gaps = [], 0
    last_finish: dict[str, int] = {}
    for ts, ch, p, prog in rows:
        if p == f"<{NS}start>":
            assert ch not in on_air, f"{ch} starts {prog} while showing {on_air.get(ch)}"
            if ch in last_finish and last_finish[ch] < ts:
                gaps += 1
                assert ts - last_finish[ch] <= m.GAP_MAX_MS
            on_air[ch] = (prog, ts)
            channels_of.setdefault(prog, set()).add(ch)
        else:
            assert p == f"<{NS}finish>" and on_air.get(ch, (None,))[0] == prog, (ts, ch, prog)
            started = on_air.pop(ch)[1]
            if started > m.EPOCH_MS:  # the first program on a channel is cut by the start of the data
                lengths.append(ts - started)
            last_finish[ch] = ts
    assert len({ch for _, ch, _, _ in rows}) == 234
    assert min(lengths) >= 5 * m.MINUTE and max(lengths) <= 3 * m.HOUR
    assert gaps > 0
    assert sum(1 for chs in channels_of.values() if len(chs) > 1) > 10  # re-runs on other channels
    assert rows[-1][0] <= default_log[-1][0]  # the guide covers the log's time span, no more
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)


# ---------------------------------------------------------------- sessions and refresh counts
def spec_example() -> S.Sessions:
    """Spec §10: Alice join A @1, Bob join B @3, Cathy join B @7, David join B @8, Bob quit B @9,
    Eric join A @11, Fiona join B @12, Alice quit A @14 (seconds). Identity = user*2 + channel."""
    ev = [(1, 0, 0, 1), (3, 1, 1, 1), (7, 2, 1, 1), (8, 3, 1, 1), (9, 1, 1, 0), (11, 4, 0, 1), (12, 5, 1, 1),
          (14, 0, 0, 0)]
    ts = np.array([e[0] * 1000 for e in ev], dtype=np.int64)
    ident = np.array([e[1] * 2 + e[2] for e in ev], dtype=np.int64)
    return S.sessions(ident, ts, np.array([e[3] == 1 for e in ev]))


def test_refresh_counts_of_the_spec_example():
    ses = spec_example()
    assert len(ses) == 6 and int((ses.end != S.OPEN_END).sum()) == 2
    assert S.refresh_per_fact(ses, 1000, 14000, 5000) == 9
    assert S.refresh_per_group(ses, ses.ident % 2, 1000, 14000, 5000) == 6


def test_sequential_semantics_coalesce_and_unmatched():
    # join @1, quit @5, rejoin @5 (coalesces), join @6 (already open), quit @9; quit of another @2
    ts = np.array([1, 2, 5, 5, 6, 9], dtype=np.int64)
    ident = np.array([0, 1, 0, 0, 0, 0], dtype=np.int64)
    opens = np.array([True, False, False, True, True, False])
    ses = S.sessions(ident, ts, opens)
    assert list(zip(ses.ident, ses.start, ses.end)) == [(0, 1, 9)]
    assert ses.unmatched_closes == 1


def test_concurrency():
    ses = spec_example()
    mean, top = S.concurrency(ses, 1000, 14000)
    assert top == 5  # Alice, Cathy, David, Eric, Fiona from 12 s to 14 s
    assert 0 < mean < top
