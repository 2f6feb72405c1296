"""Where the tests find the project and its neighbours, from this file's place (never an absolute path)."""
from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent  # the checkout: tefq/, usecases/, examples/, bench/
DATA = TESTS / "data"
GOLDEN = TESTS / "golden"
SHARED = ROOT.parent / "shared"  # the read-only spec and external suites beside the checkout
EXTERNAL = SHARED / "external"
CSRBENCH = EXTERNAL / "csrbench"
