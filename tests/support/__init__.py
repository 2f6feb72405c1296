"""What several test modules share: hand-built documents, stream writers, stand-ins and harnesses.
Fixtures (the Spark session, a redis-server, the ../shared check) are in tests/conftest.py."""
