"""tandem.checkpoints."""
