"""The parse worker processes: the pool, its channel, the jobs and the worker's main loop."""
