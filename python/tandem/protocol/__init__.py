"""tandem.protocol."""
