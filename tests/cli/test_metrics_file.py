"""The metrics file is written whatever happens to standard output (issue 38: `tefq run ...
--metrics m.json | head` exited 0 without writing m.json)."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"


def test_metrics_are_written_when_stdout_closes_early(tmp_path):
    events = tmp_path / "events.tsv"
    with open(events, "w", encoding="utf-8") as fh:  # one viewer per second for a day: 17,280 rows out
        fh.write("ts\ts\tp\to\n")
        fh.writelines(f"{t * 5000}\t<http://x/u{t}>\t<http://example.org/iptv#join>\t<http://x/c{t % 7}>\n"
                      for t in range(17_280))
    metrics = tmp_path / "m.json"
    proc = subprocess.Popen([sys.executable, "-m", "tefq", "run", str(SPEC10 / "uc1.tef"), "--stream", str(events),
                             "--engine", "oracle", "--metrics", str(metrics)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"tick,")
    proc.stdout.close()  # as `| head -1` does
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    written = json.loads(metrics.read_text())
    assert written["events_in"] == 17_280 and written["rows_out"] > 17_000
