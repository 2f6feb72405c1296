"""`tefq compare`: TEF with native facts against the simulated-fact baselines, measured side by
side (`measure.compare`), its command line (`cli`) and its figures (`plot`). It sits above the
engines: its Spark runs go through the run service (tefq.service) like every other front door."""
