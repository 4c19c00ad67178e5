"""The crawl loop that wires the stages, and the parse worker pool."""
