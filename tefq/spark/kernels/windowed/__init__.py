"""Relational (vectorised) evaluation of SPARQL over in-memory tables, shared by the Spark engine."""
