"""The warm engine's process, `python -m tefq.warm_engine --key K --master M [--idle D] [--warm-up]`
(started by tefq.server.client): tefq.server's engine (`daemon.main`) running tefq's command line.
It sits above both, so that the server package runs command lines without importing the command
line that hands runs to it."""
from __future__ import annotations

import sys

from tefq.server.daemon import Program, main as serve


def command_line() -> None:
    """One run's command line (its argv in `sys.argv`), as `tefq` runs it."""
    # deferred: imported by `preload` while the JVM starts, not before it (measured: tefq.spark.engine 12 s)
    from tefq.cli import main

    main()


def preload() -> None:
    """What every run imports and builds first, done once in the engine: the children start with
    it (the modules, and the parser's tables, read by parsing a use-case)."""
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    import tefq.cli  # noqa: F401
    import tefq.oracle  # noqa: F401
    import tefq.spark.engine  # noqa: F401
    import tefq.spark.runtime.follow  # noqa: F401
    from tefq.analysis import load
    from tefq.iptv.cli import usecase_file

    load(str(usecase_file("uc1")))


def workload() -> bool:
    """`--warm-up`'s: the start-up archive's workload (UC1 and a sliding count)."""
    # deferred: only `tefq server start` warms up
    from tefq.jvm_archive_setup import run_workload

    return run_workload()


if __name__ == "__main__":
    serve(sys.argv[1:], Program(command_line, preload, workload))
