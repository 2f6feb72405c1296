"""`tefq gen sensors`: a Strider-like water-network sensor stream (docs: tefq/sensors/model.py).

`register(subparsers)` adds `sensors` under `tefq gen` (and `gen` itself when no other generator
added it first); the command sets `func=cmd_gen_sensors`.
"""
from __future__ import annotations

import argparse
import sys
import time

from tefq.io.stream_writers import FORMATS
from tefq.sensors.mix import DEFAULT_MIX


def _generators(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """The sub-commands of `tefq gen`, created if `gen` does not exist yet."""
    gen = subparsers.choices.get("gen")
    if gen is None:
        gen = subparsers.add_parser("gen", help="generate synthetic streams")
        gens = gen.add_subparsers(dest="generator", metavar="GENERATOR", parser_class=type(gen))
        gens.required = True
        return gens
    return next(a for a in gen._actions if isinstance(a, argparse._SubParsersAction))


def register(subparsers: argparse._SubParsersAction) -> None:
    g = _generators(subparsers).add_parser(
        "sensors", help="a water-network sensor stream (flow, pressure, chlorine observations)",
        description="Writes DIR/observations/part-NNNNN.<format>: SSN/SOSA observations with QUDT values, "
                    "nine triples each (see tefq/sensors/model.py); --mix changes the proportions of "
                    "observation kinds over time (a structurally unstable stream).")
    g.add_argument("--out", required=True, metavar="DIR", help="output directory (created; must hold no generated files)")
    g.add_argument("--events", type=int, default=1_000_000, metavar="N",
                   help="stream elements (triples; nine per observation; default 1000000)")
    g.add_argument("--sensors", type=int, default=300, metavar="K", help="sensors (default 300)")
    g.add_argument("--mix", default=DEFAULT_MIX, metavar="SCHEDULE",
                   help="phases of kind weights separated by ';', e.g. 'flow=8,pressure=1,chlorine=1;"
                        f"chlorine=1', or random:N (default {DEFAULT_MIX})")
    g.add_argument("--rate", type=float, default=100.0, metavar="R", help="observations per second (default 100)")
    g.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    g.add_argument("--format", choices=FORMATS, default="parquet", help="stream file format")
    g.set_defaults(func=cmd_gen_sensors)


def cmd_gen_sensors(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.sensors.generator import SensorsConfig
    from tefq.sensors.model import KINDS
    from tefq.sensors.writer import generate

    cfg = SensorsConfig(events=args.events, sensors=args.sensors, mix=args.mix, seed=args.seed, rate=args.rate)
    started = time.perf_counter()
    w = generate(cfg, args.out, fmt=args.format)
    secs = time.perf_counter() - started
    kinds = ", ".join(f"{k} {n}" for k, n in zip(KINDS, w.kinds))
    print(f"tefq gen sensors: {w.events} elements ({w.observations} observations: {kinds}) in {len(w.files)} "
          f"files under {args.out} ({secs:.2f} s, {w.events / max(secs, 1e-9):,.0f} elements/s)", file=sys.stderr)
    return 0


__all__ = ["register", "cmd_gen_sensors"]
