"""tandem.remote."""
