"""`tefq publish` into a directory (issue 24): one file per interval, each written hidden and then
renamed, every row of the input once and in order; the schedule, the rate's fractions and the
restamping checked on a fake clock (no timed asserts)."""
from __future__ import annotations

import argparse
import os

import pytest

from tefq.errors import TefqError
from tefq.io.readers import read_stream
from tefq.iptv.generator import IptvConfig
from tefq.iptv.writer import generate
from tefq.publish import Clock, Pace, Restamper, publish, register


class FakeClock(Clock):
    """Time moves only when the publisher sleeps (or when `tick` is called)."""

    def __init__(self, wall0_ms: int = 1_700_000_000_000) -> None:
        self.now, self.wall0_ms, self.sleeps = 0.0, wall0_ms, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def wall_ms(self) -> int:
        return self.wall0_ms + round(self.now * 1000)


@pytest.fixture(scope="module")
def iptv_log(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("gen") / "iptv")
    generate(IptvConfig(events=1300, users=40, channels=5, days=0.02, seed=3), out, fmt="tsv")
    return os.path.join(out, "log")


def test_directory_gets_one_hidden_then_renamed_file_per_interval(iptv_log, tmp_path, monkeypatch):
    renames: list[tuple[str, str, bool]] = []
    real_replace = os.replace

    def replace(src, dst):  # the rename of a complete file over nothing: what a follower may see
        renames.append((os.path.basename(src), os.path.basename(dst), os.path.exists(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    out, clock = tmp_path / "live", FakeClock()
    report = publish(iptv_log, str(out), Pace(rate=1000, interval_ms=500), clock=clock)
    want = list(read_stream(iptv_log))
    names = sorted(os.listdir(out))
    assert names == [f"part-{i:08d}.tsv" for i in range(3)]  # 1300 rows, 500 per interval
    assert [s.events for s in report.intervals] == [500, 500, 300] and report.events == len(want)
    assert renames == [(f".{n}.tmp", n, False) for n in names]
    assert list(read_stream(str(out))) == want  # every row once, in order
    assert [s.due for s in report.intervals] == [0.5, 1.0, 1.5] and report.behind == 0
    assert clock.sleeps == [0.5, 0.5, 0.5]


def test_a_second_publisher_numbers_on(iptv_log, tmp_path):
    out = str(tmp_path / "live")
    publish(iptv_log, out, Pace(rate=1000, interval_ms=1000), limit=1000, clock=FakeClock())
    publish(iptv_log, out, Pace(rate=1000, interval_ms=1000), limit=1000, clock=FakeClock(), fmt="parquet")
    assert sorted(os.listdir(out)) == ["part-00000000.tsv", "part-00000001.parquet"]


def test_fractional_rates_carry_over():
    sizes = Pace(rate=3, interval_ms=500).sizes()
    first = [next(sizes) for _ in range(8)]
    assert first == [1, 2, 1, 2, 1, 2, 1, 2] and sum(first) == 12  # 3/s over 4 s
    sizes = Pace(rate=1, interval_ms=300).sizes()
    assert sum(next(sizes) for _ in range(10)) == 3  # empty intervals in between


def test_unthrottled_goes_out_in_chunks_without_sleeping(iptv_log, tmp_path, monkeypatch):
    monkeypatch.setattr("tefq.publish.UNTHROTTLED_CHUNK", 400)
    clock = FakeClock()
    report = publish(iptv_log, str(tmp_path / "live"), clock=clock)
    assert [s.events for s in report.intervals] == [400, 400, 400, 100] and clock.sleeps == []


def test_a_late_publisher_sends_at_once_and_says_so(iptv_log, tmp_path):
    class Slow(FakeClock):  # each write takes 0.8 s of a 0.5 s interval
        def wall_ms(self) -> int:
            self.now += 0.8
            return super().wall_ms()

    lines: list[str] = []
    report = publish(iptv_log, str(tmp_path / "live"), Pace(rate=1000, interval_ms=500), clock=Slow(),
                     progress=lines.append)
    assert report.events == 1300 and report.behind > 0
    assert "behind schedule" in lines[-1] and "1,300 events in 3 intervals" in lines[-1]


def test_restamp_now_stamps_each_interval_with_the_time_it_covers():
    stamp = Restamper("now", 1000)
    chunk = [(5, "<a>", "<p>", "<o>")] * 4
    first = stamp(chunk, 10_000)
    assert [t for t, *_ in first] == [9_250, 9_500, 9_750, 10_000]
    behind = stamp(chunk, 10_400)  # sent early: never before the last stamp
    assert [t for t, *_ in behind] == [10_100, 10_200, 10_300, 10_400]


def test_restamp_shift_keeps_the_gaps():
    stamp = Restamper("shift", 1000)
    assert [t for t, *_ in stamp([(100, "a", "p", "o"), (250, "a", "p", "o")], 10_000)] == [10_000, 10_150]
    assert [t for t, *_ in stamp([(900, "a", "p", "o")], 99_999)] == [10_800]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(["publish", *argv])


def test_bad_options_are_located_errors(iptv_log, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    for argv, where in ((["--interval", "0s"], "--interval"), (["--interval", "soon"], "--interval"),
                        (["--rate", "-5"], "--rate")):
        args = parse([iptv_log, "--to", str(tmp_path / "out"), *argv])
        with pytest.raises(TefqError) as e:
            args.func(args)
        assert e.value.file == where
    args = parse([iptv_log, "--to", str(target)])
    with pytest.raises(TefqError, match="names a file"):
        args.func(args)
    args = parse([iptv_log, "--to", "redis://127.0.0.1:1/k", "--format", "tsv"])
    with pytest.raises(TefqError, match="--format is for a directory"):
        args.func(args)


def test_phase_ends_every_interval_at_a_wall_clock_multiple_plus_the_phase(iptv_log, tmp_path):
    clock = FakeClock(wall0_ms=1_700_000_000_300)  # 300 ms past a whole second
    report = publish(iptv_log, str(tmp_path / "live"), Pace(rate=1000, interval_ms=1000, phase_ms=50),
                     restamp="now", clock=clock)
    assert [s.last_ts % 1000 for s in report.intervals] == [50, 50]  # each sent 50 ms after a second
    assert clock.sleeps == [0.75, 1.0]  # the first interval is cut short to reach the phase
    assert [s.events for s in report.intervals] == [1000, 300]


def test_restamp_now_never_ties_across_intervals():
    stamp = Restamper("now", 1000)
    chunk = [(5, "<a>", "<p>", "<o>")] * 5000  # five elements a millisecond
    first, second = stamp(chunk, 10_000), stamp(chunk, 11_000)
    assert first[-1][0] == 10_000 and second[-1][0] == 11_000
    assert first[0][0] > 9_000 and second[0][0] > first[-1][0]  # each interval after the one before
    assert [t for t, *_ in second] == sorted(t for t, *_ in second)


def test_a_phase_outside_the_interval_is_a_located_error(iptv_log, tmp_path):
    for phase in ("1s", "-5ms", "soon"):  # the interval is 1 s
        args = parse([iptv_log, "--to", str(tmp_path / "out"), "--rate", "10", f"--phase={phase}"])
        with pytest.raises(TefqError) as e:
            args.func(args)
        assert e.value.file == "--phase"
