"""`tefq gen sensors` (tefq.sensors): a deterministic, structurally unstable water-network stream,
and the Strider-like example queries over it (examples/sensors/)."""
from __future__ import annotations

import argparse
import collections
from pathlib import Path

import pytest

from tefq.analysis import load
from tefq.errors import TefqError
from tefq.io.readers import read_stream
from tefq.oracle.windowed.runner import run
from tefq.sensors import model as m
from tefq.sensors.generator import SensorsConfig
from tefq.sensors.mix import parse_mix
from tefq.sensors.writer import generate
from tefq.spark.kernels.windowed.multiwindow_run import run_batched
from tests.support.paths import ROOT

EXAMPLES = sorted((ROOT / "examples" / "sensors").glob("*.rspql"))
UNSTABLE = "flow=8,pressure=1,chlorine=1;flow=1,pressure=1,chlorine=8"


def _files(out: Path) -> list[bytes]:
    return [f.read_bytes() for f in sorted((out / m.STREAM_DIR).iterdir())]


def _kinds(elements) -> list[str]:
    return [o.rsplit("#", 1)[-1][:-1] for _, _, p, o in elements if p == m.iri(m.RDF_TYPE)]


@pytest.fixture(scope="module")
def small_stream(tmp_path_factory) -> list:
    out = tmp_path_factory.mktemp("sensors")
    generate(SensorsConfig(events=4_500, sensors=24, mix=UNSTABLE, seed=5, rate=5), str(out), "tsv")
    return list(read_stream(str(out / m.STREAM_DIR)))


@pytest.mark.parametrize("fmt", ["parquet", "tsv"])
def test_same_seed_same_files_other_seed_other_files(tmp_path, fmt: str) -> None:
    cfg = SensorsConfig(events=3_000, sensors=12, mix=UNSTABLE, seed=1)
    generate(cfg, str(tmp_path / "a"), fmt)
    generate(cfg, str(tmp_path / "b"), fmt)
    generate(SensorsConfig(events=3_000, sensors=12, mix=UNSTABLE, seed=2), str(tmp_path / "c"), fmt)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert _files(tmp_path / "a") != _files(tmp_path / "c")


@pytest.mark.parametrize("fmt", ["parquet", "csv", "nq", "trig"])
def test_every_format_reads_back_the_same_elements(tmp_path, fmt: str) -> None:
    cfg = SensorsConfig(events=900, sensors=6, seed=3)
    generate(cfg, str(tmp_path / "tsv"), "tsv")
    generate(cfg, str(tmp_path / fmt), fmt)
    want = list(read_stream(str(tmp_path / "tsv" / m.STREAM_DIR)))
    assert len(want) == 900 and list(read_stream(str(tmp_path / fmt / m.STREAM_DIR))) == want


def test_an_observation_is_nine_triples_on_one_timestamp(small_stream) -> None:
    k = m.TRIPLES_PER_OBSERVATION
    assert len(small_stream) == 4_500 and len(small_stream) % k == 0
    first = small_stream[:k]
    assert [p for _, _, p, _ in first] == [m.iri(p) for p in m.PREDICATES]
    assert len({ts for ts, *_ in first}) == 1
    ts = [e[0] for e in small_stream]
    assert ts == sorted(ts) and ts[0] >= m.EPOCH_MS
    value = first[4][3]
    assert value.endswith(f"^^<{m.XSD}double>") and float(value[1:value.index('"', 1)]) >= 0


def test_the_mix_schedule_changes_the_proportions(small_stream) -> None:
    kinds = _kinds(small_stream)
    half = len(kinds) // 2
    early, late = collections.Counter(kinds[:half]), collections.Counter(kinds[half:])
    assert early["FlowObservation"] > 3 * early["ChlorineObservation"]
    assert late["ChlorineObservation"] > 3 * late["FlowObservation"]


def test_a_stable_mix_keeps_them(tmp_path) -> None:
    generate(SensorsConfig(events=9_000, sensors=9, seed=4), str(tmp_path), "parquet")
    kinds = _kinds(read_stream(str(tmp_path / m.STREAM_DIR)))
    for part in (kinds[:500], kinds[500:]):
        shares = collections.Counter(part)
        assert all(0.2 < shares[c] / len(part) < 0.45 for c in m.CLASSES)


def test_sensors_measure_their_own_kind_on_their_pipe(small_stream) -> None:
    made_by = {s: o for _, s, p, o in small_stream if p == m.iri(m.SOSA + "madeBySensor")}
    kind = {s: o for _, s, p, o in small_stream if p == m.iri(m.RDF_TYPE)}
    for obs, sensor in made_by.items():
        number = int(sensor.rsplit("sensor", 1)[1][:-1])
        assert kind[obs] == m.iri(m.NS + m.CLASSES[m.kind_of(number)])
    hosted = {(s, o) for _, s, p, o in small_stream if p == m.iri(m.SOSA + "isHostedBy")}
    assert all(o == m.iri(f"{m.NS}pipe{m.pipe_of(int(s.rsplit('sensor', 1)[1][:-1]))}") for s, o in hosted)


@pytest.mark.parametrize("schedule, message", [("flow=1,oil=2", "unknown observation kind"),
                                               ("flow=0", "positive weight"), ("flow=1;;chlorine=1", "empty phase"),
                                               ("flow:1", "KIND=WEIGHT")])
def test_bad_mix_is_a_located_error(schedule: str, message: str) -> None:
    with pytest.raises(TefqError, match=message) as e:
        parse_mix(schedule)
    assert e.value.file == "--mix" and e.value.column >= 1


def test_random_mix_is_seeded() -> None:
    a, b = parse_mix("random:4", 1), parse_mix("random:4", 1)
    assert a.shape == (4, 3) and (a == b).all() and not (a == parse_mix("random:4", 2)).all()
    assert abs(a.sum(axis=1) - 1).max() < 1e-9


@pytest.mark.parametrize("cfg, option", [(SensorsConfig(events=5), "--events"), (SensorsConfig(sensors=2), "--sensors"),
                                         (SensorsConfig(rate=0), "--rate"), (SensorsConfig(seed=-1), "--seed")])
def test_bad_options_are_errors(cfg: SensorsConfig, option: str) -> None:
    with pytest.raises(TefqError) as e:
        cfg.check()
    assert e.value.file == option


def test_the_command_writes_the_stream(tmp_path, capsys) -> None:
    from tefq.iptv.cli import register as register_iptv
    from tefq.sensors.cli import register

    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command")
    register_iptv(commands)  # `gen` exists already: sensors joins iptv under it
    register(commands)
    args = parser.parse_args(["gen", "sensors", "--out", str(tmp_path), "--events", "1800", "--sensors", "6",
                              "--mix", UNSTABLE, "--format", "tsv"])
    assert args.func(args) == 0
    assert "1800 elements (200 observations" in capsys.readouterr().err
    with pytest.raises(TefqError, match="already holds"):
        args.func(args)
    alone = argparse.ArgumentParser().add_subparsers()
    register(alone)  # without iptv, `gen` is created
    assert "gen" in alone.choices


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_queries_parse_and_equal_the_oracle(path: Path, small_stream) -> None:
    d = load(str(path))
    (q,) = d.queries
    assert q.windows[0].iri == m.STREAM and (q.windows[0].range_ms, q.windows[0].step_ms) == (60_000, 10_000)
    want = run(d, small_stream)
    assert want[0].rows, "every example query has rows on the sample stream"
    for order in ("static", "adaptive"):
        got = run_batched(d, small_stream, join_order=order, batch_rows=5_000)
        assert got[0].sorted_rows() == want[0].sorted_rows() and got.ticks == want.ticks


def test_examples_cover_two_to_nine_patterns_stars_chains_and_a_union() -> None:
    from tefq.spark.kernels.windowed.algebra import bgp_nodes
    from tefq.spark.kernels.windowed.multiwindow import MultiWindowEvaluator

    sizes = []
    for path in EXAMPLES:
        (q,) = load(str(path)).queries
        bgps = bgp_nodes(MultiWindowEvaluator(q.sparql).algebra)
        sizes.append(sum(len(b.triples) for b in bgps))
        if "union" in path.stem:
            assert len(bgps) == 2
    assert min(sizes) == 2 and max(sizes) == 9 and len(EXAMPLES) == 9
