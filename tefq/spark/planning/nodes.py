"""EXPLAIN lines that several plan nodes share (each plan renders its own tree, top = sink)."""

SINK = "  Sink: parquet file sink (exactly once with --checkpoint) -> rows decoded on the driver"
# how a bounded input ends (tefq.spark.engine: StreamSettings.ended, else the flush row)
END_OF_INPUT = "end of input in the last micro-batch of a bounded input (else a flush row)"
SOURCE = "  FileStreamSource (ts, s, p, o) [maxFilesPerTrigger]"
