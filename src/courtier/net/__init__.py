"""Networking under the SSRF guard: address policy, DNS resolution, pinned fetching.

``policy`` judges addresses, ``resolve`` turns names into addresses, ``guard`` combines them
into one verdict per host; the fetcher connects only to addresses the guard allowed.
"""

from courtier.net.guard import Guard, Resolution
from courtier.net.policy import AddressPolicy, Verdict, is_local_name
from courtier.net.resolve import DnsResolver, ResolveError, Resolver, StaticResolver

__all__ = [
    "AddressPolicy",
    "DnsResolver",
    "Guard",
    "Resolution",
    "ResolveError",
    "Resolver",
    "StaticResolver",
    "Verdict",
    "is_local_name",
]
