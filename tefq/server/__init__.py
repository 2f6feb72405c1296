"""The warm engine: a process that holds a started Spark session and runs tefq command lines in it.

`tefq run`, `facts`, `usecase`, `compare`, `parse` and `explain` are handed to a warm engine of
the same user, code and Spark settings when one is up (`client.delegate`); the first command line
that would start Spark on an embedded master starts one instead and runs there
(`tefq.entry`, `session_source.HandOver`). Each command line runs in a child forked from the
engine (`runner`): its own working directory, environment, standard streams (the caller's own
file descriptors, passed over the socket) and signals, with the JVM and the imports already warm.

* `place`: where a user's engines live (a 0700 directory, one 0600 unix socket per engine) and
  the identity that says which engine fits a command line (code, interpreter, Spark settings).
* `wire`: the messages on the socket (length-prefixed JSON, descriptors alongside).
* `client`: finding, starting and using an engine, with the standard library only.
* `daemon`: the engine (started as `python -m tefq.warm_engine`, which hands it tefq's command
  line); `runner`: one command line inside it.
* `cli`: `tefq server start|stop|status`.
"""
