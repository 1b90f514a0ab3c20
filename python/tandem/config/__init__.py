"""Settings: one typed model, the user/project layers and the project trust store.

A bottom layer: it imports only `tandem.protocol.base` and `tandem.store`.
"""
