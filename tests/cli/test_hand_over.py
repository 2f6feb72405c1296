"""A command line handed to the warm engine (tefq.entry.hand_over) runs in its own process when
the engine cannot start; that run starts its own session and is not handed over again."""
from __future__ import annotations

import signal

from tefq import entry
from tefq.server import client
from tefq.spark.runtime.session_source import SESSION_SOURCE


def test_a_run_whose_warm_engine_did_not_start_starts_spark_here(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(client, "start", lambda master, **kw: None)  # the engine did not start
    monkeypatch.setattr("tefq.cli.main", lambda: seen.append(SESSION_SOURCE.get()))
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    token = SESSION_SOURCE.set(entry.HandOverSource("local[2]"))
    try:
        assert entry.hand_over(["run"], "local[2]", None) == 0
        assert isinstance(SESSION_SOURCE.get(), entry.HandOverSource)  # the caller's, back as it was
    finally:
        SESSION_SOURCE.reset(token)
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
    assert seen == [None]  # the fallback run asks no one: it starts Spark in this process
