"""A seeded soak of the real backend over its real wire, with injected faults.

`driver.run` starts ``tandem serve`` in a temporary home, drives several
sessions in several git projects with a reproducible random mix of
operations against a fake OpenAI-compatible model, kills the backend (and
arms the backend's own fault points, ``python/tandem/faults.py``), restarts
it and checks the invariants of `invariants` against the reference `model`.
``make soak SEED=… OPS=…`` runs it; docs/reliability.md describes it.
"""
