"""The IPTV viewing model: every distribution the generator draws from, in one place.

All numbers here are documented in docs/iptv.md; the tests check the shapes they promise.
Times are milliseconds relative to the start of the data (EPOCH_MS).
"""
from __future__ import annotations

import numpy as np

# 2013-11-04T00:00:00Z, a Monday in the ViSTA-TV project's time: the first day of every data set.
EPOCH_MS = 1_383_523_200_000
MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR

NS = "http://example.org/iptv#"

# Channel popularity: P(rank r) ~ 1 / r**ZIPF_S; ch1 is the most popular channel.
ZIPF_S = 1.0

# A visit (TV switched on) is a run of channel segments; each segment is a zap or a watch.
P_ZAP = 0.35                      # a segment is a zap (seconds) rather than a watch
ZAP_MEDIAN_MS, ZAP_SIGMA = 8_000, 0.9          # log-normal, clipped to [1 s, 5 min]
ZAP_MIN_MS, ZAP_MAX_MS = 1_000, 5 * MINUTE
WATCH_MEDIAN_MS, WATCH_SIGMA = 45 * MINUTE, 1.0  # log-normal, clipped to [1 min, 12 h]
WATCH_MIN_MS, WATCH_MAX_MS = MINUTE, 12 * HOUR
P_LEFT_ON = 0.02                  # a watch where the set is left on: Pareto tail, hours to days
LEFT_ON_SCALE_MS, LEFT_ON_ALPHA = HOUR, 1.5
LEFT_ON_MAX_MS = 10 * DAY
P_END_AFTER_ZAP = 0.20            # the visit ends (quit, no join) after a zap ...
P_END_AFTER_WATCH = 0.75          # ... or after a watch; otherwise the user switches channel

# Share of the time span in which every user's first visit starts (the rest is margin so that
# truncating the log at exactly N events keeps every user).
FIRST_VISIT_SHARE = 0.97


def segments_per_visit() -> float:
    """Expected number of channel segments in one visit (geometric)."""
    q = P_ZAP * P_END_AFTER_ZAP + (1 - P_ZAP) * P_END_AFTER_WATCH
    return 1.0 / q


def daily_profile() -> np.ndarray:
    """Relative viewing intensity per minute of the (UTC) day: night trough, morning and lunch
    bumps, an evening peak around 20:30."""
    h = np.arange(1440) / 60.0

    def bump(centre: float, width: float, height: float) -> np.ndarray:
        d = np.minimum(np.abs(h - centre), 24 - np.abs(h - centre))  # wrap around midnight
        return height * np.exp(-0.5 * (d / width) ** 2)

    return 0.04 + bump(7.5, 1.0, 0.25) + bump(12.5, 1.5, 0.30) + bump(20.5, 2.2, 1.0)


class Profile:
    """Cumulative viewing intensity over time, normalised to 1 per day, and its inverse: drawing
    visit starts with it gives them the daily profile's shape."""

    STEPS = 1 << 16  # resolution of the inverse table

    def __init__(self) -> None:
        rate = daily_profile()
        cum = np.concatenate([[0.0], np.cumsum(rate)])
        self.cum = cum / cum[-1]
        self.slope = np.diff(self.cum)                     # per minute
        grid = np.arange(1441, dtype=np.float64) * MINUTE
        # inverse on a uniform grid of cumulative values: O(1) lookups instead of a search
        self.inv = np.interp(np.linspace(0.0, 1.0, self.STEPS + 1), self.cum, grid)

    def cumulative(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        days = np.floor(t / DAY)
        minutes = (t - days * DAY) / MINUTE
        i = np.minimum(minutes.astype(np.int64), 1439)
        return days + self.cum[i] + self.slope[i] * (minutes - i)

    def inverse(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64)
        days = np.floor(v)
        x = (v - days) * self.STEPS
        i = np.minimum(x.astype(np.int64), self.STEPS - 1)
        return days * DAY + self.inv[i] + (self.inv[i + 1] - self.inv[i]) * (x - i)


def zipf_cdf(n: int) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** ZIPF_S
    c = np.cumsum(w)
    return c / c[-1]


def draw_channels(rng: np.random.Generator, cdf: np.ndarray, n: int) -> np.ndarray:
    """n channel indexes (0-based popularity ranks) from the Zipf law."""
    idx = np.searchsorted(cdf, rng.random(n), side="right")
    return np.minimum(idx, len(cdf) - 1).astype(np.int32)


def draw_segments(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(is_zap, length_ms) for n new channel segments; lengths are heavy-tailed and >= 1 s."""
    zap = rng.random(n) < P_ZAP
    length = np.exp(np.log(WATCH_MEDIAN_MS) + WATCH_SIGMA * rng.standard_normal(n))
    np.clip(length, WATCH_MIN_MS, WATCH_MAX_MS, out=length)
    z = np.flatnonzero(zap)
    length[z] = np.clip(np.exp(np.log(ZAP_MEDIAN_MS) + ZAP_SIGMA * rng.standard_normal(z.size)), ZAP_MIN_MS, ZAP_MAX_MS)
    left_on = np.flatnonzero(~zap & (rng.random(n) < P_LEFT_ON))
    tail = LEFT_ON_SCALE_MS * (1.0 + rng.pareto(LEFT_ON_ALPHA, left_on.size))
    length[left_on] = np.minimum(tail, LEFT_ON_MAX_MS)
    return zap, length.astype(np.int64)


# ---------------------------------------------------------------- the program guide
# Program lengths in minutes (5 min to 3 h) and how often each occurs.
PROGRAM_MINUTES = np.array([5, 10, 15, 25, 30, 45, 50, 60, 90, 100, 120, 150, 180], dtype=np.int64)
PROGRAM_WEIGHTS = np.array([3, 4, 6, 8, 14, 10, 8, 14, 9, 6, 8, 5, 5], dtype=np.float64)
P_GAP = 0.05                      # a gap (off air) of 1 to 30 minutes after a program
GAP_MIN_MS, GAP_MAX_MS = MINUTE, 30 * MINUTE
P_REAIR = 0.10                    # a program is a re-run of one seen recently on another channel
REAIR_POOL = 512                  # how many recent programs a re-run is chosen from
