"""Limit keys per request, request classes and costs, and per-key-type parameters."""

from __future__ import annotations

import pytest

from courtier.politeness.gcra import KeyParams, Limit
from courtier.politeness.keys import (
    DEFAULT_KEY_TYPE_PARAMS,
    CostModel,
    KeyRules,
    KeyType,
    LimitKey,
    LimitPolicy,
    RequestClass,
    UrlRule,
    guess_origin,
    politeness_keys,
    request_cost,
)
from courtier.url import parse_url


def keys_of(url: str, **kwargs: object) -> list[str]:
    return [str(key) for key in politeness_keys(parse_url(url), **kwargs)]  # type: ignore[arg-type]


def test_ordinary_page_is_booked_on_its_site_and_origin() -> None:
    assert keys_of("https://Blog.Example.test/post/1", origin="cname=host.platform.test") == [
        "site:blog.example.test",
        "origin:cname=host.platform.test",
    ]


def test_page_with_unknown_origin_is_booked_on_its_site_alone() -> None:
    assert keys_of("http://a.test:8080/x") == ["site:a.test:8080"]


@pytest.mark.parametrize(
    "url",
    ["http://photos.s3.simstore.test/cat.jpg", "http://s3.simstore.test/photos/cat.jpg"],
)
def test_object_store_url_is_booked_on_its_bucket_only(url: str) -> None:
    assert keys_of(url, origin="ignored") == ["bucket:simstore/photos"]


def test_cdn_url_counts_against_the_cdn_and_its_customers_misses() -> None:
    url = "http://cdn.simcdn.test/shop.test/img/a.jpg"
    assert keys_of(url) == ["cdn:cdn.simcdn.test", "cdn-miss:cdn.simcdn.test/shop.test"]
    assert keys_of(url, cache_miss_expected=False) == ["cdn:cdn.simcdn.test"]


def test_image_service_url_is_keyed_on_service_and_customer() -> None:
    url = "http://img.simresize.test/acme/w=200/photos/a.jpg"
    assert keys_of(url) == ["imgsvc:img.simresize.test/acme"]


def test_cdn_and_image_service_hosts_are_configurable() -> None:
    rules = KeyRules(cdn_hosts=frozenset({"edge.test"}), imgsvc_hosts=frozenset())
    assert keys_of("http://edge.test/x.test/a", rules=rules)[0] == "cdn:edge.test"
    assert keys_of("http://img.simresize.test/acme/a.jpg", rules=rules) == [
        "site:img.simresize.test"
    ]


def test_cdn_root_without_customer_is_an_ordinary_site() -> None:
    assert keys_of("http://cdn.simcdn.test/") == ["site:cdn.simcdn.test"]


@pytest.mark.parametrize(
    ("url", "klass", "cost"),
    [
        ("http://a.test/robots.txt", RequestClass.ROBOTS, 1.0),
        ("http://a.test/img/Cat.JPG", RequestClass.IMAGE, 1.0),
        ("http://a.test/search?q=shoes", RequestClass.INDEX, 4.0),
        ("http://a.test/products?page=3", RequestClass.INDEX, 4.0),
        ("http://a.test/tag/python/", RequestClass.INDEX, 4.0),
        ("http://a.test/blog/page/2", RequestClass.INDEX, 4.0),
        ("http://a.test/", RequestClass.INDEX, 4.0),
        ("http://a.test/post/why-crawlers-should-be-polite", RequestClass.DETAIL, 2.0),
        ("http://a.test/research/paper.html", RequestClass.DETAIL, 2.0),
        ("http://a.test/?p=123", RequestClass.DETAIL, 2.0),  # a WordPress post, not a listing
    ],
)
def test_default_rules_classify_and_cost_requests(
    url: str, klass: RequestClass, cost: float
) -> None:
    model = CostModel()
    assert model.classify(parse_url(url)) == klass
    assert request_cost(parse_url(url)) == cost


@pytest.mark.parametrize(
    ("target", "klass"),
    [
        # one listing, event, post or item: a detail page
        ("/listing/123", RequestClass.DETAIL),
        ("/listings/some-flat", RequestClass.DETAIL),
        ("/Listing/ABC-42/", RequestClass.DETAIL),
        ("/listings/london/some-flat", RequestClass.DETAIL),
        ("/events/2024-summer-fair", RequestClass.DETAIL),
        ("/calendar/summer-fair", RequestClass.DETAIL),
        ("/tags/python/post-1", RequestClass.DETAIL),
        ("/lists/favourites/item-3", RequestClass.DETAIL),
        ("/archives/123", RequestClass.DETAIL),  # WordPress numeric permalinks
        ("/archive/old-story", RequestClass.DETAIL),
        ("/index.php/2024/05/a-post/", RequestClass.DETAIL),  # WordPress PATH_INFO links
        ("/index.php?p=123", RequestClass.DETAIL),
        ("/item/7?ref=item&utm_source=self", RequestClass.DETAIL),
        ("/findings/2024", RequestClass.DETAIL),  # an index word only as a whole segment
        ("/eventsx", RequestClass.DETAIL),
        ("/playlists/x", RequestClass.DETAIL),
        # the word alone, its name, a date, a page number, a query: an index
        ("/listings", RequestClass.INDEX),
        ("/listings/", RequestClass.INDEX),
        ("/LISTINGS.html", RequestClass.INDEX),
        ("/listing?page=2", RequestClass.INDEX),
        ("/listings/some-flat?sort=price", RequestClass.INDEX),
        ("/search?q=x", RequestClass.INDEX),
        ("/search/shoes/red", RequestClass.INDEX),
        ("/browse/books/fiction", RequestClass.INDEX),
        ("/find.php?what=x", RequestClass.INDEX),
        ("/tags", RequestClass.INDEX),
        ("/tags/python", RequestClass.INDEX),
        ("/tag/python/", RequestClass.INDEX),
        ("/tags/python/page/2", RequestClass.INDEX),
        ("/blog/tags/python?page=2", RequestClass.INDEX),
        ("/list", RequestClass.INDEX),
        ("/list/abc", RequestClass.INDEX),  # a named list is a list
        ("/category/news/", RequestClass.INDEX),
        ("/categories/shoes/boots/", RequestClass.INDEX),  # categories nest
        ("/category/news/page/3", RequestClass.INDEX),
        ("/page/3", RequestClass.INDEX),
        ("/blog/page/2/", RequestClass.INDEX),
        ("/archive/2024/", RequestClass.INDEX),
        ("/archives/2024/05", RequestClass.INDEX),
        ("/events", RequestClass.INDEX),
        ("/events/2024-05-17", RequestClass.INDEX),
        ("/calendar/2026/1", RequestClass.INDEX),
        ("/blog/index.html", RequestClass.INDEX),
        ("/", RequestClass.INDEX),
        ("/index.php", RequestClass.INDEX),
        ("/?page=2", RequestClass.INDEX),
        ("/products?sort=price", RequestClass.INDEX),
        ("/products?filter=red&s=x", RequestClass.INDEX),
        # images and robots.txt come first
        ("/listing/123/photo.jpg", RequestClass.IMAGE),
        ("/robots.txt", RequestClass.ROBOTS),
    ],
)
def test_default_rules_tell_an_index_from_one_thing_it_lists(
    target: str, klass: RequestClass
) -> None:
    assert CostModel().classify_target(target) is klass


@pytest.mark.parametrize(
    ("target", "cost"),
    [
        ("/", 4.0),  # home
        ("/list/1", 4.0),  # a catalogue page: links to its items and the next page
        ("/list/12", 4.0),
        ("/search?q=garden", 4.0),
        ("/search?q=garden&page=2", 4.0),
        ("/search?page=2&q=garden", 4.0),
        ("/calendar/2026/1", 4.0),  # the calendar trap
        ("/item/1", 2.0),  # one listed item: the detail page
        ("/item/7?utm_source=self&ref=item", 2.0),
        ("/private/edit/3", 2.0),
        ("/go/elsewhere", 2.0),
        ("/img/3.jpg", 1.0),
        ("/robots.txt", 1.0),
    ],
)
def test_the_simulated_webs_pages_cost_as_their_class(target: str, cost: float) -> None:
    """The seed sites' URL shapes (``courtier.simweb.pages``) and what they cost there."""
    assert CostModel().cost_of_target(target) == cost


def test_image_response_type_refines_the_class() -> None:
    url = parse_url("http://a.test/media?id=7")
    assert CostModel().classify(url) == RequestClass.DETAIL
    assert CostModel().classify(url, "image/webp; q=1") == RequestClass.IMAGE
    assert request_cost(url, content_type="IMAGE/PNG") == 1.0


def test_configured_rules_and_costs_replace_the_defaults() -> None:
    model = CostModel(
        rules=(UrlRule(r"^/api/", RequestClass.INDEX),),
        costs={**CostModel().costs, RequestClass.INDEX: 8.0},
    )
    assert model.cost(parse_url("http://a.test/api/list")) == 8.0
    assert model.cost(parse_url("http://a.test/search?q=x")) == 2.0  # no rule: detail


def test_bad_rules_and_costs_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="not a valid regex"):
        UrlRule("(", RequestClass.INDEX)
    with pytest.raises(ValueError, match="cost of image"):
        CostModel(costs={**CostModel().costs, RequestClass.IMAGE: 0})


def test_limit_key_round_trips_through_text() -> None:
    key = LimitKey.parse("cdn-miss:cdn.simcdn.test/shop.test")
    assert key == LimitKey(KeyType.CDN_MISS, "cdn.simcdn.test/shop.test")
    assert str(key) == "cdn-miss:cdn.simcdn.test/shop.test"


@pytest.mark.parametrize("text", ["planet:x", "site", "site:", "site:a b"])
def test_malformed_limit_keys_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        LimitKey.parse(text)


def test_guess_origin_groups_by_cname_target_else_address_set() -> None:
    assert guess_origin("Host.Platform.test.", ["10.0.0.1"]) == "cname=host.platform.test"
    assert guess_origin(None, ["10.0.0.2", "10.0.0.1", "10.0.0.2"]) == "addr=10.0.0.1,10.0.0.2"
    assert guess_origin(None, []) is None


def test_default_policy_spaces_sites_per_request_and_origins_per_cost_unit() -> None:
    policy = LimitPolicy()
    site, origin, bucket = policy.limits(
        [
            LimitKey(KeyType.SITE, "a.test"),
            LimitKey(KeyType.ORIGIN, "o"),
            LimitKey(KeyType.BUCKET, "simstore/b"),
        ]
    )
    assert site == Limit("site:a.test", KeyParams(1.0, 0.0, 0.25, weighted=False))
    assert origin.params.charge(4.0) == 2.0  # 2 cost units a second
    assert bucket.params.burst > origin.params.burst  # object stores may burst


def test_per_key_overrides_win_over_the_type_defaults() -> None:
    crawl_delay = KeyParams(5.0, weighted=False)
    policy = LimitPolicy(overrides={"site:slow.test": crawl_delay})
    assert policy.params(LimitKey(KeyType.SITE, "slow.test")) == crawl_delay
    assert policy.params(LimitKey(KeyType.SITE, "fast.test")).interval == 1.0


def test_policy_from_config_merges_over_defaults() -> None:
    policy = LimitPolicy.from_config({"origin": {"rate": 4, "slot_width": 0.1}})
    assert policy.types[KeyType.ORIGIN].rate == 4
    assert policy.types[KeyType.ORIGIN].slot_width == 0.1
    assert policy.types[KeyType.SITE] == DEFAULT_KEY_TYPE_PARAMS[KeyType.SITE]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"planet": {"rate": 1}}, "unknown limit key type"),
        ({"site": {"speed": 1}}, "unknown settings"),
        ({"site": {"rate": 0}}, "rate"),
        ({"site": {"rate": "fast"}}, "rate"),
        ({"site": {"burst": -1}}, "burst"),
        ({"site": {"burst": "x"}}, "burst"),
        ({"site": {"weighted": "yes"}}, "weighted"),
    ],
)
def test_bad_key_type_config_is_a_clear_error(
    table: dict[str, dict[str, object]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        LimitPolicy.from_config(table)


def test_response_type_refines_the_class_both_ways():
    from courtier.politeness.keys import CostModel, RequestClass

    model = CostModel()
    assert model.classify_target("/photo.jpg") is RequestClass.IMAGE
    assert model.classify_target("/photo.jpg", "text/html; charset=utf-8") is RequestClass.DETAIL
    assert model.classify_target("/item/3", "image/png") is RequestClass.IMAGE
    assert model.classify_target("/search?q=a", "text/html") is RequestClass.INDEX


def test_an_expected_cdn_miss_is_booked_on_the_customers_origin() -> None:
    url = "http://cdn.simcdn.test/shop.test/img/a.jpg"
    assert keys_of(url, customer_origin="platform-a") == [
        "cdn:cdn.simcdn.test",
        "cdn-miss:cdn.simcdn.test/shop.test",
        "origin:platform-a",
    ]
    # A hit is expected: neither the miss key nor the origin is spent in advance.
    assert keys_of(url, customer_origin="platform-a", cache_miss_expected=False) == [
        "cdn:cdn.simcdn.test"
    ]


def test_an_image_service_charges_the_customers_origin_only_while_it_behaves_as_a_cache() -> None:
    url = "http://img.simresize.test/acme/w_320/img/a.jpg"
    assert keys_of(url, customer_origin="o1") == ["imgsvc:img.simresize.test/acme", "origin:o1"]
    assert keys_of(url, customer_origin="o1", service_caches=False) == [
        "imgsvc:img.simresize.test/acme"
    ]
    assert keys_of(url, customer_origin="o1", cache_miss_expected=False) == [
        "imgsvc:img.simresize.test/acme"
    ]


def test_an_object_store_never_charges_a_customers_origin() -> None:
    url = "http://s3.simstore.test/media-a/img/1.jpg"
    assert keys_of(url, customer_origin="o1") == ["bucket:simstore/media-a"]


@pytest.mark.parametrize(
    ("url", "source"),
    [
        ("http://s3.simstore.test/media-a/img/1.jpg", "store"),
        ("http://media-a.s3.simstore.test/img/1.jpg", "store"),
        ("https://bucket.s3.eu-west-1.amazonaws.com/a.jpg", "store"),
        ("http://cdn.simcdn.test/shop.test/img/1.jpg", "cdn"),
        ("https://images.ctfassets.net/space1/asset/a.jpg", "cdn"),
        ("http://img.simresize.test/acme/w_320/a.jpg", "imgsvc"),
        ("https://res.cloudinary.com/demo/image/upload/sample.jpg", "imgsvc"),
        ("http://cdn.simcdn.test/", None),  # no customer: not a media URL
        ("http://shop.test/img/1.jpg", None),
    ],
)
def test_media_source_of_a_url(url: str, source: str | None) -> None:
    found = KeyRules().media_source(parse_url(url))
    assert (found.value if found else None) == source


@pytest.mark.parametrize(
    ("url", "keys"),
    [
        (
            "https://d111111abcdef8.cloudfront.net/img/a.jpg",
            ["cdn:cloudfront.net", "cdn-miss:d111111abcdef8.cloudfront.net", "origin:o1"],
        ),
        (
            "https://acme.b-cdn.net/a.jpg",
            ["cdn:b-cdn.net", "cdn-miss:acme.b-cdn.net", "origin:o1"],
        ),
    ],
)
def test_a_per_customer_cdn_hostname_is_recognised_by_its_name(url: str, keys: list[str]) -> None:
    assert KeyRules().media_source(parse_url(url)) is not None
    assert keys_of(url, customer_origin="o1") == keys
    assert keys_of(url, customer_origin="o1", cache_miss_expected=False) == keys[:1]


@pytest.mark.parametrize(
    "url", ["https://cdn-photos.example.com/a.jpg", "https://edge.example.com/a.jpg"]
)
def test_a_site_merely_named_cdn_is_not_a_cdn(url: str) -> None:
    assert KeyRules().media_source(parse_url(url)) is None
    assert keys_of(url)[0].startswith("site:")


def test_name_detection_can_be_turned_off() -> None:
    rules = KeyRules(cdn_names=None)
    assert rules.media_source(parse_url("https://d1.cloudfront.net/a.jpg")) is None
