"""The general vectorised evaluation of one TEF aggregate query (issue 27), Spark-free: numpy only.

One plan shape for every WHERE of spec §4 and every fact of §3. Per bucket and batch
(`evaluator.GeneralEvaluator`): the final elements apply to the facts (`facts`: SINCE/UNTIL clauses
with background patterns and FILTERs as vectorised joins, derived facts as interval joins with
coalescing); each WHERE item becomes a table over int64 term codes with an activity in ms
(`where`: CURRENT facts valid at tau, facts overlapping the period or the WHILE scope, events in
the period, background always), joined on shared variables with activities intersected; FILTERs
run vectorised or once per distinct input with the oracle's evaluator (`expressions`); solutions
become contributions over ranges of ticks (`contributions`: settled ranges whole, open interval ends
per tick or — durations of open facts — as exact ages); aggregates per (tick, group) with sparse
difference arrays and exact sums (`aggregates`, `sums`); rows with the oracle's cells and order
(`rows`). The state keeps only what a later tick can see (`state`, `retention`), as arrays.
UC1-UC3 are instances of it (tests/spark/kernels/test_general_kernels.py).

Modules: coding (term codes, coded elements, buckets), tables (patterns over coded triples),
query (CompiledQuery, Split), expressions, facts, where, contributions, sums, aggregates, rows,
state, retention, evaluator, routing (which buckets an element must reach), local (an in-process
driver: tests, bench).

## Partitioning: which bucket key makes each shape exact

A query is cut by one variable `?k` of its WHERE (`query.Split`, chosen by
`tefq.spark.planning.general`): in bucket b, every WHERE item that binds `?k` keeps only its rows
whose `?k` code lies in b (`coding.bucket_of`); the other items are whole in every bucket. Every
solution binds one `?k`, so it is found in exactly one bucket, and the buckets' rows add up:
- `?k` a group variable: a group's solutions all lie in one bucket; buckets report complete rows.
- `?k` any other variable (*merge*): a group spans buckets; each reports partial aggregates per
  (tick, group) and the driver merges them (`rows.merge_partials`, numpy group-bys): COUNT and
  COUNT(*) add, SUM and AVG add as exact sums (`sums.CellSums`: limb sums of doubles or int64 sums
  of small integers, rounded once as the oracle's fsum; `ExactTotal`s only for what neither holds),
  MIN/MAX keep the first best by rank in the oracle's order, the implicit group's empty ticks carry a zero count. A
  DISTINCT aggregate merges only when its argument is `?k` itself (values disjoint across buckets:
  where `?k` may bind a literal, a code's bucket is its value's, `coding.value_buckets`, so that
  two spellings of one value share one).
- Inputs follow: an event fact is held in part (split by the identity column bound to `?k`) when
  every consumer asks that; a derived fact split by a column splits the body facts that bind that
  variable and replicates the others (as UC3's `Routing`); a WHILE fact is split by `?k` only
  without merge and when the WHILE pattern shares `?k` as a group variable; event patterns binding
  `?k` are routed by it; the background is replicated (a broadcast). `routing.element_buckets` is the
  element -> buckets rule a mapper applies; a bucket re-checks what it holds, so extra copies are
  harmless.

Per shape of the issue (the planner's choice when several keys are exact: fewest event-driven
inputs whole, then merge, which balances by the counted entity, then WHERE order):
| shape | key | merge | whole in every bucket |
|---|---|---|---|
| genre: `(CURRENT ?user :watching ?channel) . ?channel :genre ?genre`, COUNT [DISTINCT] ?user | ?user | yes | background |
| event pattern `?user :join ?channel` by ?channel | ?user | yes | nothing |
| two facts joined on ?channel (UserFact, ProgramFact) by ?program, COUNT DISTINCT ?user | ?user | yes | ProgramFact |
| fact pattern `[?S,?E]` with SUM DURATION by ?channel | ?user | yes | nothing |
| FILTER over pattern or interval variables | as without the FILTER | | |
| WHILE with a background pattern (UC3-like) | ?user | yes | the WHILE fact, background |
| SINCE/UNTIL with background BGP + FILTER (identity ?user, ?genre) | ?user | yes | background (mapper side) |
| derived fact (UC3's ViewShipFact) | ?user | yes | ProgramFact |
| `COUNT DISTINCT ?g` by ?channel (a DISTINCT that no merge keeps exact) | ?channel | no | facts not binding ?channel |
| no exact key (no fact or event item binds a usable variable) | one bucket | | |
"""
