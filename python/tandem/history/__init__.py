"""History operations above the turn engine: compaction, a chat turn, a turn's patch.

They call the engine's providers and hold sessions through the gate; their
pure parts (plans, policies, projection) live in `tandem.sessions`, below
the engine. Rewind (its plan, transaction, undo and resend) is its own
package, `tandem.rewind`, which `turn_patch` uses.
"""
