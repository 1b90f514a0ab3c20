"""tandem.tools."""
