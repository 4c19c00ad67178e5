"""Media where real sites keep it, in the world (``simweb.media_shapes``): vanity names on a
provider's shared name and listing platforms' own media hosts, their DNS, pages, answers and
the audit's charges; a world without them is the world it was."""

from __future__ import annotations

import dataclasses
import re

import pytest
from dnslib import QTYPE, DNSRecord
from simweb_helpers import SMALL
from simweb_helpers import request_record as _record

from courtier.simweb import Network, SiteKind, World, build_world
from courtier.simweb.audit import audit_records
from courtier.simweb.dns import DnsAnswerer
from courtier.simweb.media_shapes import (
    HOMESPOT,
    LISTHUB,
    PROVIDER_MEDIA,
    PROVIDER_TARGETS,
    SIMASSETS_HOST,
)
from courtier.simweb.pages import PageRenderer
from courtier.simweb.world import CDN_HOST, IMGSVC_HOST, STORE_HOST

NET = Network(100, 80)
SHAPES = dataclasses.replace(SMALL, n_edge_sites=4, provider_media=0.8, listing_tenants=5)
T0 = 1_800_000_000.0
_TARGET_HOSTS = {"cdn": SIMASSETS_HOST, "imgsvc": IMGSVC_HOST, "store": STORE_HOST}


@pytest.fixture(scope="module")
def world() -> World:
    return build_world(SHAPES)


def _resolve(world: World, name: str) -> tuple[list[str], set[int]]:
    reply = DNSRecord.parse(
        DnsAnswerer(world, NET).reply_to(DNSRecord.question(name, "A").pack()) or b""
    )
    chain = [str(r.rdata).rstrip(".") for r in reply.rr if r.rtype == QTYPE.CNAME]
    slots = {NET.slot_of(str(r.rdata)) for r in reply.rr if r.rtype == QTYPE.A}
    return chain, slots


def _vanity(world: World) -> dict[str, list]:
    by_target: dict[str, list] = {t: [] for t in PROVIDER_TARGETS}
    for site in world.sites.values():
        media = world.sites.get(site.media_host or "")
        if site.is_seed and media is not None and media.shape == PROVIDER_MEDIA:
            target = next(t for t, h in _TARGET_HOSTS.items() if world.dns.cnames[media.host] == h)
            by_target[target].append((site, media))
    return by_target


def test_a_world_without_the_shapes_is_the_world_it_was() -> None:
    before = build_world(SMALL)
    off = build_world(dataclasses.replace(SMALL, provider_media=0.0, listing_tenants=0))
    assert off == before
    assert SIMASSETS_HOST not in before.sites


def test_vanity_names_take_each_providers_shared_name(world: World) -> None:
    by_target = _vanity(world)
    assert all(by_target.values()), {t: len(v) for t, v in by_target.items()}
    for target, pairs in by_target.items():
        provider = world.sites[_TARGET_HOSTS[target]]
        for site, media in pairs:
            assert site.kind in (SiteKind.STANDALONE, SiteKind.EDGE_SITE)
            assert media.customer == site.host and not media.is_seed
            chain, slots = _resolve(world, media.host)
            assert chain == [_TARGET_HOSTS[target]] and slots == set(provider.slots)
            assert world.media_customer(media.host, "/img/1.jpg") == (
                site if target != "store" else None
            )
            if target == "store":  # the endpoint's bucket is named like the vanity host
                assert media.bucket == media.host and world.buckets[media.host] == site.host
    assert world.sites[SIMASSETS_HOST].kind is SiteKind.CDN  # no `cdn` in its name


def test_pages_embed_the_vanity_image_beside_its_plain_cdn_counterpart(world: World) -> None:
    renderer = PageRenderer(world, NET)
    for target, pairs in _vanity(world).items():
        site, media = pairs[0]
        home = renderer.render(site, "/", "").body.decode()
        images = re.findall(r'<img[^>]*\ssrc="([^"]+)"', home)
        own = [i for i in images if i.startswith(f"http://{media.host}/")]
        assert own and any(i.startswith(f"http://{CDN_HOST}/{site.host}/img/") for i in images)
        path = own[0].removeprefix(f"http://{media.host}")
        answer = renderer.render(media, path, "")
        assert answer.status == 200 and answer.content_type == "image/jpeg", (target, path)
        other = renderer.render(media, "/img/999.jpg", "")
        assert other.status == 404


def test_listing_platforms_keep_media_on_their_own_servers(world: World) -> None:
    renderer = PageRenderer(world, NET)
    for domain, media_host in ((LISTHUB, f"media.{LISTHUB}"), (HOMESPOT, f"photos.{HOMESPOT}")):
        origin = f"platform:{domain}"
        tenants = [s for s in world.sites.values() if s.is_seed and s.origin == origin]
        media = world.sites[media_host]
        assert tenants and media.kind is SiteKind.PLATFORM_MEDIA and media.origin == origin
        assert not any(h.endswith(f".{domain}") and s.is_seed for h, s in world.sites.items())
        assert {t.media_host for t in tenants} == {media_host}
        _, media_slots = _resolve(world, media_host)
        assert world.dns.cnames.get(media_host) is None  # plain A records
        for tenant in tenants:
            chain, slots = _resolve(world, tenant.host)
            assert slots == media_slots == set(tenant.slots)
            assert chain == ([f"sites.{LISTHUB}"] if domain == LISTHUB else [])
            assert not (set(tenant.slots) & set(world.dns.ptr_names))  # no PTR names
        home = renderer.render(tenants[0], "/", "").body.decode()
        image = f"http://{media_host}/{tenants[0].host}/img/"
        assert image in home
        n = home.split(image, 1)[1].split(".jpg", 1)[0]
        assert renderer.render(media, f"/{tenants[0].host}/img/{n}.jpg", "").status == 200


def test_the_audit_charges_a_listing_platforms_media_to_the_platform(world: World) -> None:
    tenant = next(s for s in world.sites.values() if s.origin == f"platform:{LISTHUB}")
    records = [
        _record(f"media.{LISTHUB}", f"/{tenant.host}/img/{n % 8 + 1}.jpg", T0 + n * 0.1)
        for n in range(8)
    ]
    report = audit_records(records, world, allow_media=True)
    figures = {o.origin: o for o in report.origins}[f"platform:{LISTHUB}"]
    assert figures.media_requests == 8 and figures.cost_units == 8
    assert figures.over_budget  # 8 units in 0.8 s, at 2 units/s: the platform's budget


def test_a_provider_vanity_miss_is_its_sites_and_a_store_request_its_buckets(
    world: World,
) -> None:
    by_target = _vanity(world)
    site, cdn_vanity = by_target["cdn"][0]
    _, store_vanity = by_target["store"][0]
    records = [
        _record(cdn_vanity.host, f"/img/{n + 1}.jpg", T0 + n * 0.1, cache="MISS") for n in range(6)
    ]
    records += [
        _record(store_vanity.host, f"/img/{n % 8 + 1}.jpg", T0 + n * 0.01, bucket=store_vanity.host)
        for n in range(30)
    ]
    report = audit_records(records, world, allow_media=True)
    origin = {o.origin: o for o in report.origins}[site.origin]
    assert origin.miss_requests == 6 and origin.over_budget
    (bucket,) = report.buckets
    assert bucket.bucket == store_vanity.host and bucket.requests == 30
