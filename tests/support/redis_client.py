"""The redis client package, for the Redis test modules (the module is skipped, with the reason,
where it is missing). The server is the `redis_port` fixture of tests/conftest.py."""
from __future__ import annotations

import pytest

redis = pytest.importorskip("redis", reason="the Python package redis is not installed")
