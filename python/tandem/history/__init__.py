"""History operations above the turn engine: compaction and rewind orchestration.

They call the engine's providers and hold sessions through the gate; their
pure parts (plans, policies, turn facts, projection) live in
`tandem.sessions`, below the engine.
"""
