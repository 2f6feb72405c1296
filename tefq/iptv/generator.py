"""Simulate IPTV viewing (join/quit log) and a program guide, in time slices of bounded size.

The simulation keeps one state row per user (current channel, time of its next event) and per
channel (program on air, its end), and advances slice by slice: every user whose next event falls
in the slice fires, possibly several times. Memory is O(users + events per slice), so any number
of events streams out. Everything is drawn from one seeded generator per stream in a fixed order,
so the same arguments give the same events.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from tefq.errors import TefqError
from tefq.iptv import model as m

NEVER = np.iinfo(np.int64).max
TARGET_EVENTS_PER_SLICE = 400_000

# Event kinds; the order within one millisecond of one subject is quit/finish before join/start.
QUIT, JOIN = 0, 1


@dataclass(frozen=True)
class IptvConfig:
    events: int = 100_000
    users: int = 22_872
    channels: int = 234
    days: float = 1.0
    seed: int = 0

    def check(self) -> None:
        if self.events < 1:
            raise TefqError(f"--events must be at least 1, got {self.events}", file="--events")
        if self.users < 1:
            raise TefqError(f"--users must be at least 1, got {self.users}", file="--users")
        if self.channels < 2:
            raise TefqError(f"--channels must be at least 2, got {self.channels}", file="--channels")
        if not self.days > 0:
            raise TefqError(f"--days must be positive, got {self.days}", file="--days")
        if self.users > self.events:
            raise TefqError(f"--users ({self.users}) exceeds --events ({self.events}): every user needs an event",
                            file="--users")
        if self.seed < 0:
            raise TefqError(f"--seed must be non-negative, got {self.seed}", file="--seed")


@dataclass
class Chunk:
    """Events in time order: `ts` (ms since EPOCH_MS), subject and object indexes, kind (QUIT/JOIN)."""

    ts: np.ndarray
    subject: np.ndarray
    obj: np.ndarray
    kind: np.ndarray

    def __len__(self) -> int:
        return len(self.ts)


def _rng(seed: int, stream: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, stream])))


def _sorted_chunk(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> Chunk:
    """Events by (time, subject, kind): quits before joins in one millisecond. Packed into one
    unique int64 key when it fits, because then any sort algorithm gives the same order (and
    numpy's fastest one is not stable)."""
    ts, subj, obj, kind = (np.concatenate([p[i] for p in parts]) for i in range(4))
    sbits = max(1, int(subj.max()).bit_length()) + 1
    if len(ts) and int(ts.max()).bit_length() + sbits <= 62:
        order = np.argsort((ts << sbits) | (subj.astype(np.int64) << 1) | kind)
    else:
        order = np.lexsort((kind, subj, ts))
    return Chunk(ts[order], subj[order], obj[order], kind[order])


def simulate_log(cfg: IptvConfig) -> Iterator[Chunk]:
    """The viewing log: exactly cfg.events join/quit events, in time-ordered chunks."""
    cfg.check()
    yield from _simulate(cfg, calibrate_rate(cfg), _rng(cfg.seed, 0), cfg.events, None)


def calibrate_rate(cfg: IptvConfig) -> float:
    """Visits per user per day (beyond each user's first) that put cfg.events events into the
    first cfg.days days. Long sessions, busy users and visits running past the end make this
    hard to get in closed form, so two small pilot runs measure how events grow with the rate."""
    per_user = cfg.events / cfg.users
    pilot_users = int(max(50, min(cfg.users, 150_000 / per_user)))
    pilot = IptvConfig(events=cfg.events, users=pilot_users, channels=cfg.channels, days=cfg.days, seed=cfg.seed)
    guess = max(per_user / (2.0 * m.segments_per_visit() * cfg.days), 0.05)
    counts = []
    for r in (guess * 0.5, guess):
        n = sum(len(c) for c in _simulate(pilot, r, _rng(cfg.seed, 2), None, cfg.days * m.DAY))
        counts.append(n / pilot_users)
    slope = (counts[1] - counts[0]) / (guess * 0.5)
    if slope <= 0:
        return guess
    return max(guess + (per_user - counts[1]) / slope, 0.01)


def _simulate(cfg: IptvConfig, rate: float, rng: np.random.Generator, max_events: int | None,
              end_ms: float | None) -> Iterator[Chunk]:
    """Run the model until max_events events or until time end_ms (whichever is given)."""
    prof = m.Profile()
    cdf = m.zipf_cdf(cfg.channels)
    U, span = cfg.users, cfg.days * m.DAY
    # Every user's first visit starts within the span (so every user appears); further visits
    # come at `rate` per user per day, shaped by the daily profile.
    first_span = prof.cumulative(np.array([m.FIRST_VISIT_SHARE * span]))[0]
    next_t = prof.inverse(rng.random(U) * first_span).astype(np.int64)
    cur = np.full(U, -1, dtype=np.int32)        # channel being watched, -1: set off
    zap = np.zeros(U, dtype=bool)               # the current segment is a zap
    forced = np.full(U, -1, dtype=np.int32)     # first channel, so that every channel appears
    n_forced = min(U, cfg.channels)
    forced[rng.permutation(U)[:n_forced]] = np.arange(n_forced, dtype=np.int32)

    n_slices = max(1, int(np.ceil(cfg.events / TARGET_EVENTS_PER_SLICE)))
    slice_ms = max(int(span // n_slices), 1)
    remaining = max_events if max_events is not None else NEVER
    k = 0
    while remaining > 0:
        hi = (k + 1) * slice_ms
        if end_ms is not None:
            if k * slice_ms >= end_ms:
                return
            hi = min(hi, int(end_ms))
        k += 1
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        while True:
            idx = np.flatnonzero(next_t < hi)
            if idx.size == 0:
                break
            t, c = next_t[idx], cur[idx]
            off = c < 0
            # A user with the set on ends the visit or switches to another channel.
            p_end = np.where(zap[idx], m.P_END_AFTER_ZAP, m.P_END_AFTER_WATCH)
            ends = ~off & (rng.random(idx.size) < p_end)
            switches = ~off & ~ends
            quits = ~off
            parts.append((t[quits], idx[quits].astype(np.int32), c[quits], np.full(int(quits.sum()), QUIT, np.int8)))
            # Joins: visit starts (forced first channel if any) and switches (never the same channel).
            joins = off | switches
            jdx, jt, jc = idx[joins], t[joins], c[joins]
            new = m.draw_channels(rng, cdf, jdx.size)
            same = np.flatnonzero(new == jc)
            if same.size:
                again = m.draw_channels(rng, cdf, same.size)
                again = np.where(again == jc[same], (jc[same] + 1) % cfg.channels, again)
                new[same] = again
            f = forced[jdx]
            new = np.where(f >= 0, f, new).astype(np.int32)
            forced[jdx] = -1
            parts.append((jt, jdx.astype(np.int32), new, np.full(jdx.size, JOIN, np.int8)))
            seg_zap, seg_len = m.draw_segments(rng, jdx.size)
            cur[jdx], zap[jdx], next_t[jdx] = new, seg_zap, jt + seg_len
            # Visit ends: the set stays off until the next visit (at least 1 s later, so no user
            # has two events in one millisecond except a switch's quit and join).
            edx, et = idx[ends], t[ends]
            gap = rng.standard_exponential(edx.size) / rate
            next_visit = prof.inverse(prof.cumulative(et) + gap).astype(np.int64)
            cur[edx], zap[edx], next_t[edx] = -1, False, np.maximum(next_visit, et + 1000)
        if not parts:
            if not np.any(next_t < NEVER):
                return
            continue
        chunk = _sorted_chunk(parts)
        if len(chunk) > remaining:
            chunk = Chunk(chunk.ts[:remaining], chunk.subject[:remaining], chunk.obj[:remaining],
                          chunk.kind[:remaining])
        remaining -= len(chunk)
        if len(chunk):
            yield chunk


def simulate_epg(cfg: IptvConfig, end_ms: int) -> Iterator[Chunk]:
    """The program guide of every channel on [0, end_ms]: subject = channel, object = program
    (0-based ids), kind QUIT = finish, JOIN = start. Programs still on air at end_ms stay open."""
    cfg.check()
    rng = _rng(cfg.seed, 1)
    C = cfg.channels
    minutes, weights = m.PROGRAM_MINUTES, m.PROGRAM_WEIGHTS / m.PROGRAM_WEIGHTS.sum()
    cum = np.cumsum(weights)
    next_t = np.zeros(C, dtype=np.int64)            # next change on each channel
    on_air = np.full(C, -1, dtype=np.int64)         # program on air, -1: off air
    pool_prog = np.full(m.REAIR_POOL, -1, dtype=np.int64)   # recent programs, for re-runs
    pool_chan = np.full(m.REAIR_POOL, -1, dtype=np.int64)
    pool_pos = 0
    next_id = 0
    slice_ms = 6 * m.HOUR
    k = 0
    while k * slice_ms <= end_ms:
        hi = min((k + 1) * slice_ms, end_ms + 1)
        k += 1
        parts = []
        while True:
            idx = np.flatnonzero(next_t < hi)
            if idx.size == 0:
                break
            t, p = next_t[idx], on_air[idx]
            airing = p >= 0
            parts.append((t[airing], idx[airing].astype(np.int32), p[airing], np.full(int(airing.sum()), QUIT, np.int8)))
            # After a program maybe a gap (off air), else the next program.
            gap = airing & (rng.random(idx.size) < m.P_GAP)
            gap_len = rng.integers(m.GAP_MIN_MS, m.GAP_MAX_MS + 1, idx.size)
            starts = ~gap
            n = int(starts.sum())
            # Re-runs: a recent program from another channel (never the one just finished here).
            pick = rng.integers(0, m.REAIR_POOL, n)
            rerun = (rng.random(n) < m.P_REAIR) & (pool_prog[pick] >= 0) & (pool_chan[pick] != idx[starts]) \
                & (pool_prog[pick] != p[starts])
            ids = np.where(rerun, pool_prog[pick], next_id + np.cumsum(~rerun) - 1)
            next_id += int((~rerun).sum())
            length = minutes[np.minimum(np.searchsorted(cum, rng.random(n), side="right"), len(minutes) - 1)] * m.MINUTE
            # The programs on air when the data starts began earlier: cut them short.
            first = t[starts] == 0
            cut = np.maximum(m.MINUTE, (length * rng.random(n)).astype(np.int64) // m.MINUTE * m.MINUTE)
            length = np.where(first, cut, length)
            parts.append((t[starts], idx[starts].astype(np.int32), ids, np.full(n, JOIN, np.int8)))
            fresh = ids[~rerun]
            slots = (pool_pos + np.arange(len(fresh))) % m.REAIR_POOL
            pool_prog[slots], pool_chan[slots] = fresh, idx[starts][~rerun]
            pool_pos = (pool_pos + len(fresh)) % m.REAIR_POOL
            on_air[idx] = -1
            on_air[idx[starts]] = ids
            next_t[idx] = t + gap_len
            next_t[idx[starts]] = t[starts] + length
        if parts:
            chunk = _sorted_chunk(parts)
            if len(chunk):
                yield chunk
