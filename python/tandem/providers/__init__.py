"""tandem.providers."""
