# tefq: `make demo` sets everything up, runs UC1 on embedded Spark and shows the busiest channels;
# `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   := data/demo

.PHONY: setup spark-archive bytecode demo test test-fast test-props uc1 uc2 uc3 bench clean

setup: $(VENV)/.installed spark-archive bytecode

# tefq's modules compiled here, once: where PYTHONDONTWRITEBYTECODE is set (many container images)
# Python would compile them again in every command and every Spark worker (the tour's query on the
# oracle: 1.97 -> 1.79 s, 6 alternated pairs, docs/bench/2026-11-30-exit-and-stops.md).
bytecode: $(VENV)/.installed
	@$(BIN)/python -m compileall -q tefq > /dev/null

# Spark's start-up archive for the driver JVM (docs/spark.md "Start-up"): written once per JDK and
# pyspark under ~/.cache/tefq (about 2 minutes), then only checked; never fails; TEFQ_CDS=0 skips it.
spark-archive: $(VENV)/.installed
	@$(BIN)/python -m tefq.jvm_archive_setup

# -qq: pip's errors only (not setuptools' notes on editable installs: `make demo` shows no warning)
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -qq --upgrade pip
	$(BIN)/pip install -qq -e '.[test]'
	touch $@

demo: setup
	@test -d $(DEMO) || $(BIN)/tefq gen iptv --out $(DEMO) --events 20000 --users 4600 --channels 40 --seed 7
	$(BIN)/tefq run usecases/uc1.tef --stream $(DEMO) --engine spark --out $(DEMO)-uc1.parquet --metrics $(DEMO)-uc1.metrics.json
	@$(BIN)/python examples/demo/top_channels.py $(DEMO)-uc1.parquet $(DEMO)-uc1.metrics.json

# Two test processes (pytest-xdist), each module whole in one of them (its Spark session shared):
# Spark's waits overlap the other process's work on 2 cores. TEFQ_TEST_PROCESSES=1: one process.
TEFQ_TEST_PROCESSES ?= 2
test: setup
	$(BIN)/python -m pytest -q --timeout=900 --durations=15 -n $(TEFQ_TEST_PROCESSES) --dist loadfile

test-fast: $(VENV)/.installed
	$(BIN)/python -m pytest -q -m "not spark"

# The differential tests ten times over (issue 38): 5,000 generated streams per plan kind against the
# oracle without Spark, 200 per plan kind on Spark (ten batched runs of 20), from files and from Redis.
test-props: setup
	TEFQ_PROPS_SCALE=10 $(BIN)/python -m pytest -q --timeout=3600 --durations=10 -n $(TEFQ_TEST_PROCESSES) --dist loadfile \
		tests/spark/test_differential.py tests/spark/test_differential_windowed.py tests/spark/test_spark_differential.py

# The long part of tests/reliability: more fuzz cases, stray timestamps at the default --max-ticks, 20 SIGKILLs;
# checkpoint identity, changed files, log entries, task retries, state decoding and failures (issue 26);
# a foreign file as the driver JVM's start-up archive; the grammar's strict LALR check (40 s).
test-faults: setup
	TEFQ_FAULTS_LONG=1 TEFQ_FUZZ_EXAMPLES=2000 $(BIN)/python -m pytest -q --timeout=900 --durations=5 -m reliability tests/reliability
	TEFQ_FAULTS_LONG=1 $(BIN)/python -m pytest -q --timeout=900 tests/spark/runtime/test_jvm_archive.py tests/syntax/test_grammar.py

uc1 uc2 uc3: setup
	$(BIN)/tefq usecase $@

clean:
	@test ! -x $(BIN)/python || $(BIN)/python -m tefq.jvm_archive_setup --remove
	rm -rf $(VENV) data build dist *.egg-info .pytest_cache .hypothesis
