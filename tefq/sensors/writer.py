"""Write the simulated observations as stream files: DIR/observations/part-NNNNN.<ext>.

Terms are built column-wise (pyarrow compute) from the numbered observations, nine triples per
observation in message order. Parquet and TSV are written column-wise too; CSV, N-Quads and
TriG go through tefq.io.stream_writers (element by element: fine for the sizes one converts).
Files hold a fixed number of elements, so a Spark file source reads the directory as a stream.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tefq.errors import TefqError
from tefq.io.stream_writers import FORMATS, write_stream
from tefq.iptv.writer import rows_per_file
from tefq.sensors import model as m
from tefq.sensors.generator import Chunk, SensorsConfig, simulate


@dataclass
class Written:
    """What a generation run wrote."""

    files: list[str] = field(default_factory=list)
    events: int = 0
    observations: int = 0
    first_ts: int | None = None
    last_ts: int = 0
    kinds: list[int] = field(default_factory=lambda: [0] * len(m.KINDS))  # observations per kind


def _numbered(name: str, numbers: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(f"<{m.NS}{name}", pc.cast(pa.array(numbers), pa.string()), ">", "")


def _constant(values: list[str], index: np.ndarray) -> pa.Array:
    return pa.array(values, pa.string()).take(pa.array(index.astype(np.int32)))


def _literal(lexical: list[str] | np.ndarray, datatype: str) -> pa.Array:
    return pc.binary_join_element_wise('"', pa.array(lexical, pa.string()), f'"^^<{m.XSD}{datatype}>', "")


def observation_table(chunk: Chunk) -> pa.Table:
    """ts, s, p, o: each observation's nine triples, one after the other."""
    n = len(chunk)
    obs, res = _numbered("obs", chunk.number), _numbered("res", chunk.number)
    sensor, pipe = _numbered("sensor", chunk.sensor), _numbered("pipe", m.pipe_of(chunk.sensor))
    times = np.char.add(np.datetime_as_string(chunk.ts.astype("datetime64[ms]"), unit="ms"), "Z")
    subjects = [obs, obs, obs, obs, res, res, obs, sensor, pipe]
    objects = [
        _constant([m.iri(m.NS + c) for c in m.CLASSES], chunk.kind),
        sensor,
        _constant([m.iri(m.NS + k) for k in m.KINDS], chunk.kind),
        res,
        _literal([repr(float(v)) for v in chunk.value.tolist()], "double"),
        _constant([m.iri(m.UNIT + u) for u in m.UNITS], chunk.kind),
        _literal(times, "dateTime"),
        pipe,
        _numbered("zone", m.zone_of(m.pipe_of(chunk.sensor))),
    ]
    k = m.TRIPLES_PER_OBSERVATION
    order = pa.array((np.arange(k)[None, :] * n + np.arange(n)[:, None]).ravel())  # observation by observation
    return pa.table({
        "ts": pa.array(np.repeat(chunk.ts, k), pa.int64()),
        "s": pa.concat_arrays(subjects).take(order),
        "p": _constant([m.iri(p) for p in m.PREDICATES], np.tile(np.arange(k), n)),
        "o": pa.concat_arrays(objects).take(order),
    })


def write_table(table: pa.Table, path: str, fmt: str) -> None:
    if fmt == "parquet":
        pq.write_table(table, path, compression="snappy", use_dictionary=["p"], write_statistics=["ts"],
                       store_schema=False)
    elif fmt == "tsv":  # generated terms hold no TAB or newline: one line per element, no quoting
        lines = pc.binary_join_element_wise(pc.cast(table["ts"], pa.string()), table["s"], table["p"], table["o"], "\t")
        with open(path, "w", encoding="utf-8") as f:
            f.write("ts\ts\tp\to\n")
            for line in lines.to_pylist():
                f.write(line + "\n")
    else:
        write_stream(zip(*(table[c].to_pylist() for c in ("ts", "s", "p", "o"))), path, fmt)


def generate(cfg: SensorsConfig, out: str, fmt: str = "parquet") -> Written:
    """Write the observation stream of `cfg` under directory `out` (in `out/observations`)."""
    cfg.check()
    if fmt not in FORMATS:
        raise TefqError(f"unknown format '{fmt}' (expected one of {', '.join(FORMATS)})", file="--format")
    if os.path.exists(out) and not os.path.isdir(out):
        raise TefqError(f"--out must be a directory, and {out} is a file", file="--out")
    directory = os.path.join(out, m.STREAM_DIR)
    if os.path.isdir(directory) and any(f.startswith("part-") for f in os.listdir(directory)):
        raise TefqError(f"{directory} already holds generated files: choose an empty --out", file="--out")
    os.makedirs(directory, exist_ok=True)
    written = Written()
    per_file = max(1, rows_per_file(cfg.events) // m.TRIPLES_PER_OBSERVATION)
    for i, chunk in enumerate(simulate(cfg, per_file)):
        path = os.path.join(directory, f"part-{i:05d}.{fmt}")
        table = observation_table(chunk)
        write_table(table, path, fmt)
        written.files.append(path)
        written.events += table.num_rows
        written.observations += len(chunk)
        written.first_ts = int(chunk.ts[0]) if written.first_ts is None else written.first_ts
        written.last_ts = int(chunk.ts[-1])
        for k, n in enumerate(np.bincount(chunk.kind, minlength=len(m.KINDS)).tolist()):
            written.kinds[k] += n
    return written


__all__ = ["generate", "observation_table", "write_table", "Written"]
