"""Issue 17, fault 5: SIGTERM and SIGINT on a running `tefq run --engine oracle` stop it cleanly:
a message, exit 143 / 130, no traceback, the registered temporary directories removed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.reliability

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
# A run of tefq's main() with one scratch directory registered the way the Spark engine will;
# an audit hook says when main() first lists the stream's folder: the run is under way.
RUNNER = ("import sys, tempfile; from tefq import cleanup; "
          "d = cleanup.register(tempfile.mkdtemp(prefix='tefq-signal-test-')); "
          "print('scratch', d, file=sys.stderr, flush=True); "
          "said = []; "
          "hook = lambda ev, args: ev == 'os.scandir' and str(args[0]).endswith('log') and not said "
          "and (said.append(1) or print('reading', file=sys.stderr, flush=True)); "
          "sys.addaudithook(hook); "
          "sys.argv = ['tefq'] + sys.argv[1:]; from tefq.cli import main; main()")


@pytest.fixture(scope="module")
def big_stream(tmp_path_factory) -> str:
    """200 000 events: the oracle needs several seconds for UC1, so a signal lands mid-run."""
    out = tmp_path_factory.mktemp("sig") / "iptv"
    subprocess.run([sys.executable, "-m", "tefq", "gen", "iptv", "--out", str(out), "--events", "200000",
                    "--users", "8000", "--channels", "40", "--seed", "3"], check=True, capture_output=True)
    return str(out / "log")


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell may have started us with SIGINT ignored


@pytest.mark.parametrize("sig,code,words", [(signal.SIGTERM, 143, "terminated by SIGTERM"),
                                            (signal.SIGINT, 130, "interrupted")])
def test_signal_mid_run(big_stream, tmp_path, sig, code, words) -> None:
    p = subprocess.Popen([sys.executable, "-c", RUNNER, "run", UC1, "--engine", "oracle", "--stream", big_stream,
                          "--out", str(tmp_path / "out.csv")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    scratch = ""
    for line in p.stderr:  # wait until the stream is listed: the run is under way
        if line.startswith("scratch "):
            scratch = line.split(" ", 1)[1].strip()
        if line.startswith("reading"):
            break
    assert os.path.isdir(scratch)
    p.send_signal(sig)
    err = p.stderr.read()
    assert p.wait() == code, err
    assert words in err and "Traceback" not in err, err
    assert not os.path.exists(scratch)
