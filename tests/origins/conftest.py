"""Fixtures for the origin tests; ``facts`` (this directory) builds site facts by hand."""
