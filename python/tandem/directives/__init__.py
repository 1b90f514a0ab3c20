"""tandem.directives."""
