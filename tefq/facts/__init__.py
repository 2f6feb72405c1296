"""Facts as data (spec §11-§12): the fact table (`table`), its files (`writer`, `reader`), queries
as of given instants (`as_of`), the timeline (`plot`), the table on Spark (`spark`) and live
(`live`: `tefq facts --follow`), the command (`cli`) and the Python API (`api`)."""
