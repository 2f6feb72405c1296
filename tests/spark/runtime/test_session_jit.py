"""The driver JVM's compiler: C1 alone by default (docs/spark.md "Start-up"), the JVM's own tiered
compilation with TEFQ_JIT=full."""
from __future__ import annotations

from tefq.spark.runtime import session


def jvm_arguments(spark) -> list[str]:
    bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    return list(bean.getInputArguments())


def test_a_started_driver_jvm_compiles_with_c1_alone(spark):
    assert session.C1_ONLY in jvm_arguments(spark)


def test_tefq_jit_full_leaves_the_jvm_its_default_compilers(monkeypatch):
    monkeypatch.delenv(session.JIT_VARIABLE, raising=False)
    assert session.jit_options() == [session.C1_ONLY]
    for value in ("full", " FULL "):
        monkeypatch.setenv(session.JIT_VARIABLE, value)
        assert session.jit_options() == []
    monkeypatch.setenv(session.JIT_VARIABLE, "c1")  # anything else: the default
    assert session.jit_options() == [session.C1_ONLY]
