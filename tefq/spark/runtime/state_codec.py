"""Operator state to and from the bytes Spark keeps in the checkpoint, without running its code.

A bucket's state is a tree of tefq's state classes, numpy arrays, pandas frames and builtin
containers, pickled. `pickle.loads` would call whatever callable the bytes name (`os.system`,
`builtins.eval`, ...), so anyone able to write to a checkpoint directory could run code in the
Spark workers. `decode` unpickles with an allow-list instead: tefq's own classes (the state
classes, plans and kernels that state holds; constructed as data), and the exact numpy, pandas,
rdflib and builtin names that arrays, frames, terms and containers are rebuilt with. Any other
name fails the batch with a message naming it (docs/cli.md, "Trust boundary").
"""
from __future__ import annotations

import importlib
import io
import pickle
from typing import Any

from tefq.errors import WORKER_REFUSAL

TEFQ_PACKAGES = ("tefq.",)
# Exact (module, name) pairs of the libraries whose objects a state holds: their classes and the
# functions their pickles rebuild them with (numpy's moved from numpy.core to numpy._core in 2.0).
ALLOWED = frozenset({
    *(("builtins", n) for n in ("set", "frozenset", "dict", "list", "tuple", "int", "float", "complex", "bool",
                                "str", "bytes", "bytearray", "slice", "range", "object", "NoneType")),
    ("collections", "OrderedDict"), ("collections", "defaultdict"), ("collections", "deque"),
    ("collections", "Counter"), ("copyreg", "_reconstructor"), ("datetime", "datetime"), ("datetime", "date"),
    ("datetime", "timedelta"), ("datetime", "timezone"), ("decimal", "Decimal"),
    *((m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray") for n in ("_reconstruct", "scalar")),
    *((m, "_frombuffer") for m in ("numpy.core.numeric", "numpy._core.numeric")),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.ma.core", "_mareconstruct"),
    ("numpy.ma.core", "MaskedArray"),
    *(("numpy", t) for t in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                            "float16", "float32", "float64", "complex64", "complex128", "str_", "bytes_",
                            "object_", "datetime64", "timedelta64")),
    *(("numpy.dtypes", t) for t in ("BoolDType", "Int8DType", "Int16DType", "Int32DType", "Int64DType",
                                   "UInt8DType", "UInt16DType", "UInt32DType", "UInt64DType", "Float16DType",
                                   "Float32DType", "Float64DType", "StrDType", "BytesDType", "ObjectDType",
                                   "DateTime64DType", "TimeDelta64DType", "VoidDType")),
    ("pandas.core.frame", "DataFrame"), ("pandas.core.series", "Series"),
    ("pandas.core.internals.managers", "BlockManager"), ("pandas.core.internals.managers", "SingleBlockManager"),
    ("pandas._libs.internals", "_unpickle_block"), ("pandas.core.internals.blocks", "new_block"),
    ("pandas.core.indexes.base", "_new_Index"), ("pandas.core.indexes.base", "Index"),
    ("pandas.core.indexes.range", "RangeIndex"), ("pandas._libs.internals", "BlockPlacement"),
    ("pandas.core.arrays.string_", "StringDtype"), ("pandas.core.dtypes.dtypes", "CategoricalDtype"),
    ("pandas.core.arrays.categorical", "Categorical"), ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
    ("rdflib.term", "URIRef"), ("rdflib.term", "Literal"), ("rdflib.term", "BNode"), ("rdflib.term", "Variable"),
})


class StateRefused(pickle.UnpicklingError):
    """The checkpoint's state names something outside the allow-list."""


class StateUnpickler(pickle.Unpickler):
    """An Unpickler that resolves only allowed names (see the module doc)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED:
            return super().find_class(module, name)
        if module.startswith(TEFQ_PACKAGES) and "." not in name:
            found = getattr(importlib.import_module(module), name, None)
            if isinstance(found, type) and found.__module__ == module:  # a class defined there, not an import
                return found
        raise StateRefused(f"{WORKER_REFUSAL}: the operator state in this checkpoint names {module}.{name}, which "
                           "is not a tefq state type: the checkpoint was written by something other than tefq "
                           "(it may try to run code); use a fresh --checkpoint")


def encode(state: Any) -> bytes:
    """A bucket's state as bytes (pickle protocol 5)."""
    return pickle.dumps(state, protocol=5)


def decode(blob: bytes) -> Any:
    """The state `encode` wrote; refuses (StateRefused) any name outside the allow-list."""
    return StateUnpickler(io.BytesIO(blob)).load()
