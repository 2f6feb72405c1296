"""parse_duration: the duration spellings users write, in milliseconds."""
from __future__ import annotations

import pytest

from tefq.analysis import parse_duration
from tefq.errors import TefqError


@pytest.mark.parametrize("text, ms", [
    ("10s", 10_000), ("500ms", 500), ("1m", 60_000), ("1h", 3_600_000), ("2d", 172_800_000),
    ("0.5s", 500), ("PT10S", 10_000), ("PT1M", 60_000), ("P1D", 86_400_000), ("PT0.5S", 500),
    ("pt1h30m", 5_400_000), ("P1DT1S", 86_401_000), ("P1W", 604_800_000), (" 10S ", 10_000), ("0", 0),
])
def test_parse_duration_table(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


def test_paper_p10s_is_ten_seconds_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_duration("P10S", "q.tef", 3, 7) == 10_000
    err = capsys.readouterr().err
    assert "q.tef:3:7: warning:" in err and "PT10S" in err


@pytest.mark.parametrize("text, words", [
    ("10", "bad duration"), ("10x", "bad duration"), ("PT", "bad duration"), ("", "bad duration"),
    ("P1M", "months"), ("P1Y", "years"), ("0.0001s", "whole number of milliseconds"), ("-5s", "bad duration"),
])
def test_bad_durations(text: str, words: str) -> None:
    with pytest.raises(TefqError) as info:
        parse_duration(text, "--window", 0, 0)
    assert words in info.value.message and info.value.file == "--window"
