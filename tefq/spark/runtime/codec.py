"""Every payload tefq writes to a file and reads back, as data: never code, never `pickle`.

Two kinds of payload cross a file: the operator state Spark keeps in a `--checkpoint` between
micro-batches, and the records of a query's sink (rows, terms, metrics, warnings, facts). A
hand-made file in a checkpoint directory must not be able to run anything when tefq reads it back,
so both are encoded here, in one format, and read back by one decoder that checks them against the
type the reader expects.

    blob = encode(value, Hint)            # Hint: a type hint (a class, dict[int, str], ...)
    value = decode(blob, Hint, "what")    # CodecError (exit 2) unless blob is a Hint, as tefq wrote it

(`encode_json` / `decode_json`: the same check over plain JSON, for the records Spark parses too.)

A sink record may be compressed (`encode(..., compress=True)`): `ZSTD_MAGIC`, the plain payload's
length (8 bytes, little-endian, at most `MAX_PAYLOAD`) and its zstd frame; `decode` takes either.
Why: a micro-batch's rows of UC1 are one 12-39 MB record per bucket that zstd makes 0.2-0.7 MB in
4-12 ms (ticks in order, group codes repeating), and the JVM copies and writes every byte of a
record into the sink, then the driver reads it back.

Format: `MAGIC`, the header's length (8 bytes, little-endian), a JSON header `{"v": tree, "a": arrays}`
and the arrays' bytes (each at a 16-byte aligned offset). The tree is JSON: null, booleans, strings,
numbers and lists stand for themselves; anything else is an object of one tag: `{"t": [...]}` a
tuple, `{"s": [...]}` a set, `{"fs": [...]}` a frozenset, `{"d": [keys, values]}` a dict, `{"i":
hex}` an integer beyond 64 bits, `{"x": k}` bytes, `{"a": k}` a numeric numpy array (`arrays[k]` =
[dtype, shape, offset]), `{"o": [shape, items]}` an object array, `{"u": [shape, validity, offsets,
text]}` an object array of strings (and None) in Arrow's string layout (three arrays; validity -1:
none), `{"n": [dtype, value]}` a numpy scalar, `{"dec": text}` a Decimal, `{"q": [numerator,
denominator]}` a Fraction, `{"df": [rows, [[name, column], ...]]}` a DataFrame (a column: an
array, or `{"cat": [codes, categories, ordered]}`), `{"c": [class name, {field: value}]}` an
instance of a data class.

The schema: the hint. A class may appear only where the hint allows it (by name, among the classes
reachable from the hint through field annotations; a union tells its options apart by name) and
is rebuilt without calling any of its code (`object.__new__`, then its fields) from exactly its
annotated fields (a dataclass's fields, or a plain class's class-level annotations; a slotted
class's slots), each checked against its annotation. A class whose module imports an annotated
type only when needed names it in `annotation_types()`. The objects of an object array are
`Annotated[np.ndarray, ItemHint]`'s items (plain data without one). Numeric arrays are plain
dtypes only (no object, no structured dtype); Arrow strings are validated before use; under `Any`
only builtin data, arrays and frames are accepted. `encode` applies the same check, so a state
class whose fields drift from its annotations fails in the tests, not in a user's run.
"""
from __future__ import annotations

import json
import re
import struct
import types
import typing
from decimal import Decimal
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from tefq.errors import TefqError

MAGIC = b"TEFQ-DATA\x00v1\n"
ZSTD_MAGIC = b"TEFQ-ZSTD\x00v1\n"
MAX_PAYLOAD = (1 << 31) - 1  # Spark's binary values stop at 2 GiB: a longer plain payload is not tefq's
COMPRESS_ABOVE = 1 << 16  # smaller payloads go plain (metrics, warnings, terms of a few groups)
MAX_DEPTH = 48  # nesting of a tree (containers and objects); tefq's own payloads stay under 12
ALIGN = 16
PLAIN_DTYPE = re.compile(r"^[<>|=][biufcmM]\d{1,2}(\[\w+\])?$|^[<>|=][US]\d{1,9}$")
SCALARS = {int, float, str, bool, type(None)}  # JSON's own values
INT64 = 1 << 63


class CodecError(TefqError):
    """A payload that is not data tefq wrote (exit 2, naming what was read)."""


# ---------------------------------------------------------------------------------------- the schema
class Spec:
    """What one position of a payload may hold (made from a type hint by `spec`)."""

    name = "data"

    def check(self, value: Any) -> bool:
        return True


class AnySpec(Spec):
    """Builtin data, arrays and frames, no class of tefq's."""


class ScalarSpec(Spec):
    def __init__(self, kinds: tuple[type, ...], name: str) -> None:
        self.kinds, self.name = kinds, name

    def check(self, value: Any) -> bool:
        return type(value) in self.kinds


class ArraySpec(Spec):
    """A numpy array; the objects of an object array are `item`s (`Annotated[np.ndarray, Item]`)."""

    name = "numpy array"

    def __init__(self, item: Spec | None = None) -> None:
        self.item = item or AnySpec()

    def check(self, value: Any) -> bool:
        return type(value) is np.ndarray


class FrameSpec(Spec):
    name = "DataFrame"

    def check(self, value: Any) -> bool:
        import pandas as pd

        return type(value) is pd.DataFrame


class ListSpec(Spec):
    def __init__(self, kind: type, item: Spec) -> None:
        self.kind, self.item, self.name = kind, item, f"{kind.__name__}[{item.name}]"

    def check(self, value: Any) -> bool:
        return type(value) is self.kind


class TupleSpec(Spec):
    """tuple[A, B] (`items`) or tuple[A, ...] (`items` None, `item` A)."""

    def __init__(self, items: tuple[Spec, ...] | None, item: Spec) -> None:
        self.items, self.item, self.name = items, item, "tuple"

    def check(self, value: Any) -> bool:
        return type(value) is tuple and (self.items is None or len(value) == len(self.items))

    def at(self, i: int) -> Spec:
        return self.item if self.items is None else self.items[i]


class DictSpec(Spec):
    def __init__(self, key: Spec, value: Spec) -> None:
        self.key, self.value, self.name = key, value, f"dict[{key.name}, {value.name}]"

    def check(self, value: Any) -> bool:
        return type(value) is dict


class UnionSpec(Spec):
    def __init__(self, options: tuple[Spec, ...]) -> None:
        self.options, self.name = options, " | ".join(o.name for o in options)

    def check(self, value: Any) -> bool:
        return any(o.check(value) for o in self.options)

    def pick(self, value: Any) -> Spec:
        return next((o for o in self.options if o.check(value)), self.options[0])

    def of_class(self, name: str) -> "ClassSpec | None":
        return next((o for o in self.options if isinstance(o, ClassSpec) and o.name == name), None)


class ClassSpec(Spec):
    """One of tefq's data classes: rebuilt from its annotated fields, its code never called. Its
    fields live in its __dict__, or in slots (`slotted`: each a plain slot, no property)."""

    def __init__(self, cls: type) -> None:
        if issubclass(cls, (tuple, dict, list, set, np.ndarray)):
            raise TypeError(f"{cls.__qualname__}: a payload class keeps its fields in attributes")
        self.cls, self.name, self.slotted = cls, cls.__qualname__, not cls.__dictoffset__

    @cached_property
    def fields(self) -> dict[str, Spec]:
        lazy = getattr(self.cls, "annotation_types", dict)()  # classes its module imports lazily
        hints = typing.get_type_hints(self.cls, localns=lazy, include_extras=True)
        fields = {f: spec(h) for f, h in hints.items() if typing.get_origin(h) is not typing.ClassVar
                  and h is not typing.ClassVar}
        if self.slotted and not all(isinstance(getattr(self.cls, f, None), types.MemberDescriptorType)
                                    for f in fields):
            raise TypeError(f"{self.name}: each annotated field of a slotted payload class is a slot")
        return fields

    def held(self, obj: Any) -> dict[str, Any]:
        """The fields `obj` holds (a slotted class: its annotated ones)."""
        return {f: getattr(obj, f) for f in self.fields} if self.slotted else vars(obj)

    def build(self, fields: dict[str, Any]) -> Any:
        """An instance holding `fields`, made without calling the class's code."""
        obj = object.__new__(self.cls)
        if self.slotted:
            for f, v in fields.items():
                object.__setattr__(obj, f, v)  # a slot's own descriptor: nothing of the class runs
        else:
            vars(obj).update(fields)
        return obj

    def check(self, value: Any) -> bool:
        return type(value) is self.cls


def spec(hint: Any) -> Spec:
    """The Spec of a type hint (cached: one per hint)."""
    return _spec(hint)


@lru_cache(maxsize=None)
def _spec(hint: Any) -> Spec:
    import pandas as pd

    plain = {int: ScalarSpec((int, bool), "int"), float: ScalarSpec((float, int), "float"),
             str: ScalarSpec((str,), "str"), bool: ScalarSpec((bool,), "bool"), bytes: ScalarSpec((bytes,), "bytes"),
             type(None): ScalarSpec((type(None),), "None"), None: ScalarSpec((type(None),), "None"),
             Decimal: ScalarSpec((Decimal,), "Decimal"), Fraction: ScalarSpec((Fraction,), "Fraction"),
             np.ndarray: ArraySpec(), pd.DataFrame: FrameSpec(), Any: AnySpec(), object: AnySpec()}
    if hint in plain:
        return plain[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated and args[0] is np.ndarray:
        return ArraySpec(spec(hint.__metadata__[0]))
    if origin in (typing.Union, types.UnionType):
        return UnionSpec(tuple(spec(a) for a in args))
    if hint in (list, set, frozenset) or origin in (list, set, frozenset):
        kind = origin or hint
        return ListSpec(kind, spec(args[0]) if args else AnySpec())
    if hint is dict or origin is dict:
        return DictSpec(spec(args[0]), spec(args[1])) if args else DictSpec(AnySpec(), AnySpec())
    if hint is tuple or origin is tuple:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return TupleSpec(None, spec(args[0]) if args else AnySpec())
        return TupleSpec(tuple(spec(a) for a in args), AnySpec())
    if isinstance(hint, type):
        return ClassSpec(hint)
    raise TypeError(f"no payload can hold a {hint!r}")


# ------------------------------------------------------------------------------------------ encoding
def encode(value: Any, hint: Any = Any, *, compress: bool = False) -> bytes:
    """`value`, which must be a `hint` (TypeError if not: a bug of the writer), as bytes; with
    `compress`, zstd-compressed when longer than COMPRESS_ABOVE (module doc)."""
    writer = Writer()
    tree = writer.node(value, spec(hint), 0)
    header = json.dumps({"v": tree, "a": writer.arrays}, ensure_ascii=False, separators=(",", ":"))
    head = header.encode("utf-8", "surrogatepass")
    start = len(MAGIC) + 8 + len(head)
    pad = -start % ALIGN
    blob = b"".join([MAGIC, struct.pack("<Q", len(head)), head, b"\0" * pad, *writer.chunks])
    return compressed(blob) if compress and len(blob) > COMPRESS_ABOVE else blob


def compressed(blob: bytes) -> bytes:
    """An `encode` result as a compressed payload (module doc)."""
    import pyarrow as pa

    return b"".join([ZSTD_MAGIC, struct.pack("<Q", len(blob)), pa.compress(blob, "zstd", asbytes=True)])


def inflated(blob: bytes | bytearray | memoryview, what: str) -> bytes | bytearray | memoryview:
    """A compressed payload's plain bytes (any other blob as it is); CodecError if its stated
    length is beyond MAX_PAYLOAD or is not what its frame holds."""
    import pyarrow as pa

    if not isinstance(blob, (bytes, bytearray, memoryview)) or bytes(blob[:len(ZSTD_MAGIC)]) != ZSTD_MAGIC:
        return blob
    start = len(ZSTD_MAGIC) + 8
    if len(blob) < start:
        raise CodecError(f"{what} is not data tefq wrote: its compressed payload is cut off")
    (size,) = struct.unpack_from("<Q", blob, len(ZSTD_MAGIC))
    if size > MAX_PAYLOAD:
        raise CodecError(f"{what} is not data tefq wrote: it claims {size:,} bytes uncompressed, more than a "
                         f"payload holds ({MAX_PAYLOAD:,})")
    try:
        return pa.decompress(memoryview(blob)[start:], size, "zstd", asbytes=True)
    except (OSError, pa.ArrowException) as e:
        raise CodecError(f"{what} is not data tefq wrote: its compressed payload is damaged ({str(e)[:120]})") from None


class Writer:
    """One encoding: the tree is returned, the arrays' bytes gathered in `chunks`."""

    def __init__(self) -> None:
        self.arrays: list = []
        self.chunks: list = []  # the arrays' memory, copied once, by the final join
        self.size = 0

    def buffer(self, data: np.ndarray) -> int:
        data = np.ascontiguousarray(data)
        self.arrays.append([data.dtype.str, list(data.shape), self.size])
        pad = -data.nbytes % ALIGN
        self.chunks += [memoryview(data.reshape(-1).view(np.uint8)), b"\0" * pad]
        self.size += data.nbytes + pad
        return len(self.arrays) - 1

    def node(self, v: Any, s: Spec, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise TypeError("a payload nested too deep")
        if isinstance(s, UnionSpec):
            s = s.pick(v)
        if not s.check(v) and not isinstance(s, AnySpec):
            v = coerced(v, s)
        t = type(v)
        if t in SCALARS:
            return v if t is not int or -INT64 <= v < INT64 else {"i": hex(v)}
        if t is list:
            return self.items(v, item_spec(s), depth)
        if t in (tuple, set, frozenset):
            tag = {tuple: "t", set: "s", frozenset: "fs"}[t]
            if isinstance(s, TupleSpec):
                return {tag: [self.node(x, s.at(i), depth + 1) for i, x in enumerate(v)]}
            return {tag: self.items(list(v), item_spec(s), depth)}
        if t is dict:
            ks, vs = (s.key, s.value) if isinstance(s, DictSpec) else (AnySpec(), AnySpec())
            return {"d": [self.items(list(v), ks, depth), self.items(list(v.values()), vs, depth)]}
        if t is np.ndarray:
            if v.dtype.kind == "O":
                item = s.item if isinstance(s, ArraySpec) else AnySpec()
                return self.strings(v) or {"o": [list(v.shape), self.items(v.ravel().tolist(), item, depth)]}
            if not PLAIN_DTYPE.match(v.dtype.str):
                raise TypeError(f"no payload holds arrays of dtype {v.dtype}")
            return {"a": self.buffer(v)}
        if isinstance(v, np.generic) and v.dtype.kind in "biuf":
            return {"n": [v.dtype.str, v.item()]}
        if t is bytes:
            return {"x": self.buffer(np.frombuffer(v, np.uint8))}
        if t is Decimal:
            return {"dec": str(v)}
        if t is Fraction:
            return {"q": [self.node(v.numerator, AnySpec(), depth), self.node(v.denominator, AnySpec(), depth)]}
        if isinstance(s, ClassSpec) and t is s.cls:
            return {"c": [s.name, self.fields(v, s, depth)]}
        if FrameSpec().check(v):
            return self.frame(v, depth)
        raise TypeError(f"a payload position of type {s.name} got a {t.__qualname__}")

    def strings(self, v: np.ndarray) -> dict | None:
        """An object array of strings and None in Arrow's layout (None if it holds anything else):
        a million terms decode in a tenth of the time a JSON list takes."""
        import pyarrow as pa

        try:
            arr = pa.array(v.reshape(-1), type=pa.large_string())
        except (pa.ArrowException, UnicodeError):  # another type, or a lone surrogate (no UTF-8)
            return None
        validity, offsets, text = arr.buffers()
        keys = [-1 if validity is None else self.buffer(np.frombuffer(validity, np.uint8)),
                self.buffer(np.frombuffer(offsets, np.int64, len(arr) + 1)), self.buffer(np.frombuffer(text, np.uint8))]
        return {"u": [list(v.shape), *keys]}

    def items(self, values: list, s: Spec, depth: int) -> list:
        """`values` as tree nodes: as they are when all are JSON scalars of the spec's kinds (no
        per-item work, for a million terms), else one by one."""
        if plain_scalars(values, s) and (int not in set(map(type, values)) or in_int64(values)):
            return values
        return [self.node(x, s, depth + 1) for x in values]

    def fields(self, obj: Any, s: ClassSpec, depth: int) -> dict:
        held = s.held(obj)
        if held.keys() != s.fields.keys():
            raise TypeError(f"{s.name} holds {sorted(held)}, its annotations name {sorted(s.fields)}")
        out = {}
        for f, fs in s.fields.items():
            try:
                out[f] = self.node(held[f], fs, depth + 1)
            except TypeError as e:
                raise TypeError(f"{s.name}.{f}: {e}") from None
        return out

    def frame(self, df: Any, depth: int) -> dict:
        import pandas as pd

        if not df.index.equals(pd.RangeIndex(len(df))) or not all(type(c) is str for c in df.columns):
            raise TypeError("a payload's DataFrame has a plain index (0..n-1) and string column names")
        cols = []
        for name in df.columns:
            col = df[name]
            if isinstance(col.dtype, pd.CategoricalDtype):
                cat = col.array
                cols.append([name, {"cat": [self.node(cat.codes, ArraySpec(), depth + 1),
                                            self.node(cat.categories.to_numpy(), ArraySpec(), depth + 1),
                                            bool(cat.ordered)]}])
            else:
                cols.append([name, self.node(col.to_numpy(), ArraySpec(), depth + 1)])
        return {"df": [len(df), cols]}


def plain_scalars(values: list, s: Spec) -> bool:
    """Whether every item is a JSON scalar that `s` accepts as it is."""
    kinds = set(map(type, values))
    if not kinds <= SCALARS:
        return False
    if isinstance(s, AnySpec):
        return True
    if isinstance(s, ScalarSpec):
        return kinds <= set(s.kinds)
    return all(map(s.check, values))


def in_int64(values: list) -> bool:
    """Whether every int among `values` fits JSON's 64-bit numbers (else it is written in hex)."""
    if set(map(type, values)) <= {int, bool}:
        return -INT64 <= min(values) and max(values) < INT64
    return all(-INT64 <= x < INT64 for x in values if type(x) is int)


def item_spec(s: Spec) -> Spec:
    return s.item if isinstance(s, (ListSpec, TupleSpec)) else AnySpec()


def coerced(v: Any, s: Spec) -> Any:
    """numpy's scalars where a Python int, float or bool is expected (the same value); else TypeError."""
    if isinstance(s, ScalarSpec) and isinstance(v, np.generic):
        plain = v.item()
        if s.check(plain):
            return plain
    raise TypeError(f"a payload position of type {s.name} got a {type(v).__qualname__}")


# ------------------------------------------------------------------------------------------ decoding
def decode(blob: bytes, hint: Any = Any, what: str = "a payload") -> Any:
    """The `hint` that `encode` wrote into `blob`; CodecError (exit 2, naming `what`) for anything
    else: another format (an old checkpoint's pickle included: it is never unpickled), a damaged
    payload, or one that does not match `hint`."""
    blob = inflated(blob, what)
    if not isinstance(blob, (bytes, bytearray, memoryview)) or not bytes(blob[:len(MAGIC)]) == MAGIC:
        raise CodecError(f"{what} is not in the format this tefq writes (it was written by another tefq "
                         "version, or by something other than tefq)")
    try:
        (size,) = struct.unpack_from("<Q", blob, len(MAGIC))
        start = len(MAGIC) + 8
        header = json.loads(bytes(blob[start:start + size]).decode("utf-8", "surrogatepass"))
        data = start + size + (-(start + size) % ALIGN)
        reader = Reader(bytearray(memoryview(blob)[data:]), header["a"])  # one copy, writable
        return reader.node(header["v"], spec(hint), 0)
    except CodecError as e:
        raise CodecError(f"{what} is not data tefq wrote: {e.message}") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError, RecursionError,
            struct.error) as e:
        raise CodecError(f"{what} is not data tefq wrote: {type(e).__name__}: {str(e)[:200]}") from None


class Reader:
    """One decoding: the tree checked and rebuilt, arrays as views of one writable buffer."""

    def __init__(self, data: bytearray, arrays: list) -> None:
        if type(arrays) is not list:
            raise CodecError("its array table is not a list")
        self.data, self.arrays = data, arrays

    def array(self, k: Any) -> np.ndarray:
        if type(k) is not int or not 0 <= k < len(self.arrays):
            raise CodecError(f"array {k!r} is not in its array table")
        dtype, shape, offset = self.arrays[k]
        if type(dtype) is not str or not PLAIN_DTYPE.match(dtype) or type(offset) is not int or offset < 0 \
                or type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
            raise CodecError(f"array {k} is described as {self.arrays[k]!r}")
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=object)) if shape else 1
        if offset + count * dt.itemsize > len(self.data):
            raise CodecError(f"array {k} ends past the payload's end")
        return np.frombuffer(self.data, dt, count, offset).reshape(shape)

    def node(self, n: Any, s: Spec, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise CodecError(f"it is nested more than {MAX_DEPTH} deep")
        v = self.value(n, s, depth)
        if not s.check(v):
            raise CodecError(f"a {s.name} was expected, it holds a {type(v).__qualname__}")
        return v

    def value(self, n: Any, s: Spec, depth: int) -> Any:
        t = type(n)
        if t in SCALARS:
            return n
        if t is list:
            return self.items(n, item_spec(s if not isinstance(s, UnionSpec) else s.pick([])), depth)
        if t is not dict or len(n) != 1:
            raise CodecError(f"a node {str(n)[:60]!r} of no known form")
        (tag, body), = n.items()
        if isinstance(s, UnionSpec):
            s = self.option(s, tag, body)
        if tag in ("t", "s", "fs") and type(body) is list:
            if isinstance(s, TupleSpec):
                if s.items is not None and len(body) != len(s.items):
                    raise CodecError(f"a tuple of {len(s.items)} holds {len(body)}")
                return tuple(self.node(x, s.at(i), depth + 1) for i, x in enumerate(body))
            items = self.items(body, item_spec(s), depth)
            return {"t": tuple, "s": set, "fs": frozenset}[tag](items)
        if tag == "d" and type(body) is list and len(body) == 2:
            ks, vs = (s.key, s.value) if isinstance(s, DictSpec) else (AnySpec(), AnySpec())
            keys, values = self.items(body[0], ks, depth), self.items(body[1], vs, depth)
            if len(keys) != len(values):
                raise CodecError("a dict's keys and values differ in number")
            return dict(zip(keys, values))
        return self.tagged(tag, body, s, depth)

    def option(self, s: UnionSpec, tag: str, body: Any) -> Spec:
        """The option of a union a tagged node is (a class by its name; else the first container)."""
        if tag == "c" and type(body) is list and body:
            found = s.of_class(body[0])
            if found is None:
                raise CodecError(f"it names {str(body[0])[:80]}, which is not a {s.name}")
            return found
        kinds = {"t": TupleSpec, "s": ListSpec, "fs": ListSpec, "d": DictSpec}
        return next((o for o in s.options if isinstance(o, kinds.get(tag, ()))), AnySpec())

    def items(self, body: Any, s: Spec, depth: int) -> list:
        if type(body) is not list:
            raise CodecError("a list was expected")
        if plain_scalars(body, s):
            return body
        return [self.node(x, s, depth + 1) for x in body]

    def tagged(self, tag: str, body: Any, s: Spec, depth: int) -> Any:
        if tag == "i" and type(body) is str and re.fullmatch(r"-?0x[0-9a-f]+", body):
            return int(body, 16)
        if tag == "a":
            return self.array(body)
        if tag == "x":
            return self.array(body).tobytes()
        if tag == "u" and type(body) is list and len(body) == 4 and type(body[0]) is list:
            return self.strings(body, s)
        if tag == "o" and type(body) is list and len(body) == 2 and type(body[0]) is list:
            return object_array(self.items(body[1], s.item if isinstance(s, ArraySpec) else AnySpec(), depth), body[0])
        if tag == "n" and type(body) is list and len(body) == 2 and type(body[0]) is str \
                and re.fullmatch(r"[<>|=][biuf]\d{1,2}", body[0]) and type(body[1]) in (int, float, bool):
            return np.dtype(body[0]).type(body[1])
        if tag == "dec" and type(body) is str and len(body) < 400:
            return Decimal(body)
        if tag == "q" and type(body) is list and len(body) == 2:
            num, den = (self.node(x, ScalarSpec((int,), "int"), depth + 1) for x in body)
            return Fraction(num, den)
        if tag == "df" and type(body) is list and len(body) == 2:
            return self.frame(body, depth)
        if tag == "c" and type(body) is list and len(body) == 2:
            return self.instance(body, s, depth)
        raise CodecError(f"a node of tag {tag[:20]!r} holding {str(body)[:60]!r}")

    def strings(self, body: list, s: Spec) -> np.ndarray:
        """An object array of strings (None: null) from Arrow buffers, fully validated first."""
        import pyarrow as pa

        shape, validity, offsets, text = body
        offsets = self.array(offsets)
        n = len(offsets) - 1
        buffers = [None if validity == -1 else pa.py_buffer(self.array(validity)), pa.py_buffer(offsets),
                   pa.py_buffer(self.array(text))]
        arr = pa.Array.from_buffers(pa.large_string(), n, buffers)
        try:
            arr.validate(full=True)  # offsets in bounds and increasing, UTF-8 text
        except pa.ArrowException as e:
            raise CodecError(f"its string array is damaged: {str(e)[:120]}") from None
        item = s.item if isinstance(s, ArraySpec) else AnySpec()
        if not item.check("") or arr.null_count and not item.check(None):
            raise CodecError(f"an array of {item.name} holds strings and None")
        return arr.to_numpy(zero_copy_only=False).reshape(shape)

    def instance(self, body: list, s: Spec, depth: int) -> Any:
        name, fields = body
        if not isinstance(s, ClassSpec) or name != s.name:
            raise CodecError(f"it names {str(name)[:80]}, which is not a {s.name}")
        if type(fields) is not dict or fields.keys() != s.fields.keys():
            raise CodecError(f"its {s.name} has fields {sorted(map(str, fields))[:20]}, not {sorted(s.fields)}")
        return s.build({f: self.node(fields[f], fs, depth + 1) for f, fs in s.fields.items()})

    def frame(self, body: list, depth: int) -> Any:
        import pandas as pd

        rows, cols = body
        if type(rows) is not int or type(cols) is not list:
            raise CodecError("a DataFrame of no known form")
        out = {}
        for name, col in cols:
            if type(name) is not str:
                raise CodecError("a DataFrame column without a name")
            if type(col) is dict and set(col) == {"cat"} and type(col["cat"]) is list and len(col["cat"]) == 3:
                codes, cats, ordered = col["cat"]
                out[name] = pd.Categorical.from_codes(self.node(codes, ArraySpec(), depth + 1),
                                                      self.node(cats, ArraySpec(), depth + 1), bool(ordered))
            else:
                out[name] = self.node(col, ArraySpec(), depth + 1)
            if len(out[name]) != rows or np.ndim(out[name]) != 1:
                raise CodecError(f"DataFrame column {name[:40]!r} is not {rows} values long")
        return pd.DataFrame(out, index=pd.RangeIndex(rows), copy=False)


# ------------------------------------------------------------------------- JSON, for what Spark reads too
def encode_json(value: Any, hint: Any = Any) -> bytes:
    """`value` (JSON's own data: dicts with string keys, lists, strings, numbers, booleans, None)
    as JSON text: for records that Spark reads itself as well (the metrics: `get_json_object`)."""
    if not json_data(value, spec(hint), 0):
        raise TypeError(f"a JSON payload of type {spec(hint).name} got {str(value)[:80]}")
    return json.dumps(value).encode("utf-8")


def decode_json(blob: bytes, hint: Any = Any, what: str = "a payload") -> Any:
    """What `encode_json` wrote, checked against `hint`; CodecError (exit 2) for anything else."""
    try:
        value = json.loads(bytes(blob).decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise CodecError(f"{what} is not data tefq wrote: {type(e).__name__}: {str(e)[:200]}") from None
    if not json_data(value, spec(hint), 0):
        raise CodecError(f"{what} is not data tefq wrote: a {spec(hint).name} was expected")
    return value


def json_data(v: Any, s: Spec, depth: int) -> bool:
    """Whether `v` is JSON data of type `s` (nested at most MAX_DEPTH deep)."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(s, UnionSpec):
        return any(json_data(v, o, depth) for o in s.options)
    if type(v) is dict:
        ks, vs = (s.key, s.value) if isinstance(s, DictSpec) else (AnySpec(), AnySpec())
        return isinstance(s, (DictSpec, AnySpec)) and all(type(k) is str and ks.check(k) for k in v) \
            and all(json_data(x, vs, depth + 1) for x in v.values())
    if type(v) is list:
        return (isinstance(s, AnySpec) or isinstance(s, ListSpec) and s.kind is list) \
            and all(json_data(x, item_spec(s), depth + 1) for x in v)
    return type(v) in SCALARS and s.check(v)


def object_array(items: list, shape: list) -> np.ndarray:
    """An object array of `items` (any of them may be a tuple: set one by one, never broadcast)."""
    out = np.empty(len(items), dtype=object)
    if set(map(type, items)) <= SCALARS:
        out[:] = items
    else:
        for i, x in enumerate(items):
            out[i] = x
    return out.reshape(shape)
