"""Timestamps: integer ms or ISO-8601 (no zone = UTC), exact to the millisecond."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tefq.io.timestamps import format_iso_ms, literal_ms, parse_iso_ms, parse_ts

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@given(st.integers(min_value=-62_000_000_000_000, max_value=253_000_000_000_000))
def test_format_then_parse_is_exact(ms: int) -> None:
    assert parse_iso_ms(format_iso_ms(ms)) == ms


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
       st.integers(min_value=-14 * 60, max_value=14 * 60))
def test_offsets_agree_with_datetime(local: datetime, offset_min: int) -> None:
    sign = "-" if offset_min < 0 else "+"
    zone = f"{sign}{abs(offset_min) // 60:02d}:{abs(offset_min) % 60:02d}"
    text = local.isoformat(timespec="microseconds") + zone
    aware = local.replace(tzinfo=timezone(timedelta(minutes=offset_min)))
    assert parse_ts(text) == (aware - EPOCH) // timedelta(milliseconds=1)


def test_forms() -> None:
    assert parse_ts(" 42 ") == 42 and parse_ts("-7") == -7
    assert parse_ts("1970-01-01T00:00:01") == 1000  # no zone: UTC
    assert parse_ts("1970-01-01T00:00:01Z") == parse_ts("1970-01-01T01:00:01+01:00") == 1000
    assert parse_ts("1970-01-01T00:00:00.1") == 100
    assert parse_ts("1970-01-01T24:00:00Z") == 86_400_000
    assert literal_ms('"33000"^^<http://www.w3.org/2001/XMLSchema#long>') == 33000
    assert literal_ms('"1970-01-01T00:00:02Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>') == 2000
    for bad in ("2024-01-01", "2024-01-01T25:00:00", "1970-01-01T24:00:01", "soon", "1.5", "",
                "2024-01-01T00:00:00+15:00"):
        with pytest.raises(ValueError):
            parse_ts(bad)
    with pytest.raises(ValueError):
        literal_ms('"1"^^<http://www.w3.org/2001/XMLSchema#double>')
