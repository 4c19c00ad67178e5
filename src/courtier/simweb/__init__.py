"""A simulated web on loopback for tests, benchmarks and the demo: DNS, HTTP sites, an audit.

See docs/simweb.md. The pieces: `world` (what exists, from a seed number; its vocabulary in
`sites`), `fuzz` and `fuzz_draws` (random hosting topologies from a seed), `network` (where it
listens), `dns` and `http` (the servers), `stacks` and `layers` (the headers of server stacks,
platforms, their caches and CDN edges), `behaviours` (how sites react to traffic), `pages` and
`spa` (what they answer; `catalogue`, what both share), `log` (what they received), `audit`
(what that says about the crawler), `server` (all of it in this process) and `process` (all of
it in a subprocess).
"""

from courtier.simweb.network import Network
from courtier.simweb.server import SimWeb
from courtier.simweb.world import Behaviour, Site, SiteKind, World, WorldParams, build_world

__all__ = [
    "Behaviour",
    "Network",
    "SimWeb",
    "Site",
    "SiteKind",
    "World",
    "WorldParams",
    "build_world",
]
