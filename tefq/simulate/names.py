"""The simulation strategies' names (spec §7), shared by the oracle-side and the Spark simulations."""

STRATEGIES = ("refresh", "refresh-group", "sequence")
