"""Simulate a water-distribution network's sensor observations (Strider's Waves workload, 002 §5).

Observations arrive at `rate` per second (observation i at (i + u) / rate seconds, u uniform in
[0, 1): strictly increasing times). Each one's kind follows the `--mix` schedule of its share of
the stream; its sensor is drawn among the sensors of that kind; its value follows the sensor's
own level with a daily cycle and noise (flow in m³/h, pressure in bar, chlorine in mg/L, which
drops below 0.2 mg/L in 2% of the readings). Everything is drawn from generators seeded by
`--seed`, chunk after chunk in a fixed order, so the same arguments give the same stream.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from tefq.errors import TefqError
from tefq.sensors.mix import DEFAULT_MIX, kinds_for, parse_mix
from tefq.sensors.model import EPOCH_MS, KINDS, SENSORS_PER_PIPE, TRIPLES_PER_OBSERVATION

DAY_MS = 86_400_000
LOW_CHLORINE_SHARE = 0.02
FLOW, PRESSURE, CHLORINE = range(len(KINDS))


@dataclass(frozen=True)
class SensorsConfig:
    events: int = 1_000_000  # stream elements (triples); an observation is TRIPLES_PER_OBSERVATION of them
    sensors: int = 300
    mix: str = DEFAULT_MIX
    seed: int = 0
    rate: float = 100.0  # observations per second

    @property
    def observations(self) -> int:
        return self.events // TRIPLES_PER_OBSERVATION

    def check(self) -> None:
        if self.events < TRIPLES_PER_OBSERVATION:
            raise TefqError(f"--events must be at least {TRIPLES_PER_OBSERVATION} (one observation is "
                            f"{TRIPLES_PER_OBSERVATION} triples), got {self.events}", file="--events")
        if self.sensors < len(KINDS):
            raise TefqError(f"--sensors must be at least {len(KINDS)} (one per observed property), got "
                            f"{self.sensors}", file="--sensors")
        if not self.rate > 0:
            raise TefqError(f"--rate must be positive, got {self.rate}", file="--rate")
        if self.seed < 0:
            raise TefqError(f"--seed must be non-negative, got {self.seed}", file="--seed")
        parse_mix(self.mix, self.seed)


@dataclass
class Chunk:
    """Consecutive observations: number, time (ms, absolute), sensor, kind and value."""

    number: np.ndarray
    ts: np.ndarray
    sensor: np.ndarray
    kind: np.ndarray
    value: np.ndarray

    def __len__(self) -> int:
        return len(self.number)


@dataclass(frozen=True)
class _Levels:
    """Each sensor's own level: flow and chlorine scale, pressure offset."""

    flow: np.ndarray
    pressure: np.ndarray
    chlorine: np.ndarray

    @staticmethod
    def draw(sensors: int, seed: int) -> "_Levels":
        rng = np.random.default_rng([seed, 2])
        return _Levels(rng.uniform(20, 200, sensors), rng.uniform(3, 6, sensors), rng.uniform(0.4, 0.9, sensors))


def _sensors_for(kinds: np.ndarray, sensors: int, rng: np.random.Generator) -> np.ndarray:
    """A sensor of each observation's kind, uniformly (sensor k measures kind k mod 3)."""
    per_kind = (sensors - kinds + SENSORS_PER_PIPE - 1) // SENSORS_PER_PIPE
    return kinds + SENSORS_PER_PIPE * np.floor(rng.random(len(kinds)) * per_kind).astype(np.int64)


def _values(kinds: np.ndarray, sensor: np.ndarray, ts: np.ndarray, levels: _Levels,
            rng: np.random.Generator) -> np.ndarray:
    daily = 1 + 0.3 * np.sin(2 * np.pi * ((ts - EPOCH_MS) % DAY_MS) / DAY_MS)
    noise = rng.normal(0, 0.05, len(kinds))
    low = rng.random(len(kinds)) < LOW_CHLORINE_SHARE
    dip = rng.uniform(0.05, 0.2, len(kinds))
    value = np.select(
        [kinds == FLOW, kinds == PRESSURE],
        [levels.flow[sensor] * daily * (1 + noise), levels.pressure[sensor] - 0.5 * (daily - 1) + noise],
        np.where(low, dip, levels.chlorine[sensor] * (1 + noise)))
    return np.round(np.maximum(value, 0.0), 3)


def simulate(cfg: SensorsConfig, per_chunk: int) -> Iterator[Chunk]:
    """The observations of `cfg`, `per_chunk` at a time."""
    cfg.check()
    mix = parse_mix(cfg.mix, cfg.seed)
    levels = _Levels.draw(cfg.sensors, cfg.seed)
    rng = np.random.default_rng([cfg.seed, 1])
    total = cfg.observations
    for first in range(0, total, per_chunk):
        number = np.arange(first, min(total, first + per_chunk), dtype=np.int64)
        ts = EPOCH_MS + np.floor((number + rng.random(len(number))) * 1000 / cfg.rate).astype(np.int64)
        kinds = kinds_for(number, total, mix, rng)
        sensor = _sensors_for(kinds, cfg.sensors, rng)
        yield Chunk(number, ts, sensor, kinds, _values(kinds, sensor, ts, levels, rng))


__all__ = ["SensorsConfig", "Chunk", "simulate", "LOW_CHLORINE_SHARE"]
