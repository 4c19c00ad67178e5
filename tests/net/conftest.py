from __future__ import annotations

from collections.abc import Iterator

import pytest
from loopback_dns import LoopbackDnsServer

ZONE = (
    "site.test. 300 IN A 127.0.0.10",
    "site.test. 120 IN AAAA ::1",
    "v4only.test. 60 IN A 127.0.0.11",
    "v6only.test. 60 IN AAAA ::1",
    "public.test. 600 IN A 93.184.215.14",
    "public.test. 600 IN AAAA 2606:2800:21f:cb07:6820:80da:af6b:8b2c",
    "mixed.test. 300 IN A 93.184.215.14",
    "mixed.test. 300 IN A 10.0.0.7",
    "canary.test. 300 IN A 169.254.169.254",
    "mapped.test. 300 IN AAAA ::ffff:7f00:1",
    "alias.test. 30 IN CNAME site.test.",
    "zero-ttl.test. 0 IN A 127.0.0.12",
    "empty.test. 300 IN TXT nothing-here",
)


@pytest.fixture
def dns_server() -> Iterator[LoopbackDnsServer]:
    server = LoopbackDnsServer(ZONE).start()
    try:
        yield server
    finally:
        server.stop()
