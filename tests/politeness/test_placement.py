"""Vanity media hostnames keyed by the provider their CNAME chain reaches, with the real
providers' names: image CDNs, image services and object stores (``politeness.placement``)."""

from __future__ import annotations

import pytest

from courtier.politeness.keys import KeyRules, MediaSource, politeness_keys
from courtier.politeness.placement import Placement, behind, same_origin
from courtier.url import parse_url

RULES = KeyRules()
VANITY = "images.example-shop.com"


def keyed(placement: Placement | None, *, miss: bool = True, caches: bool = True) -> list[str]:
    assert placement is not None
    keys = placement.keys_for(
        miss_expected=miss, customer_origin="site:example-shop.com", service_caches=caches
    )
    return [str(k) for k in keys]


@pytest.mark.parametrize(
    ("chain", "cdn"),
    [
        (("images.ctfassets.net",), "images.ctfassets.net"),  # Contentful, by its shared name
        (("images.secure.ctfassets.net",), "images.secure.ctfassets.net"),
        (("d111111abcdef8.cloudfront.net",), "cloudfront.net"),
        (("images.example-shop.com.global.ssl.fastly.net",), "fastly.net"),  # image optimiser
        (("example-shop.map.fastly.net",), "fastly.net"),
        (("images.example-shop.com.edgekey.net", "e1234.a.akamaiedge.net"), "edgekey.net"),
        (("exampleshop.akamaized.net",), "akamaized.net"),  # Akamai image manager
        (("exampleshop.b-cdn.net",), "b-cdn.net"),  # Bunny
        (("exampleshop.azureedge.net",), "azureedge.net"),
    ],
)
def test_a_vanity_name_cnamed_to_an_image_cdn_is_its_customer(
    chain: tuple[str, ...], cdn: str
) -> None:
    placement = behind(VANITY, chain, RULES)
    assert placement is not None and placement.source is MediaSource.CDN
    assert keyed(placement) == [
        f"cdn:{cdn}",
        f"cdn-miss:{VANITY}",
        "origin:site:example-shop.com",  # a miss reaches the embedding site's origin
    ]
    assert keyed(placement, miss=False) == [f"cdn:{cdn}"]


@pytest.mark.parametrize(
    ("chain", "key"),
    [
        (("res.cloudinary.com",), f"imgsvc:res.cloudinary.com/{VANITY}"),
        (("imagedelivery.net",), f"imgsvc:imagedelivery.net/{VANITY}"),  # Cloudflare Images
        (("ik.imagekit.io",), f"imgsvc:ik.imagekit.io/{VANITY}"),
        # imgix serves its sources from Fastly: the first provider in the chain names it.
        (
            ("exampleshop.imgix.net", "imgix.map.fastly.net"),
            "imgsvc:imgix.net/exampleshop.imgix.net",
        ),
    ],
)
def test_a_vanity_name_cnamed_to_an_image_service_is_its_customer(
    chain: tuple[str, ...], key: str
) -> None:
    placement = behind(VANITY, chain, RULES)
    assert placement is not None and placement.source is MediaSource.IMGSVC
    assert keyed(placement) == [key, "origin:site:example-shop.com"]  # acting as a cache
    assert keyed(placement, caches=False) == [key]  # store-like: its own work, not the origin's
    assert keyed(placement, miss=False) == [key]


def test_a_per_customer_image_service_name_is_keyed_alike_direct_or_by_cname() -> None:
    url = parse_url("https://exampleshop.imgix.net/flat.jpg?w=320")
    assert RULES.media_source(url) is MediaSource.IMGSVC
    direct = politeness_keys(url, customer_origin="o", cache_miss_expected=True)
    assert [str(k) for k in direct] == ["imgsvc:imgix.net/exampleshop.imgix.net", "origin:o"]
    vanity = behind(VANITY, ("exampleshop.imgix.net",), RULES)
    assert vanity is not None and str(vanity.keys[0]) == str(direct[0])
    assert RULES.media_source(parse_url("https://imgix.net/")) is None  # the service's own site
    cloudflare = parse_url("https://imagedelivery.net/ZWd9g1K7eljCn_KDTu_MWA/photo-1/public")
    assert [str(k) for k in politeness_keys(cloudflare, cache_miss_expected=False)] == [
        "imgsvc:imagedelivery.net/zwd9g1k7eljcn_kdtu_mwa"
    ]


@pytest.mark.parametrize(
    ("chain", "bucket"),
    [
        # The bucket the name holds.
        ((f"{VANITY}.s3.amazonaws.com", "s3-1-w.amazonaws.com"), f"aws-s3/{VANITY}"),
        (("shop-media.s3.eu-west-1.amazonaws.com",), "aws-s3/shop-media"),
        ((f"{VANITY}.s3-website-us-east-1.amazonaws.com",), f"aws-s3/{VANITY}"),
        ((f"{VANITY}.s3-website.eu-west-2.amazonaws.com",), f"aws-s3/{VANITY}"),
        (("shop-media.storage.googleapis.com",), "gcs/shop-media"),
        (("shop.z6.web.core.windows.net",), "azure-blob/shop/$web"),
        # A path-style endpoint: S3 and GCS serve the bucket named like the Host.
        (("s3.amazonaws.com",), f"aws-s3/{VANITY}"),
        (("s3.eu-central-1.amazonaws.com",), f"aws-s3/{VANITY}"),
        (("c.storage.googleapis.com",), f"gcs/{VANITY}"),
        (("storage.googleapis.com",), f"gcs/{VANITY}"),
    ],
)
def test_a_vanity_name_cnamed_to_an_object_store_is_its_bucket(
    chain: tuple[str, ...], bucket: str
) -> None:
    placement = behind(VANITY, chain, RULES)
    assert placement is not None and placement.source is MediaSource.STORE
    assert keyed(placement) == [f"bucket:{bucket}"]  # a bucket alone, whatever a cache says
    image = parse_url(f"https://{VANITY}/listings/1/a.jpg")
    assert placement.for_url(image) is placement  # one bucket for every image


def test_an_azure_storage_accounts_container_comes_from_the_images_path() -> None:
    placement = behind(VANITY, ("shopmedia.blob.core.windows.net",), RULES)
    assert placement is not None and placement.source is MediaSource.STORE
    listing = placement.for_url(parse_url(f"https://{VANITY}/listings/12/a.jpg"))
    agent = placement.for_url(parse_url(f"https://{VANITY}/agents/jane.jpg"))
    assert keyed(listing) == ["bucket:azure-blob/shopmedia/listings"]
    assert keyed(agent) == ["bucket:azure-blob/shopmedia/agents"]
    # As the same container's direct URL is keyed.
    direct = parse_url("https://shopmedia.blob.core.windows.net/listings/12/a.jpg")
    assert [str(k) for k in politeness_keys(direct)] == ["bucket:azure-blob/shopmedia/listings"]
    assert keyed(placement.for_url(parse_url(f"https://{VANITY}/"))) == [
        "bucket:azure-blob/shopmedia"  # no container named: the account
    ]


def test_the_port_of_a_vanity_site_is_no_part_of_its_bucket() -> None:
    placement = behind(f"{VANITY}:8080", ("c.storage.googleapis.com",), RULES)
    assert keyed(placement) == [f"bucket:gcs/{VANITY}"]


@pytest.mark.parametrize(
    "chain",
    [
        (),
        ("lb.hosting-company.com",),
        ("images.ctfassets.net.evil.example",),  # look-alikes are not providers
        ("s3.amazonaws.com.evil.example",),
        ("imgix.net.evil.example",),
        ("cdn-photos.example",),  # a site called cdn-something is no CDN
        ("www.googleapis.com",),  # only the storage API, never a CNAME's bucket
    ],
)
def test_a_chain_that_reaches_no_provider_places_nothing(chain: tuple[str, ...]) -> None:
    assert behind(VANITY, chain, RULES) is None


def test_the_first_provider_in_the_chain_wins_and_names_are_read_as_dns_writes_them() -> None:
    placement = behind(VANITY, ("Images.CTFAssets.net.", "x.cdn.cloudflare.net"), RULES)
    assert placement is not None and [str(k) for k in placement.keys] == [
        "cdn:images.ctfassets.net"
    ]


def test_configured_hosts_count_as_providers_too() -> None:
    rules = KeyRules(cdn_hosts=frozenset({"media.mycdn.example"}))
    placement = behind(VANITY, ("media.mycdn.example",), rules)
    assert placement is not None and placement.source is MediaSource.CDN


def test_a_platforms_media_host_is_booked_on_its_own_site_key_and_the_platforms_origin() -> None:
    placement = same_origin("media.platform.example", "cname:sites.platform.example")
    assert placement.source is MediaSource.SAME_ORIGIN
    assert keyed(placement) == [
        "site:media.platform.example",
        "origin:cname:sites.platform.example",
    ]
