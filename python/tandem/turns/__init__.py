"""tandem.turns: the turn engine and its one terminal path."""
