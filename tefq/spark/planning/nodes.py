"""EXPLAIN lines that several plan nodes share (each plan renders its own tree, top = sink)."""

SINK = "  Sink: parquet file sink (exactly once with --checkpoint) -> rows decoded on the driver"
SOURCE = "  FileStreamSource (ts, s, p, o) [maxFilesPerTrigger]"
