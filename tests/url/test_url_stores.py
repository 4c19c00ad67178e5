"""Object-store keys: a table of URL shapes per provider, and look-alikes that are not stores."""

# The case table reads best one case per line, so long lines are allowed in this file.
# ruff: noqa: E501

from __future__ import annotations

import pytest

from courtier.url import (
    STORE_ENDPOINTS,
    StoreName,
    StoreRef,
    UrlError,
    object_store,
    parse_url,
    store_name,
)
from courtier.url.objectstore import match_store_endpoint

R2_ACCOUNT = "0123456789abcdef0123456789abcdef"

# (url, provider, bucket, key, region)
STORE_CASES: list[tuple[str, str, str, str, str | None]] = [
    # --- AWS S3: virtual-hosted
    ("https://my-bucket.s3.amazonaws.com/photos/cat.jpg", "aws-s3", "my-bucket", "photos/cat.jpg", None),
    ("https://my.dotted.bucket.s3.amazonaws.com/a", "aws-s3", "my.dotted.bucket", "a", None),
    ("https://MY-BUCKET.S3.AMAZONAWS.COM./x", "aws-s3", "my-bucket", "x", None),
    ("https://b1.s3-external-1.amazonaws.com/k", "aws-s3", "b1", "k", "us-east-1"),
    ("https://b1.s3.eu-west-3.amazonaws.com/k%20with%20space", "aws-s3", "b1", "k with space", "eu-west-3"),
    ("https://b1.s3-us-west-2.amazonaws.com/k", "aws-s3", "b1", "k", "us-west-2"),
    ("https://b1.s3.dualstack.ap-southeast-2.amazonaws.com/k", "aws-s3", "b1", "k", "ap-southeast-2"),
    ("https://b1.s3-fips.us-gov-west-1.amazonaws.com/k", "aws-s3", "b1", "k", "us-gov-west-1"),
    ("https://b1.s3-fips.dualstack.us-east-2.amazonaws.com/k", "aws-s3", "b1", "k", "us-east-2"),
    ("https://b1.s3-accelerate.amazonaws.com/k", "aws-s3", "b1", "k", None),
    ("https://b1.s3-accelerate.dualstack.amazonaws.com/k", "aws-s3", "b1", "k", None),
    ("http://www.example.com.s3-website-us-east-1.amazonaws.com/index.html", "aws-s3", "www.example.com", "index.html", "us-east-1"),
    ("http://b1.s3-website.eu-central-1.amazonaws.com/", "aws-s3", "b1", "", "eu-central-1"),
    ("https://b1.s3.cn-north-1.amazonaws.com.cn/k", "aws-s3", "b1", "k", "cn-north-1"),
    ("https://b1.s3.dualstack.cn-northwest-1.amazonaws.com.cn/k", "aws-s3", "b1", "k", "cn-northwest-1"),
    ("http://b1.s3-website.cn-north-1.amazonaws.com.cn/k", "aws-s3", "b1", "k", "cn-north-1"),
    # --- AWS S3: path style
    ("https://s3.amazonaws.com/my-bucket/photos/cat.jpg?versionId=3", "aws-s3", "my-bucket", "photos/cat.jpg", None),
    ("https://s3.amazonaws.com/my.dotted.bucket/a/b/", "aws-s3", "my.dotted.bucket", "a/b/", None),
    ("https://s3.amazonaws.com/b1", "aws-s3", "b1", "", None),
    ("https://s3-external-1.amazonaws.com/b1/k", "aws-s3", "b1", "k", "us-east-1"),
    ("https://s3.eu-west-1.amazonaws.com/b1/k", "aws-s3", "b1", "k", "eu-west-1"),
    ("https://s3-eu-west-1.amazonaws.com/b1/k", "aws-s3", "b1", "k", "eu-west-1"),
    ("https://s3.dualstack.us-west-2.amazonaws.com/b1/k", "aws-s3", "b1", "k", "us-west-2"),
    ("https://s3-fips.us-gov-east-1.amazonaws.com/b1/k", "aws-s3", "b1", "k", "us-gov-east-1"),
    ("https://s3-fips-us-gov-west-1.amazonaws.com/b1/k", "aws-s3", "b1", "k", "us-gov-west-1"),
    ("https://s3-fips.dualstack.us-east-1.amazonaws.com/b1/k", "aws-s3", "b1", "k", "us-east-1"),
    ("https://s3.cn-north-1.amazonaws.com.cn/b1/k", "aws-s3", "b1", "k", "cn-north-1"),
    ("https://s3.dualstack.cn-north-1.amazonaws.com.cn/b1/k", "aws-s3", "b1", "k", "cn-north-1"),
    # --- Google Cloud Storage
    ("https://storage.googleapis.com/my-bucket/a/b.png", "gcs", "my-bucket", "a/b.png", None),
    ("https://storage.googleapis.com/my_bucket.example.com/x", "gcs", "my_bucket.example.com", "x", None),
    ("https://storage.googleapis.com/storage/v1/b/bkt/o/a%2Fb.png?alt=media", "gcs", "bkt", "a/b.png", None),
    ("https://storage.googleapis.com/download/storage/v1/b/bkt/o/a%2Fb.png?alt=media", "gcs", "bkt", "a/b.png", None),
    ("https://c.storage.googleapis.com/bkt/k", "gcs", "bkt", "k", None),
    ("https://my-bucket.storage.googleapis.com/a/b.png", "gcs", "my-bucket", "a/b.png", None),
    ("https://storage.cloud.google.com/bkt/k", "gcs", "bkt", "k", None),
    ("http://commondatastorage.googleapis.com/bkt/k", "gcs", "bkt", "k", None),
    ("http://bkt.commondatastorage.googleapis.com/k", "gcs", "bkt", "k", None),
    ("https://www.googleapis.com/storage/v1/b/bkt/o/k.txt", "gcs", "bkt", "k.txt", None),
    ("https://www.googleapis.com/storage/v1/b/bkt/o?prefix=a/", "gcs", "bkt", "", None),
    ("https://storage.googleapis.com/storage/v1/b/bkt", "gcs", "bkt", "", None),
    ("https://www.googleapis.com/download/storage/v1/b/bkt/o/k.txt?alt=media", "gcs", "bkt", "k.txt", None),
    # --- Azure Blob Storage
    ("https://acct01.blob.core.windows.net/images/2024/a.jpg", "azure-blob", "acct01/images", "2024/a.jpg", None),
    ("https://acct01.blob.core.windows.net/$root/a.jpg", "azure-blob", "acct01/$root", "a.jpg", None),
    ("https://acct01.blob.core.windows.net/images", "azure-blob", "acct01/images", "", None),
    ("https://acct01.dfs.core.windows.net/fs/dir/file", "azure-blob", "acct01/fs", "dir/file", None),
    ("https://acct01.blob.core.usgovcloudapi.net/c/k", "azure-blob", "acct01/c", "k", None),
    ("https://acct01.blob.core.chinacloudapi.cn/c/k", "azure-blob", "acct01/c", "k", None),
    ("https://acct01.z13.web.core.windows.net/index.html", "azure-blob", "acct01/$web", "index.html", None),
    # --- Cloudflare R2
    (f"https://{R2_ACCOUNT}.r2.cloudflarestorage.com/bkt/k", "cloudflare-r2", f"{R2_ACCOUNT}/bkt", "k", None),
    (f"https://{R2_ACCOUNT}.eu.r2.cloudflarestorage.com/bkt/k", "cloudflare-r2", f"{R2_ACCOUNT}/bkt", "k", "eu"),
    (f"https://bkt.{R2_ACCOUNT}.r2.cloudflarestorage.com/k", "cloudflare-r2", f"{R2_ACCOUNT}/bkt", "k", None),
    (f"https://bkt.{R2_ACCOUNT}.fedramp.r2.cloudflarestorage.com/k", "cloudflare-r2", f"{R2_ACCOUNT}/bkt", "k", "fedramp"),
    (f"https://pub-{R2_ACCOUNT}.r2.dev/img/a.png", "cloudflare-r2", f"pub-{R2_ACCOUNT}", "img/a.png", None),
    # --- DigitalOcean Spaces
    ("https://space1.nyc3.digitaloceanspaces.com/k", "do-spaces", "space1", "k", "nyc3"),
    ("https://space1.fra1.cdn.digitaloceanspaces.com/k", "do-spaces", "space1", "k", "fra1"),
    ("https://sgp1.digitaloceanspaces.com/space1/k", "do-spaces", "space1", "k", "sgp1"),
    # --- Backblaze B2
    ("https://f000.backblazeb2.com/file/bkt/a/b.jpg", "backblaze-b2", "bkt", "a/b.jpg", None),
    ("https://f004.backblazeb2.com/file/bkt/a%2Bb.jpg", "backblaze-b2", "bkt", "a+b.jpg", None),
    ("https://bkt.s3.us-west-004.backblazeb2.com/k", "backblaze-b2", "bkt", "k", "us-west-004"),
    ("https://s3.eu-central-003.backblazeb2.com/bkt/k", "backblaze-b2", "bkt", "k", "eu-central-003"),
    # --- Wasabi
    ("https://bkt.s3.wasabisys.com/k", "wasabi", "bkt", "k", "us-east-1"),
    ("https://bkt.s3.eu-central-1.wasabisys.com/k", "wasabi", "bkt", "k", "eu-central-1"),
    ("https://s3.wasabisys.com/bkt/k", "wasabi", "bkt", "k", "us-east-1"),
    ("https://s3.ap-northeast-1.wasabisys.com/bkt/k", "wasabi", "bkt", "k", "ap-northeast-1"),
    # --- Alibaba Cloud OSS
    ("https://bkt.oss-cn-hangzhou.aliyuncs.com/k.jpg", "alibaba-oss", "bkt", "k.jpg", "cn-hangzhou"),
    ("https://bkt.oss-us-west-1.aliyuncs.com/k", "alibaba-oss", "bkt", "k", "us-west-1"),
    ("https://bkt.oss-cn-beijing-internal.aliyuncs.com/k", "alibaba-oss", "bkt", "k", "cn-beijing"),
    ("https://bkt.oss-accelerate.aliyuncs.com/k", "alibaba-oss", "bkt", "k", None),
    ("https://bkt.oss-accelerate-overseas.aliyuncs.com/k", "alibaba-oss", "bkt", "k", None),
    ("https://oss-cn-shanghai.aliyuncs.com/bkt/k", "alibaba-oss", "bkt", "k", "cn-shanghai"),
    ("https://oss-cn-shanghai-internal.aliyuncs.com/bkt/k", "alibaba-oss", "bkt", "k", "cn-shanghai"),
    # --- the simulated web's store
    ("http://media.s3.simstore.test/img/1.png", "simstore", "media", "img/1.png", None),
    ("http://s3.simstore.test/media/img/1.png", "simstore", "media", "img/1.png", None),
    ("http://my.media.s3.simstore.test:8080/img/1.png", "simstore", "my.media", "img/1.png", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("url", "provider", "bucket", "key", "region"), STORE_CASES, ids=[c[0] for c in STORE_CASES]
)
def test_object_store_url_shapes_give_provider_bucket_key_and_region(
    url: str, provider: str, bucket: str, key: str, region: str | None
) -> None:
    assert object_store(url) == StoreRef(provider, bucket, key, region)
    assert object_store(parse_url(url)) == StoreRef(provider, bucket, key, region)


def test_virtual_hosted_and_path_style_spellings_share_one_bucket_key() -> None:
    virtual = object_store("https://my-bucket.s3.amazonaws.com/a.jpg")
    path_style = object_store("https://s3.amazonaws.com/my-bucket/a.jpg")
    assert virtual is not None and path_style is not None
    assert (virtual.provider, virtual.bucket) == (path_style.provider, path_style.bucket)


def test_every_row_of_the_provider_table_is_exercised() -> None:
    matched_rows = set()
    for url, *_ in STORE_CASES:
        match = match_store_endpoint(url)
        assert match is not None, url
        matched_rows.add(match[0])
    unexercised = [row.host for row in STORE_ENDPOINTS if row not in matched_rows]
    assert not unexercised


NOT_STORES = [
    "https://s3.amazonaws.com.evil.example/bucket/key",  # look-alike suffix
    "https://bucket.s3.amazonaws.com.evil.example/key",
    "https://s3.example.com/bucket/key",  # "s3" alone means nothing
    "https://bucket.s3.example.com/key",
    "https://evil-s3.amazonaws.com/bucket/key",  # not an S3 endpoint name
    "https://s3-amazonaws.com/bucket/key",
    "https://amazonaws.com/bucket/key",
    "https://s3.amazonaws.co/bucket/key",
    "https://s3.notaregion.amazonaws.com/bucket/key",
    "https://b1.s3.website.amazonaws.com/key",  # "website" is not a region
    "https://s3.amazonaws.com/",  # the service root names no bucket
    "https://storage.googleapis.com/",
    "https://storage.googleapis.com.evil.example/bkt/k",
    "https://www.googleapis.com/youtube/v3/videos",  # only the storage API is a store
    "https://blob.core.windows.net/c/k",  # no account
    "https://acct01.blob.core.windows.net.evil.example/c/k",
    "https://x.r2.cloudflarestorage.com/bkt/k",  # account ids are 32 hex digits
    "https://pub-123.r2.dev/k",
    "https://digitaloceanspaces.com/space/k",
    "https://space1.cdn.digitaloceanspaces.com/k",  # a region is required
    "https://f000.backblazeb2.com/b2api/v1/b2_download_file_by_id?fileId=4_z",
    "https://backblazeb2.com/file/bkt/k",
    "https://wasabisys.com/bkt/k",
    "https://aliyuncs.com/bkt/k",
    "https://bkt.ecs.aliyuncs.com/k",
    "http://s3.simstore.test.evil.example/bkt/k",
    "http://simstore.test/bkt/k",
    "https://www.example.com/s3.amazonaws.com/bucket/key",  # the path does not count
    "http://xn--s3-kka.amazonaws.com/bucket/k",  # an IDN host is not the endpoint
]


@pytest.mark.parametrize("url", NOT_STORES)
def test_look_alike_hosts_are_not_object_stores(url: str) -> None:
    assert object_store(url) is None


def test_an_invalid_url_string_raises_url_error() -> None:
    with pytest.raises(UrlError):
        object_store("https://a..b/k")


def test_a_parsed_url_asked_twice_or_after_another_gets_its_own_answer() -> None:
    # object_store remembers the last parsed URL it answered for (media kind, then keys).
    store = parse_url("https://b1.s3.amazonaws.com/k")
    plain = parse_url("https://example.com/b1/k")
    twin = parse_url("https://b1.s3.amazonaws.com/k")
    for url, expected in [(store, "b1"), (store, "b1"), (plain, None), (plain, None), (twin, "b1")]:
        ref = object_store(url)
        assert (ref.bucket if ref else None) == expected
    assert object_store("https://example.com/b1/k") is None  # strings are never remembered
    assert object_store(store) == object_store(twin)


@pytest.mark.parametrize(
    ("host", "provider", "bucket", "account", "behind"),
    [
        ("img.example.com.s3.amazonaws.com", "aws-s3", "img.example.com", None, "img.example.com"),
        ("s3.eu-west-1.amazonaws.com", "aws-s3", None, None, "images.shop.example"),
        ("c.storage.googleapis.com", "gcs", None, None, "images.shop.example"),
        ("storage.googleapis.com", "gcs", None, None, "images.shop.example"),
        ("bkt.storage.googleapis.com", "gcs", "bkt", None, "bkt"),
        ("shopmedia.blob.core.windows.net", "azure-blob", None, "shopmedia", "shopmedia/listings"),
        ("shop.z6.web.core.windows.net", "azure-blob", "$web", "shop", "shop/$web"),
        ("media-a.s3.simstore.test", "simstore", "media-a", None, "media-a"),
    ],
)
def test_a_store_endpoints_name_alone_says_which_bucket_a_cname_reaches(
    host: str, provider: str, bucket: str | None, account: str | None, behind: str
) -> None:
    name = store_name(host)
    assert name == StoreName(provider, bucket, account)
    assert name.per_path == (bucket is None and account is not None)
    assert name.bucket_behind("images.shop.example", "/listings/a%20b.jpg?w=1") == behind


@pytest.mark.parametrize(
    "host",
    [
        "www.googleapis.com",  # only the storage API: no bucket a CNAME could reach
        "f001.backblazeb2.com",  # /file/<bucket>/...: the path names it, never the Host
        "images.ctfassets.net",
        "s3.amazonaws.com.evil.example",
        "example.com",
    ],
)
def test_a_name_that_is_no_store_endpoint_says_nothing(host: str) -> None:
    assert store_name(host) is None


def test_an_accounts_container_must_be_a_bucket_name() -> None:
    name = store_name("shopmedia.blob.core.windows.net")
    assert name is not None
    assert name.bucket_behind("images.shop.example", "/") is None
    assert name.bucket_behind("images.shop.example", "/%2F%2F/a.jpg") is None
