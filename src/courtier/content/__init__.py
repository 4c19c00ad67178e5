"""The pure worker side of a page: reading a body (decoding, redaction), parsing
HTML and sitemaps, and the nesting rules. Nothing here does I/O or knows the engine."""
