"""Test-wide settings: every `tefq` a test starts runs in its own process (no warm engine, which
would outlive the test), unless the test asks for one (tests/test_server.py)."""
import os

os.environ["TEFQ_SERVER"] = "0"
