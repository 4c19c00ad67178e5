"""The frontier: every URL we know, its state, and the hosts of the seed and the horizon."""
