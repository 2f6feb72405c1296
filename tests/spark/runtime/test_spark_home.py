"""The Spark installation tefq starts its driver from (runtime/spark_home.py): pyspark's own, less
the ML jars whose session extension builds its functions with Scala reflection at every start."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tefq.spark.runtime import spark_home

GIVEN = os.environ.get("SPARK_HOME")  # at collection, before any session of this process started
JARS = ["a.jar", "spark-mllib_2.13-4.3.0.jar", "spark-mllib-local_2.13-4.3.0.jar", "z.jar"]


def fake_pyspark(root: Path, jars: list[str] = JARS) -> Path:
    home = root / "pyspark"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    (home / "python").mkdir()
    (home / "__init__.py").write_text("")
    (home / "jars").mkdir()
    for name in jars:
        (home / "jars" / name).write_bytes(name.encode())
    return home


def test_links_every_entry_and_every_jar_but_the_ml_ones(tmp_path) -> None:
    home, cache = fake_pyspark(tmp_path), tmp_path / "cache"
    lean = spark_home.lean_home(home, cache)
    assert lean is not None and lean.parent == cache
    assert sorted(os.listdir(lean / "jars")) == ["a.jar", "z.jar"]
    assert all((lean / "jars" / n).resolve() == home / "jars" / n for n in ("a.jar", "z.jar"))
    assert sorted(os.listdir(lean)) == sorted(os.listdir(home))
    assert all((lean / e).is_symlink() and (lean / e).resolve() == home / e for e in os.listdir(home) if e != "jars")
    assert (lean / "bin" / "spark-submit").read_text() == "#!/bin/sh\n"
    assert spark_home.lean_home(home, cache) == lean  # made once: the same directory, nothing beside it
    assert os.listdir(cache) == [lean.name]


def test_a_pyspark_without_ml_jars_is_used_as_it_is(tmp_path) -> None:
    home, cache = fake_pyspark(tmp_path, ["a.jar"]), tmp_path / "cache"
    assert spark_home.lean_home(home, cache) is None
    assert not cache.exists()


def test_a_cache_that_cannot_be_written_leaves_pyspark_own(tmp_path) -> None:
    home = fake_pyspark(tmp_path)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert spark_home.lean_home(home, blocked / "cache") is None


def test_the_directory_of_a_removed_installation_goes(tmp_path) -> None:
    cache = tmp_path / "cache"
    old = spark_home.lean_home(fake_pyspark(tmp_path / "old"), cache)
    (tmp_path / "old" / "pyspark" / "bin" / "spark-submit").unlink()
    (tmp_path / "old" / "pyspark" / "bin").rmdir()
    new = spark_home.lean_home(fake_pyspark(tmp_path / "new"), cache)
    assert new is not None and new.exists() and not old.exists()


def test_a_spark_home_already_set_is_kept(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    spark_home.use_lean_home()
    assert os.environ["SPARK_HOME"] == str(tmp_path)
    monkeypatch.delenv("SPARK_HOME")
    monkeypatch.setenv(spark_home.VARIABLE, "pyspark")
    spark_home.use_lean_home()
    assert "SPARK_HOME" not in os.environ


@pytest.mark.spark
def test_the_driver_tefq_starts_has_no_ml_jar(spark) -> None:
    if GIVEN and not Path(GIVEN).name.startswith(spark_home.PREFIX):
        pytest.skip(f"SPARK_HOME={GIVEN} was set before the tests: tefq keeps it")
    assert Path(os.environ["SPARK_HOME"]).name.startswith(spark_home.PREFIX)
    classpath = spark.sparkContext._jvm.System.getProperty("java.class.path")
    assert "spark-core_" in classpath and "spark-mllib" not in classpath
    assert spark.range(3).selectExpr("sum(id)").collect()[0][0] == 3


def test_the_warm_engine_fits_with_or_without_tefq_own_spark_home(tmp_path) -> None:
    """A command line that started Spark in its own process has tefq's SPARK_HOME set, one that
    did not has none: the same engine fits both (tefq.server.place.identity); a user's does not."""
    from tefq.server.place import OWN_SPARK_HOME_PREFIX, identity, key_of

    assert OWN_SPARK_HOME_PREFIX == spark_home.PREFIX
    lean = spark_home.lean_home(fake_pyspark(tmp_path), tmp_path / "cache")
    env = {"PATH": os.environ.get("PATH", "")}
    plain = key_of(identity("local[2]", env))
    assert key_of(identity("local[2]", {**env, "SPARK_HOME": str(lean)})) == plain
    assert key_of(identity("local[2]", {**env, "SPARK_HOME": str(tmp_path / "pyspark")})) != plain
