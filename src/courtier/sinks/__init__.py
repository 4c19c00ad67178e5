"""Where crawl results go: documents (JSON Lines), later WARC and redaction."""
