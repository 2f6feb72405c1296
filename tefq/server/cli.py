"""`tefq server start|stop|status`: the warm engine by hand (runs start one by themselves)."""
from __future__ import annotations

import argparse
import sys
import time

from tefq.errors import TefqError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("server", help="the warm engine: a started Spark that later tefq commands run in",
                              description="A warm engine holds a started Spark session; tefq run, facts, usecase, "
                                          "compare, parse and explain run in it when it is up (TEFQ_SERVER=0: never). "
                                          "The first Spark run starts one by itself (docs/spark.md, 'Warm engine').")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    actions.required = True
    start = actions.add_parser("start", help="start the warm engine (and warm it up) unless it is up")
    start.add_argument("--master", metavar="URL", help="an embedded master (default: TEFQ_SPARK_MASTER or local[*])")
    start.add_argument("--idle", metavar="DURATION",
                       help="stop after this long without a run (default: TEFQ_SERVER_IDLE, else 10m)")
    start.add_argument("--no-warm-up", action="store_true", help="skip the small warm-up workload")
    start.set_defaults(func=cmd_start)
    stop = actions.add_parser("stop", help="stop every warm engine of this user (runs in progress stop as on SIGTERM)")
    stop.set_defaults(func=cmd_stop)
    status = actions.add_parser("status", help="the warm engines of this user")
    status.set_defaults(func=cmd_status)


def _directory():
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.server.place import PlaceError, runtime_dir

    try:
        return runtime_dir()
    except PlaceError as e:
        raise TefqError(str(e), file="TEFQ_SERVER_DIR") from None


def cmd_start(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.analysis.durations import duration_ms
    from tefq.server import client
    from tefq.spark.runtime.session_source import default_master, is_local

    master = default_master(args.master)
    if not is_local(master):
        raise TefqError(f"a warm engine runs an embedded master (local[N]), not {master}", file="--master")
    if args.idle is not None:
        duration_ms(args.idle, "--idle")  # a bad duration: exit 2 here, not in the engine's log
    _directory()
    started = time.perf_counter()
    place = client.start(master, say=True, warm_up=not args.no_warm_up, idle=args.idle)
    if place is None:
        return 1
    print(f"tefq server: up ({master}), {time.perf_counter() - started:.1f} s; {place.socket}", file=sys.stderr)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.server import client
    from tefq.server.place import Place

    stopped = [p for p in Place.all(_directory()) if client.stop(p)]
    print(f"tefq server: {len(stopped)} warm engine(s) stopped", file=sys.stderr)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.server import client
    from tefq.server.place import Place, identity, key_of

    places = Place.all(_directory())
    up = 0
    for place in places:
        reply = client.ask(place, {"op": "ping"}, timeout=5.0)
        if reply is None:
            continue
        up += 1
        info = client.read_info(place) or {}
        current = key_of(identity(reply["master"])) == place.key
        idle = "" if reply.get("idle_stop_in_s") is None else f", stops in {reply['idle_stop_in_s']:.0f} s if idle"
        print(f"{reply['master']}: pid {reply['pid']}, up {reply['uptime_s']:.0f} s, {reply['runs']} run(s) now, "
              f"{reply['served']} served{idle}{'' if current else ', stale (other code or settings)'}; "
              f"log {info.get('log', reply.get('log'))}")
    if not up:
        print("tefq server: no warm engine is up", file=sys.stderr)
    return 0
