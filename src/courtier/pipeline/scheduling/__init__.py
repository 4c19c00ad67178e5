"""When work may start: the scheduler, the clocks of every limit key (the one owner of key
time), key lines and waits, send spacing, start gates, the timer, robots.txt hops."""
