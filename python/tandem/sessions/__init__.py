"""tandem.sessions."""
