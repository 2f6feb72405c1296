"""tefq's tests, grouped as tefq/ is (tests/spark/ for tefq/spark/, ...); tests/reliability/ holds the fault tests."""
