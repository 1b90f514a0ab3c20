"""The adapter layer: one module per method namespace.

Each module declares ``METHODS: list[MethodSpec]``: short handlers that take
the params model, make one call into a domain service and return the reply
model. Params and replies live in `tandem.protocol`; the logic lives in the
domain packages. `tandem.server.table` imports these modules by name.
"""
