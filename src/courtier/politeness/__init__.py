"""Politeness: robots.txt rules, per-site spacing and backoff (pure policy, injected clock)."""
