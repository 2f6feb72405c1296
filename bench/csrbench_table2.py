"""Reproduce CSRBench's Table 2 (paper 001 §6.3) with tefq's windowed oracle.

    .venv/bin/python bench/csrbench_table2.py [--csrbench DIR] [--queries properties|csparql] [--json OUT]

Prints the verdict table (and which cells differ from 001 §7; docs/windowed-oracle.md explains
why) and the CPU time it took. Same as `tefq oracle table2`.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tefq.errors import TefqError
from tefq.oracle.windowed.csrbench import default_dir, render, table2


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csrbench", type=Path, default=default_dir())
    ap.add_argument("--queries", choices=("properties", "csparql"), default="properties")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    started = time.process_time()
    try:
        results = table2(args.csrbench, args.queries)
    except TefqError as e:
        print(e.render(), file=sys.stderr)
        return 2
    print(render(results))
    print(f"\n{time.process_time() - started:.1f} s CPU", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps({f"{s}/Q{n}": r.to_json() for (s, n), r in results.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
