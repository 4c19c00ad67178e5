"""What is kept of an answer: bodies, fingerprints and the WARC archive."""
