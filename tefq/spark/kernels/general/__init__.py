"""The general vectorised evaluation of a TEF aggregate query (issue 27), Spark-free."""
