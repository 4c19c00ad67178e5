"""Courtier: a polite, controlled web crawler."""

__version__ = "0.1.0"
