"""tandem.store."""
