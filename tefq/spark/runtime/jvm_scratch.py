"""The JVM's scratch space inside a directory tefq removes, however the run ends.

Spark's driver makes `spark-<uuid>` (block manager, user files, PySpark's broadcast files) and
`artifacts-<uuid>` directories in its local directory and deletes them in a JVM shutdown hook, which
does not run when the JVM is killed or torn down with the Python process after a failure: runs
that ended with exit 1 left up to 8 MB each in the temporary directory (issue 26). The JVM is
started with its local directory (`SPARK_LOCAL_DIRS`) and Java's temporary directory inside one
`tefq-jvm-*` directory, registered with tefq.cleanup (the command line removes it on every exit
path) and removed at interpreter exit for API users. A `SPARK_LOCAL_DIRS` the user set is kept (and
then Java's temporary directory too).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from typing import Iterator

from tefq import cleanup

JAVA_OPTIONS = "JAVA_TOOL_OPTIONS"  # every JVM reads it (its "Picked up" notice is filtered: quiet.py)


@contextlib.contextmanager
def jvm_scratch() -> Iterator[None]:
    """While inside, a JVM started here keeps its scratch in a registered `tefq-jvm-*` directory."""
    if os.environ.get("SPARK_LOCAL_DIRS"):
        yield
        return
    path = cleanup.register(tempfile.mkdtemp(prefix="tefq-jvm-"))
    atexit.register(shutil.rmtree, path, True)
    saved = {name: os.environ.get(name) for name in ("SPARK_LOCAL_DIRS", JAVA_OPTIONS)}
    os.environ["SPARK_LOCAL_DIRS"] = path
    if not any(c.isspace() for c in path):  # the variable is split at spaces, without quoting
        os.environ[JAVA_OPTIONS] = f"{saved[JAVA_OPTIONS] or ''} -Djava.io.tmpdir={path}".strip()
    try:
        yield
    finally:  # read at the JVM's launch: later sessions get their own
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
