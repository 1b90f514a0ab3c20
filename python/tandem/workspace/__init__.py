"""tandem.workspace."""
