"""tandem.server."""
