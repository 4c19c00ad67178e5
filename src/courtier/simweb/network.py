"""Where a simulated web lives on loopback: an address block, one HTTP port, a canary outside.

Rules:
- A SimWeb instance owns the block 127.B.0.0/16. Server slot i listens on
  127.B.(i // 254).(i % 254 + 1); the third octet 255 is kept for the DNS server (127.B.255.53).
- The crawl's allowed net is exactly 127.B.0.0/16. The canary listens outside it, on
  127.(B+1).0.66, on the same HTTP port, so any request that reaches it is an SSRF escape.
- URLs carry the port only when it is not 80.
"""

from __future__ import annotations

from dataclasses import dataclass

from courtier.simweb.world import CANARY_SLOT

MIN_BLOCK = 1
MAX_BLOCK = 250  # the canary takes block + 1
DNS_THIRD_OCTET = 255
SLOTS_PER_OCTET = 254
MAX_SLOTS = DNS_THIRD_OCTET * SLOTS_PER_OCTET


@dataclass(frozen=True)
class Network:
    block: int
    port: int

    def __post_init__(self) -> None:
        if not MIN_BLOCK <= self.block <= MAX_BLOCK:
            raise ValueError(f"address block must be in {MIN_BLOCK}..{MAX_BLOCK}, got {self.block}")
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be in 1..65535, got {self.port}")

    @property
    def allow_net(self) -> str:
        return f"127.{self.block}.0.0/16"

    @property
    def dns_host(self) -> str:
        return f"127.{self.block}.{DNS_THIRD_OCTET}.53"

    @property
    def canary_address(self) -> str:
        return f"127.{self.block + 1}.0.66"

    def address_of(self, slot: int) -> str:
        if slot == CANARY_SLOT:
            return self.canary_address
        if not 0 <= slot < MAX_SLOTS:
            raise ValueError(f"server slot {slot} does not fit in a /16")
        return f"127.{self.block}.{slot // SLOTS_PER_OCTET}.{slot % SLOTS_PER_OCTET + 1}"

    def slot_of(self, address: str) -> int | None:
        """The slot listening on `address`, CANARY_SLOT for the canary, None if not ours."""
        if address == self.canary_address:
            return CANARY_SLOT
        parts = address.split(".")
        if len(parts) != 4 or parts[0] != "127" or parts[1] != str(self.block):
            return None
        try:
            third, fourth = int(parts[2]), int(parts[3])
        except ValueError:
            return None
        if third >= DNS_THIRD_OCTET or not 1 <= fourth <= SLOTS_PER_OCTET:
            return None
        return third * SLOTS_PER_OCTET + fourth - 1

    @property
    def port_suffix(self) -> str:
        return "" if self.port == 80 else f":{self.port}"

    def origin_url(self, host: str) -> str:
        """`http://host` plus the port when it is not 80 (no trailing slash)."""
        return f"http://{host}{self.port_suffix}"

    def canary_spellings(self) -> tuple[str, ...]:
        """The canary address as dotted, octal, hex and integer IPv4 hosts (with port)."""
        octets = [int(p) for p in self.canary_address.split(".")]
        dotted = self.canary_address
        octal = ".".join(f"0{o:o}" if o else "0" for o in octets)
        hexa = ".".join(f"0x{o:x}" for o in octets)
        integer = str(int.from_bytes(bytes(octets), "big"))
        return tuple(f"{h}{self.port_suffix}" for h in (dotted, octal, hexa, integer))
