"""Stopping a followed run waits for the micro-batch of new data each query was running, and not
for triggers that only look for new data (runtime/follow._finish_current_batches): on a loaded
machine a Redis source's look took longer than the 100 ms trigger interval, the triggers ran back
to back, and a SIGTERM'd run waited out the full 300 s (a CI run's windowed Redis kill test).
Fake queries: no Spark."""
from __future__ import annotations

from tefq.spark.runtime import follow


class FakeQuery:
    """A query whose status and last batch follow a script, one step per status read."""

    def __init__(self, steps: list[tuple[bool, bool, int]]) -> None:
        self.steps, self.reads = steps, 0  # (isTriggerActive, isDataAvailable, last batch id)
        self.isActive = True

    def _step(self) -> tuple[bool, bool, int]:
        return self.steps[min(self.reads, len(self.steps) - 1)]

    @property
    def status(self) -> dict:
        active, data, _ = self._step()
        self.reads += 1
        return {"message": "", "isTriggerActive": active, "isDataAvailable": data}

    @property
    def lastProgress(self) -> dict:
        return {"batchId": self._step()[2]}


def test_triggers_that_only_look_for_data_are_not_waited_for(monkeypatch) -> None:
    naps = []
    monkeypatch.setattr(follow.time, "sleep", naps.append)
    looking = FakeQuery([(True, False, 7)])  # back-to-back triggers finding nothing, for ever
    follow._finish_current_batches([looking])
    assert naps == []


def test_a_batch_of_new_data_is_waited_for_until_it_is_reported(monkeypatch) -> None:
    naps = []
    monkeypatch.setattr(follow.time, "sleep", naps.append)
    busy = FakeQuery([(True, True, 7)] * 4 + [(True, False, 8)])  # batch 8 reported at the 5th look
    follow._finish_current_batches([busy])
    assert len(naps) == 3  # it looked again until the batch was over (its 4th status: batch 8 reported)
