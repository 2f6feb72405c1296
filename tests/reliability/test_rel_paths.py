"""Issue 17, faults 4 and 5 on tefq's own readers: stream paths are taken literally (glob characters
are part of the name) and zone-less timestamps are UTC whatever the machine's time zone."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tefq.io.readers import literal_path_pattern, read_stream

pytestmark = pytest.mark.reliability

ROW = "1000\t<http://x/s>\t<http://x/p>\t<http://x/o>\n"


@pytest.mark.parametrize("name", ["s[1].tsv", "s*.tsv", "s?.tsv", "s{a,b}.tsv", "a:b.tsv"])
def test_glob_characters_are_part_of_the_name(tmp_path, name) -> None:
    (tmp_path / name).write_text("ts\ts\tp\to\n" + ROW)
    (tmp_path / "s1.tsv").write_text("ts\ts\tp\to\n" + ROW.replace("1000", "2000"))  # what a pattern would match
    assert [e[0] for e in read_stream(str(tmp_path / name))] == [1000]


@pytest.mark.parametrize("name", ["s[1].tsv", "s*.tsv", "s?.tsv", "s{a,b}.tsv", "plain.tsv"])
def test_literal_path_pattern_matches_only_itself(name) -> None:
    """For Hadoop's glob (Spark's pathGlobFilter): every special character escaped by a backslash."""
    pattern = literal_path_pattern(name)
    assert re.sub(r"\\(.)", r"\1", pattern) == name
    assert not re.search(r"(?<!\\)[\[\]*?{}]", pattern), pattern


def test_zone_less_timestamps_are_utc_in_any_time_zone(tmp_path) -> None:
    f = tmp_path / "s.tsv"
    f.write_text("ts\ts\tp\to\n" + ROW.replace("1000", "1970-01-01T09:00:00"))
    code = f"from tefq.io.readers import read_stream; print(next(read_stream({str(f)!r}))[0])"
    for tz in ("UTC", "Asia/Tokyo", "America/New_York"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "TZ": tz}, check=True).stdout
        assert int(out) == 9 * 3_600_000, tz
