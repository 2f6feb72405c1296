"""Issue 26 (part 2), case 11: operator state read back from a checkpoint cannot run code. It was
`pickle.loads` of whatever the checkpoint held (operators/base.py), so anyone able to write there
ran code in the Spark workers; now only tefq's state classes and the exact numpy, pandas, rdflib
and builtin names that state is rebuilt with are resolved (runtime/state_codec.py)."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pandas as pd
import pytest
from rdflib import Literal, URIRef

from tefq.errors import failure_message
from tefq.spark.kernels.intervals import Intervals
from tefq.spark.operators.current import CurrentState
from tefq.spark.runtime.state_codec import StateRefused, decode, encode

pytestmark = [pytest.mark.reliability]


class Payload:
    """Pickles as a call of `target(*args)`: what a hostile checkpoint would hold."""

    def __init__(self, target, *args) -> None:
        self.target, self.args = target, args

    def __reduce__(self):
        return self.target, self.args


def test_tefq_state_numpy_pandas_and_terms_round_trip() -> None:
    st = CurrentState(4)
    st.pending = [np.arange(5, dtype=np.int64), np.array([1.5, np.nan]), np.array(["a", "b"], dtype=object)]
    value = {"state": st, "intervals": Intervals.empty(2), "frame": pd.DataFrame({"a": [1, 2], "b": ["x", None]}),
             "terms": [URIRef("http://x/a"), Literal(3)], "misc": (frozenset({1}), {2}, b"\x00", 2 ** 70, None)}
    back = decode(encode(value))
    assert back["state"].pending[0].tolist() == [0, 1, 2, 3, 4] and back["misc"] == value["misc"]
    assert back["frame"].equals(value["frame"]) and back["terms"] == value["terms"]
    assert type(back["intervals"]) is Intervals


@pytest.mark.parametrize("payload, named", [
    (Payload(os.system, "touch {marker}"), "posix.system"),
    (Payload(eval, "open({marker!r}, 'w')"), "builtins.eval"),
    (Payload(getattr, "x", "upper"), "builtins.getattr"),
    (Payload(np.save, "{marker}", np.arange(3)), "numpy.save"),
    (Payload(pd.read_pickle, "{marker}"), "pandas.io.pickle.read_pickle"),
])
def test_a_hostile_state_is_refused_before_anything_runs(tmp_path, payload, named) -> None:
    marker = str(tmp_path / "ran")
    payload.args = tuple(a.format(marker=marker) if isinstance(a, str) else a for a in payload.args)
    blob = pickle.dumps({"state": payload}, protocol=5)
    with pytest.raises(StateRefused) as e:
        decode(blob)
    assert named in str(e.value) and "use a fresh --checkpoint" in str(e.value)
    assert not os.path.exists(marker) and not os.path.exists(marker + ".npy")


@pytest.mark.parametrize("module, name", [("tefq.cleanup", "remove_all"), ("tefq.cleanup", "shutil"),
                                          ("tefq.spark.runtime.state_codec", "Any"),
                                          ("tefq.spark.runtime.state_codec", "pickle.loads")])
def test_tefq_functions_and_names_imported_into_tefq_modules_are_refused(module, name) -> None:
    with pytest.raises(StateRefused, match=f"names {module}.{name}"):
        decode(f"c{module}\n{name}\n.".encode())  # protocol 0: GLOBAL, then STOP


def test_the_refusal_reaches_the_command_line_as_one_sentence() -> None:
    with pytest.raises(StateRefused) as e:
        decode(pickle.dumps(Payload(os.system, "true")))
    wrapped = RuntimeError("An exception was thrown from the Python worker.\nTraceback ...\n" + str(e.value)
                           + "\n\tat org.apache.spark.api.python...\n")
    message = failure_message(wrapped)
    assert message.startswith("tefq: error: the operator state in this checkpoint names posix.system")
    assert "\n" not in message
