"""tandem: backend of the tandem Emacs package."""
__version__ = "0.1.0"
