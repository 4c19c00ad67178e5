"""What the crawler needs of the Python runtime and the machine: the event loop, the
collector's pacing, processes, SQLite's journal, bounded containers and the few helpers
that pay at crawl level (`python bench/bench_runtime.py`)."""
