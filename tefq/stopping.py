"""Where a signal handler may raise. Python runs a handler between two bytecodes of whatever the
main thread is doing; an exception raised there can be lost or leave a lock held:
- inside the import machinery's own code: its weakref callback that forgets a module's lock
  (`_get_module_lock.<locals>.cb`) takes the global import lock before its `try`, and an
  exception raised in a weakref callback is dropped; the lock stays held, the stop is forgotten,
  and a thread importing beside the command waits for ever (seen 1 run in 14 SIGTERMed 0.3 s
  after the start, before tefq.entry stopped raising there);
- under a `__del__`, whose exceptions Python drops too.
There the handler sends its signal again a moment later instead (`raise_later`).
A child forked from the command runs Python code before it execs (the fork hooks, subprocess's
`preexec_fn`: pyspark starts the JVM so), with the command's handlers: there they do nothing
(`this_process_only`)."""
from __future__ import annotations

import functools
import os
import threading
from types import FrameType
from typing import Callable

Handler = Callable[[int, FrameType | None], None]

RESEND_AFTER_S = 0.01


def unsafe_to_raise(frame: FrameType | None) -> bool:
    """Whether an exception raised in `frame` (the one a signal interrupted) could be lost or
    leave an import lock held. The module code an import runs is not importlib's own: raising
    there unwinds through importlib's `finally` blocks, as any exception does."""
    if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        return True
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def raise_later(signum: int, frame: FrameType | None) -> bool:
    """True when the handler must not raise in `frame`: the signal comes again in RESEND_AFTER_S,
    once the main thread has moved on (an unraisable frame is left within microseconds)."""
    if not unsafe_to_raise(frame):
        return False
    resend = threading.Timer(RESEND_AFTER_S, os.kill, (os.getpid(), signum))
    resend.daemon = True
    resend.start()
    return True


def this_process_only(handler: Handler) -> Handler:
    """`handler` (for signal.signal) run only in the process that installs it. A signal that reaches
    a child forked from it before the child execs (one sent to the process group, or
    `EarlySession.cancel` stopping a JVM that is still starting) would run the command's handler in
    the child: its sentence printed twice and, raised inside a fork hook, a traceback. The child
    goes on to exec, where the signal's default applies again."""
    owner = os.getpid()

    @functools.wraps(handler)
    def in_owner(signum: int, frame: FrameType | None) -> None:
        if os.getpid() == owner:
            handler(signum, frame)

    return in_owner
