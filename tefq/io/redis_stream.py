"""Redis Streams as a tefq stream, without Spark: the `redis://HOST:PORT/KEY` address, positions
(entry IDs), reading entries back as checked elements (a page at a time, as Arrow columns:
`entry_columns`), and adding elements (`tefq publish`).

An entry has the fields `ts`, `s`, `p`, `o`, holding what the four cells of a TSV row hold; it is
checked by the rules of a file row (`tefq.io.validate`: UTF-8, no raw NUL, the ts and term rules)
plus one of its own: exactly those four fields (a missing one is `empty-cell`, an extra one
`column-count`). A bad entry is named by the stream and its entry ID, and raised or recorded like
a bad file row (`tefq.io.bad_rows`).

A `Position` is the last entry ID read and `n`, the number of entries the stream had added up to
it (Redis 7's `entries-added`): entries after a position are read with `XRANGE key (ID END`, so a
reader that stores positions (Spark's checkpoint) replays exactly the same entries; `n` numbers
the entries (the `row` of a bad-row record, 1 for the first entry of the stream).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc

from tefq.errors import TefqError
from tefq.io.bad_rows import STRICT, BadRowLog
from tefq.io.readers import in_normal_form
from tefq.io.validate import ROLES, Fault, RowChecker, check_text, decode_line
from tefq.vocabulary import Element

if TYPE_CHECKING:
    import redis

SCHEME = "redis://"
FIELDS = ROLES  # an entry's fields: ts, s, p, o
FIELD_KEYS = tuple(f.encode() for f in FIELDS)
ZERO_ID = "0-0"  # before every entry (the smallest ID Redis gives is 0-1)
PAGE = 10_000  # entries per XRANGE call while reading
ADD_CHUNK = 5_000  # XADD commands per pipeline round trip while publishing
DEFAULT_PORT = 6379

RawEntry = tuple[bytes, list[bytes]]  # (entry ID, [field, value, field, value, ...]): XRANGE's reply
MEMO_SIZE = 1 << 16  # checked terms remembered per role (streams repeat their terms)


def is_redis_url(text: str) -> bool:
    return text.lower().startswith(SCHEME)


@dataclass(frozen=True)
class RedisStream:
    """Where a Redis stream lives. `url` (no password) names it in messages and as a row's `file`."""

    host: str
    port: int
    key: str
    username: str | None = None
    password: str | None = None

    @classmethod
    def parse(cls, text: str) -> "RedisStream":
        """`redis://HOST:PORT/KEY` (PORT defaults to 6379; KEY may be %-escaped). TefqError if not."""
        hint = "expected redis://HOST:PORT/KEY"
        if not is_redis_url(text):
            raise TefqError(f"not a Redis stream address: {hint}", text)
        try:
            parts = urlsplit(text)
            port = parts.port or DEFAULT_PORT
        except ValueError as e:
            raise TefqError(f"bad Redis stream address ({e}): {hint}", text) from None
        key = unquote(parts.path[1:])
        if not parts.hostname or not key or parts.query or parts.fragment:
            raise TefqError(f"bad Redis stream address: {hint}", text)
        return cls(parts.hostname, port, key, unquote(parts.username) if parts.username else None,
                   unquote(parts.password) if parts.password else None)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{SCHEME}{host}:{self.port}/{self.key}"

    def connect(self) -> "redis.Redis":
        """A client (bytes in, bytes out; XRANGE's reply left as Redis sends it: `RawEntry`s, no
        dict per entry); connecting happens at its first command."""
        try:
            import redis
        except ImportError:  # pragma: no cover - a dependency of tefq
            raise TefqError("reading or writing Redis streams needs the Python package redis "
                            "(pip install redis)", self.url) from None
        client = redis.Redis(host=self.host, port=self.port, username=self.username, password=self.password,
                             socket_connect_timeout=10, health_check_interval=30)
        client.set_response_callback("XRANGE", lambda reply, **_: reply)
        return client


@contextlib.contextmanager
def redis_errors(stream: RedisStream) -> Iterator[None]:
    """Redis's connection and command errors as TefqErrors naming the stream (exit 2)."""
    import redis

    try:
        yield
    except redis.exceptions.ConnectionError as e:
        raise TefqError(f"cannot reach Redis at {stream.host}:{stream.port}: {e}", stream.url) from None
    except redis.exceptions.ResponseError as e:
        text = str(e)
        if text.startswith("WRONGTYPE"):
            raise TefqError(f"the key {stream.key!r} holds a Redis value that is not a stream", stream.url) from None
        raise TefqError(f"Redis refused a command: {text}", stream.url) from None
    except redis.exceptions.RedisError as e:
        raise TefqError(f"Redis error: {e}", stream.url) from None


# ---------------------------------------------------------------------------------------------
# Positions

def id_order(entry_id: str) -> tuple[int, int]:
    """An entry ID `ms-seq` as a sortable pair (IDs do not sort as strings: 10-0 > 9-0)."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


@dataclass(frozen=True)
class Position:
    """After entry `id`; `n` entries were added to the stream up to it (see the module doc)."""

    id: str = ZERO_ID
    n: int = 0

    def to_offset(self) -> dict:
        return {"id": self.id, "n": self.n}

    @classmethod
    def of_offset(cls, offset: Mapping) -> "Position":
        return cls(str(offset["id"]), int(offset["n"]))

    def is_before(self, other: "Position") -> bool:
        return id_order(self.id) < id_order(other.id)


def head(client: "redis.Redis", stream: RedisStream) -> Position:
    """The stream's last entry ID and entries added so far; an absent key is an empty stream (a
    live run may start before the publisher)."""
    import redis

    with redis_errors(stream):
        try:
            info = client.xinfo_stream(stream.key)
        except redis.exceptions.ResponseError as e:
            if "no such key" in str(e).lower():
                return Position()
            raise
    if "entries-added" not in info:
        raise TefqError("reading Redis streams needs Redis 7.0 or later (XINFO STREAM gives no entries-added)",
                        stream.url)
    last = info["last-generated-id"]
    return Position(last.decode() if isinstance(last, bytes) else str(last), int(info["entries-added"]))


def unread_gap(client: "redis.Redis", stream: RedisStream, start: Position) -> str | None:
    """Entries after `start` that left the stream (XTRIM, MAXLEN, XDEL) before a reader that stopped at
    `start` read them, in words (how many, which IDs), else None. Counted from XINFO STREAM:
    entries added since `start` less those still there after it. A reader at the very start
    (`0-0`: a fresh run reads what is there) and a stream made again from 0 have none."""
    import redis

    if start.id == ZERO_ID:
        return None
    with redis_errors(stream):
        try:
            info = client.xinfo_stream(stream.key)
        except redis.exceptions.ResponseError as e:
            if "no such key" not in str(e).lower():
                raise
            info = {"entries-added": 0, "length": 0, "first-entry": None, "max-deleted-entry-id": b"0-0"}
    added = int(info.get("entries-added", 0)) - start.n
    if added <= 0:
        return None  # nothing added since `start` (or a stream made again: counted from 0)
    first = _text(info["first-entry"][0]) if info.get("first-entry") else None
    deleted = _text(info.get("max-deleted-entry-id")) or ZERO_ID  # XDEL's last (XTRIM leaves it)
    if first is None or id_order(first) > id_order(start.id):  # trimmed past `start`: all left are unread
        present, where = int(info.get("length", 0)), (f"before {first}" if first else "the stream is empty now")
    elif id_order(deleted) > id_order(start.id):  # entries deleted after `start`: count what is left
        with redis_errors(stream):
            present = int(client.eval(COUNT_SCRIPT, 1, stream.key, "(" + start.id, "+"))
        where = f"up to {deleted}"
    else:
        return None
    lost = added - present
    if lost <= 0:
        return None
    return (f"{lost} entries after {start.id} (the last entry read, by this run or the one its --checkpoint "
            f"holds) were removed from the stream (XTRIM, MAXLEN or XDEL) before tefq read them ({where}): "
            "every tick after them would miss their events. Run with --accept-gaps to go on without them")


def _text(value: object) -> str | None:
    return value.decode() if isinstance(value, bytes) else None if value is None else str(value)


def advance(client: "redis.Redis", stream: RedisStream, start: Position, latest: Position,
            max_entries: int | None) -> Position:
    """Where a read from `start` ends: `latest`, or with `max_entries` the position after that many
    entries (found by reading them: Redis cannot skip N entries without reading them)."""
    if not start.is_before(latest):
        return start
    # a stream deleted and made again counts from 0: go on counting from `start`
    n = latest.n if latest.n >= start.n else start.n + latest.n
    if max_entries is None or n - start.n <= max_entries:
        return Position(latest.id, n)
    with redis_errors(stream):
        page = client.xrange(stream.key, "(" + start.id, latest.id, count=max_entries)
    if len(page) < max_entries:  # entries were deleted: what is left fits
        return Position(latest.id, n)
    return Position(page[-1][0].decode(), start.n + len(page))


COUNT_SCRIPT = "return #redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[2])"  # counted in Redis: no entry travels
LAST_SEQ = (1 << 64) - 1


def split_range(client: "redis.Redis", stream: RedisStream, start: Position, end: Position, parts: int,
                least: int) -> list[tuple[str, str, int]]:
    """The entries after `start` up to `end` as up to `parts` ranges (after, until, first row: the
    entries before the range), split by the IDs' milliseconds, each of `least` entries or more
    on average (else one range): what several tasks can read at once."""
    whole = [(start.id, end.id, start.n)]
    if parts < 2 or end.n - start.n < parts * least:
        return whole
    with redis_errors(stream):
        first = client.xrange(stream.key, "(" + start.id, end.id, count=1)
    a_ms, b_ms = id_order(first[0][0].decode())[0] if first else 0, id_order(end.id)[0]
    if b_ms <= a_ms:
        return whole
    bounds = [f"{a_ms + (b_ms - a_ms) * i // parts}-{LAST_SEQ}" for i in range(1, parts)] + [end.id]
    ranges, after, row = [], start.id, start.n
    for until in bounds:
        if id_order(until) <= id_order(after):
            continue
        if until == end.id:
            ranges.append((after, until, row))
            break
        with redis_errors(stream):
            count = int(client.eval(COUNT_SCRIPT, 1, stream.key, "(" + after, until))
        if count:
            ranges.append((after, until, row))
            after, row = until, row + count
    return ranges


# ---------------------------------------------------------------------------------------------
# Reading pages as columns

# One page as four columns, joined in Redis (one reply of 4 strings, not a Python object per
# field: hiredis built 9 objects per entry, half a read's time). A page not in the publisher's
# layout (fields ts, s, p, o in that order) comes back as its size and last ID only: the caller
# reads it again entry by entry, where each bad entry is named.
PAGE_SCRIPT = """
local r = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[2], 'COUNT', tonumber(ARGV[3]))
local n = #r
if n == 0 then return {0} end
local ts, s, p, o = {}, {}, {}, {}
for i = 1, n do
  local f = r[i][2]
  if #f ~= 8 or f[1] ~= 'ts' or f[3] ~= 's' or f[5] ~= 'p' or f[7] ~= 'o' then
    return {n, r[n][1]}
  end
  ts[i], s[i], p[i], o[i] = f[2], f[4], f[6], f[8]
end
return {n, r[n][1], table.concat(ts, '\\n'), table.concat(s, '\\n'), table.concat(p, '\\n'), table.concat(o, '\\n')}
"""
COLUMNS_SCHEMA = pa.schema([("ts", pa.int64()), ("s", pa.string()), ("p", pa.string()), ("o", pa.string()),
                            ("row", pa.int64())])
# A ts cell the row checker reads as it stands (`validate.parse_timestamp`'s fast path); terms as
# the Parquet reader takes them (`readers.in_normal_form`). Any other cell goes through the row checker.
TS_FAST = r"^[0-9]{1,18}$"


RANGE_MARK = "#range="  # `range_uri`: the stream's URL, RANGE_MARK, then after,until,first_row,batch_first


def range_uri(url: str, after: str, until: str, first_row: int, batch_first: int) -> str:
    """One ID range of a stream as a path-like string: the entries with `after` < ID <= `until`,
    the first of them the stream's entry `first_row` + 1, in a micro-batch whose first entry is
    the stream's entry `batch_first` + 1 (the Spark source's `ranges` rows)."""
    return f"{url}{RANGE_MARK}{after},{until},{first_row},{batch_first}"


def is_range_uri(text: str) -> bool:
    return RANGE_MARK in text and is_redis_url(text)


def range_of(uri: str) -> tuple[str, str, str, int, int]:
    """A `range_uri`'s (url, after, until, first_row, batch_first)."""
    url, _, spec = uri.rpartition(RANGE_MARK)
    after, until, first_row, batch_first = spec.split(",")
    return url, after, until, int(first_row), int(batch_first)


def entry_columns(client: "redis.Redis", stream: RedisStream, after: str, until: str, first_row: int,
                  log: BadRowLog, page: int = PAGE) -> Iterator[pa.RecordBatch]:
    """The checked entries with `after` < ID <= `until` (the first is the stream's entry
    `first_row` + 1) as batches of COLUMNS_SCHEMA, `page` entries read at a time; a bad entry goes
    to `log` (raised without --bad-rows) as `checked` sends it."""
    if id_order(after) >= id_order(until):
        return
    script, checker, row = client.register_script(PAGE_SCRIPT), EntryChecker(), first_row
    while True:
        with redis_errors(stream):
            reply = script(keys=[stream.key], args=["(" + after, until, page])
        n = int(reply[0])
        if n == 0:
            return
        batch = page_batch(reply[2:], n, row, checker.rows) if len(reply) == 6 else None
        if batch is None:  # read entry by entry: a bad entry (or an unusual one) is named there
            batch = entries_batch(client, stream, after, until, n, row, checker, log)
        if batch.num_rows:
            yield batch
        row += n
        after = _text(reply[1])
        if n < page or after == until:
            return


def page_batch(cells: list[bytes], n: int, first_row: int, rows: RowChecker) -> pa.RecordBatch | None:
    """A page's four joined columns -> its batch, the usual cells checked column-wise and the
    others by `rows` (its memo: streams repeat their terms); None if a cell is bad, holds a
    newline or a raw NUL (the page is read entry by entry then)."""
    if any(b"\x00" in c for c in cells):
        return None
    try:
        ts, s, p, o = (pc.split_pattern(pa.array([c], pa.binary()), "\n").flatten().cast(pa.string())
                       for c in cells)
    except pa.ArrowInvalid:  # not UTF-8
        return None
    if not len(ts) == len(s) == len(p) == len(o) == n:  # a cell held a newline
        return None
    fast = pc.match_substring_regex(ts, TS_FAST)
    for role, col in zip("spo", (s, p, o)):
        fast = pc.and_(fast, in_normal_form(col, role))
    times = pc.cast(pc.if_else(fast, ts, "0"), pa.int64())
    slow = pc.invert(fast)
    if pc.any(slow).as_py():
        picked = [c.filter(slow).to_pylist() for c in (ts, s, p, o)]
        try:
            elements = [rows.element(*cells) for cells in zip(*picked)]
        except Fault:
            return None
        times, s, p, o = (pc.replace_with_mask(col, slow, pa.array([e[i] for e in elements], col.type))
                          for i, col in enumerate((times, s, p, o)))
    return pa.RecordBatch.from_arrays([times, s, p, o, pa.array(range(first_row + 1, first_row + n + 1), pa.int64())],
                                      schema=COLUMNS_SCHEMA)


def entries_batch(client: "redis.Redis", stream: RedisStream, after: str, until: str, n: int, first_row: int,
                  checker: "EntryChecker", log: BadRowLog) -> pa.RecordBatch:
    """The first `n` entries after `after` (up to `until`) read entry by entry (`checked`), as one batch."""
    with redis_errors(stream):
        entries = client.xrange(stream.key, "(" + after, until, count=n)
    good = list(checked(entries, checker, stream, first_row, log))
    columns = [pa.array([e[i] for _, e in good], COLUMNS_SCHEMA.field(i).type) for i in range(4)]
    return pa.RecordBatch.from_arrays([*columns, pa.array([r for r, _ in good], pa.int64())], schema=COLUMNS_SCHEMA)


# ---------------------------------------------------------------------------------------------
# Checking entries

def entry_text(fields: list[bytes]) -> str:
    """An entry as a bad-row record shows it: `name=value` per field, TAB-separated."""
    text = [f.decode("utf-8", "replace") for f in fields]
    return "\t".join(f"{k}={v}" for k, v in zip(text[::2], text[1::2]))


class EntryChecker:
    """Entries -> elements by the file rows' rules (the module doc). Fast path: the four fields in
    the publisher's order, an integer ts and terms already checked (remembered by their bytes)."""

    def __init__(self) -> None:
        self.rows = RowChecker()
        self.known: tuple[dict[bytes, str], ...] = ({}, {}, {})  # s, p, o bytes -> checked term

    def element(self, entry_id: bytes, fields: list[bytes]) -> Element:
        """Raises Fault, its message naming the entry and the field."""
        if len(fields) == 8 and fields[0] == b"ts" and fields[2] == b"s" and fields[4] == b"p" and fields[6] == b"o":
            ks, kp, ko = self.known
            s, p, o = ks.get(fields[3]), kp.get(fields[5]), ko.get(fields[7])
            if s and p and o and fields[1].isdigit() and len(fields[1]) < 19:
                return int(fields[1]), s, p, o
        try:
            element = self.rows.element(*self.cells(fields))
        except Fault as fault:
            named = fault.cell >= 0 and not fault.message.startswith(("column", "field"))
            field = f"field {FIELDS[fault.cell]}: " if named else ""
            fault.message = f"entry {entry_id.decode()}: {field}{fault.message}"
            raise
        self.remember(dict(zip(fields[::2], fields[1::2])), element)
        return element

    def remember(self, fields: Mapping[bytes, bytes], element: Element) -> None:
        for table, key, term in zip(self.known, FIELD_KEYS[1:], element[1:]):
            if len(table) >= MEMO_SIZE:
                table.clear()
            table[fields[key]] = term

    @staticmethod
    def cells(flat: list[bytes]) -> tuple[str, str, str, str]:
        """The four fields as text (UTF-8, no raw NUL): Fault if one is missing, extra or bad."""
        fields = dict(zip(flat[::2], flat[1::2]))
        if len(flat) != 8 or len(fields) != 4 or any(k not in fields for k in FIELD_KEYS):
            names = [k.decode("utf-8", "replace") for k in flat[::2]]
            missing = [f for f in FIELDS if f not in names]
            if missing:
                raise Fault("empty-cell", 0, f"field {missing[0]} is missing", FIELDS.index(missing[0]))
            extra = ", ".join(n for n in names if n not in FIELDS) or "a field twice"
            raise Fault("column-count", 0, f"expected the 4 fields ts, s, p, o, found also {extra}")
        out = []
        for i, key in enumerate(FIELD_KEYS):
            try:
                text = decode_line(fields[key])
                check_text(text)
            except Fault as fault:
                fault.cell = i
                raise
            out.append(text)
        return out[0], out[1], out[2], out[3]


def checked(entries: Sequence[RawEntry], checker: EntryChecker, stream: RedisStream, first_row: int,
            log: BadRowLog) -> Iterator[tuple[int, Element]]:
    """(row, element) of each good entry (`row`: `first_row` + 1 for the first); a bad one goes to
    `log` (raised without --bad-rows) as the stream's row `row`."""
    for i, (entry_id, fields) in enumerate(entries):
        try:
            yield first_row + i + 1, checker.element(entry_id, fields)
        except Fault as fault:
            log.report(fault, stream.url, first_row + i + 1, entry_text(fields), 0)


def read_elements(stream: RedisStream, log: BadRowLog = STRICT) -> Iterator[Element]:
    """A bounded read (the oracle's): every entry up to the stream's last ID when called, checked."""
    client = stream.connect()
    end = head(client, stream)
    return _elements(client, stream, end, log)


def _elements(client: "redis.Redis", stream: RedisStream, end: Position, log: BadRowLog) -> Iterator[Element]:
    for batch in entry_columns(client, stream, ZERO_ID, end.id, 0, log):
        yield from zip(*(batch.column(i).to_pylist() for i in range(4)))


# ---------------------------------------------------------------------------------------------
# Adding entries

# One round trip per chunk: the server adds the entries in a loop (redis-py's pipeline packs and
# parses each XADD in Python, ~4x slower: 27k against 100k+ elements/s measured).
ADD_SCRIPT = """
for i = 1, #ARGV, 4 do
  redis.call('XADD', KEYS[1], '*', 'ts', ARGV[i], 's', ARGV[i + 1], 'p', ARGV[i + 2], 'o', ARGV[i + 3])
end
return #ARGV / 4
"""


def add_elements(client: "redis.Redis", stream: RedisStream, elements: Sequence[Element],
                 chunk: int = ADD_CHUNK) -> None:
    """XADD each element as an entry (fields ts, s, p, o; IDs given by Redis), `chunk` per script
    call, all of them in one MULTI/EXEC: a reader sees all of them or none, as a follower sees a
    renamed file (a live micro-batch that read half of a publisher's interval made its ticks wait
    for the next micro-batch: issue 24)."""
    script = client.register_script(ADD_SCRIPT)
    with redis_errors(stream):
        with client.pipeline(transaction=True) as pipe:
            for lo in range(0, len(elements), chunk):
                script(keys=[stream.key], args=[v for e in elements[lo:lo + chunk] for v in e], client=pipe)
            pipe.execute()
