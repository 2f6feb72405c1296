"""tefq.stopping: a signal handler does not raise where Python would drop the exception (the import
machinery's weakref callback, a `__del__`); the signal comes again a moment later instead. And a
child forked from the command does not run the command's handler before it execs."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading

import pytest

from tefq.cli import _Terminated
from tefq.stopping import raise_later, unsafe_to_raise


def handler(signum, frame) -> None:
    """As tefq.cli.main's."""
    if not raise_later(signum, frame):
        raise _Terminated()


def called_from(filename: str, name: str):
    """A function `name` whose code claims to come from `filename`; it calls the handler with its frame."""
    code = compile(f"def {name}(call):\n    import sys\n    return call(sys._getframe())\n", filename, "exec")
    space: dict = {}
    exec(code, space)
    return space[name]


def test_importlibs_own_code_and_a_del_are_unsafe_module_code_is_not() -> None:
    here = sys._getframe()
    assert not unsafe_to_raise(here) and not unsafe_to_raise(None)
    assert called_from("<frozen importlib._bootstrap>", "cb")(unsafe_to_raise)
    assert called_from("<frozen importlib._bootstrap_external>", "exec_module")(unsafe_to_raise)
    assert called_from("somewhere.py", "__del__")(lambda f: called_from("x.py", "helper")(unsafe_to_raise))
    assert not called_from("pyspark/__init__.py", "module_body")(unsafe_to_raise)


def test_the_handler_inside_importlibs_callback_sends_the_signal_again() -> None:
    again = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: again.set())
    try:
        in_callback = called_from("<frozen importlib._bootstrap>", "cb")
        in_callback(lambda frame: handler(signal.SIGUSR1, frame))  # no raise here
        assert again.wait(5), "the signal did not come again"
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_the_handler_raises_in_ordinary_code() -> None:
    try:
        called_from("tefq/cli.py", "run_command")(lambda frame: handler(signal.SIGTERM, frame))
    except _Terminated:
        return
    raise AssertionError("the handler did not raise")


# A handler as the command's (a sentence, then exit 143); the child then signals itself between its
# fork and its exec, where pyspark's `preexec_fn` runs when it starts the JVM (EarlySession.cancel
# SIGTERMs a JVM still starting: once, in a CI-like run with three test processes, the command
# printed its sentence twice and a traceback from threading's fork hook).
FORKED_CHILD = """
import os, signal, subprocess, sys
from tefq.stopping import this_process_only
def stop(signum, frame):
    print("handled in", os.getpid(), file=sys.stderr, flush=True)
    raise SystemExit(143)
signal.signal(signal.SIGTERM, {wrap}(stop))
child = subprocess.run([sys.executable, "-c", "print('the child ran')"], capture_output=True, text=True,
                       preexec_fn=lambda: os.kill(os.getpid(), signal.SIGTERM))
print(child.stdout + child.stderr, end="")
"""


@pytest.mark.parametrize("guarded", [True, False], ids=["this_process_only", "bare handler"])
def test_a_forked_child_does_not_run_the_commands_handler_before_it_execs(guarded: bool) -> None:
    script = FORKED_CHILD.format(wrap="this_process_only" if guarded else "")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    if guarded:
        assert done.returncode == 0 and done.stdout == "the child ran\n" and "handled" not in done.stderr, done
    else:  # why the guard: the command's handler ran in the child and its exit stopped the exec
        assert done.returncode != 0 and "Exception occurred in preexec_fn" in done.stderr, done
