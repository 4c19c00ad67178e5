"""The object-store provider table: which URL shapes address which bucket. Data, not code.

Each row is an endpoint: a host template and the path templates under it. Placeholders:

- ``{bucket}`` — the bucket (container, Space, ...). In the host it is a run of DNS labels and
  may hold dots (``my.bucket.s3.amazonaws.com``); in a path it is one segment.
- ``{account}`` — the account that scopes bucket names (Azure storage account, R2 account id).
  The bucket key then becomes ``account/bucket``, because bucket names are only unique within
  an account there.
- ``{region}`` — the region, matched by the row's ``region_pattern``.
- ``{key}`` — the object key: the rest of the path, percent-decoded. ``/{bucket}/{key}`` also
  matches ``/{bucket}`` alone (key ``""``).
- any other ``{name}`` — a token matched by the row's ``tokens`` pattern and otherwise ignored.

Rules: rows are tried in order and the first whose host *and* path match wins, so a more
specific row goes first. Host templates match the whole canonical host (lowercase, punycode),
so a look-alike such as ``s3.amazonaws.com.evil.example`` can never match. Every literal in a
template is matched literally. To add a provider, add rows; nothing else changes.

Virtual-hosted rows default to the path template ``/{key}``, path-style rows (no ``{bucket}``
in the host) to ``/{bucket}/{key}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# us-east-1, eu-west-3, us-gov-west-1, cn-north-1, ap-southeast-2, us-iso-east-1, ...
AWS_REGION: Final = r"[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}"
DO_REGION: Final = r"[a-z]{3}[0-9]"  # nyc3, ams3, sgp1, fra1, ...
B2_REGION: Final = r"[a-z]{2}-[a-z]+-[0-9]{3}"  # us-west-004, eu-central-003, ...
OSS_REGION: Final = r"[a-z]{2}(?:-[a-z]+)+(?:-[0-9]+)?"  # cn-hangzhou, us-west-1, ...
R2_JURISDICTION: Final = r"eu|fedramp"


@dataclass(frozen=True, slots=True)
class StoreEndpoint:
    """One URL shape of one provider's object store."""

    provider: str
    host: str
    paths: tuple[str, ...] = ()  # empty: the default for the host's style (see module doc)
    region: str | None = None  # a fixed region, for hosts that do not name one
    region_pattern: str = AWS_REGION
    tokens: tuple[tuple[str, str], ...] = ()  # extra placeholders: (name, regex)
    container: str | None = None  # a fixed container, for hosts that serve only one


def _aws(host: str, region: str | None = None) -> StoreEndpoint:
    return StoreEndpoint("aws-s3", host, region=region)


_AWS: Final = (
    # Virtual-hosted style: the bucket is in the host name.
    _aws("{bucket}.s3.amazonaws.com"),
    _aws("{bucket}.s3-external-1.amazonaws.com", region="us-east-1"),
    _aws("{bucket}.s3.{region}.amazonaws.com"),
    _aws("{bucket}.s3-{region}.amazonaws.com"),  # legacy dash-region endpoints
    _aws("{bucket}.s3.dualstack.{region}.amazonaws.com"),
    _aws("{bucket}.s3-fips.{region}.amazonaws.com"),
    _aws("{bucket}.s3-fips.dualstack.{region}.amazonaws.com"),
    _aws("{bucket}.s3-accelerate.amazonaws.com"),
    _aws("{bucket}.s3-accelerate.dualstack.amazonaws.com"),
    _aws("{bucket}.s3-website-{region}.amazonaws.com"),
    _aws("{bucket}.s3-website.{region}.amazonaws.com"),
    _aws("{bucket}.s3.{region}.amazonaws.com.cn"),
    _aws("{bucket}.s3.dualstack.{region}.amazonaws.com.cn"),
    _aws("{bucket}.s3-website.{region}.amazonaws.com.cn"),
    # Path style: the bucket is the first path segment.
    _aws("s3.amazonaws.com"),
    _aws("s3-external-1.amazonaws.com", region="us-east-1"),
    _aws("s3.{region}.amazonaws.com"),
    _aws("s3-{region}.amazonaws.com"),
    _aws("s3.dualstack.{region}.amazonaws.com"),
    _aws("s3-fips.{region}.amazonaws.com"),
    _aws("s3-fips-{region}.amazonaws.com"),  # legacy FIPS endpoint
    _aws("s3-fips.dualstack.{region}.amazonaws.com"),
    _aws("s3.{region}.amazonaws.com.cn"),
    _aws("s3.dualstack.{region}.amazonaws.com.cn"),
)

# The JSON API: objects (the key is one escaped segment), object listings, bucket metadata.
_GCS_JSON_API: Final = (
    "/storage/v1/b/{bucket}/o/{key}",
    "/download/storage/v1/b/{bucket}/o/{key}",
    "/storage/v1/b/{bucket}",
)
_GCS: Final = (
    StoreEndpoint("gcs", "storage.googleapis.com", paths=(*_GCS_JSON_API, "/{bucket}/{key}")),
    StoreEndpoint("gcs", "c.storage.googleapis.com"),  # the CNAME target, also path style
    StoreEndpoint("gcs", "{bucket}.storage.googleapis.com"),
    StoreEndpoint("gcs", "storage.cloud.google.com"),  # authenticated browser downloads
    StoreEndpoint("gcs", "commondatastorage.googleapis.com"),  # legacy
    StoreEndpoint("gcs", "{bucket}.commondatastorage.googleapis.com"),  # legacy
    StoreEndpoint("gcs", "www.googleapis.com", paths=_GCS_JSON_API),  # only the storage API
)

_AZURE_ACCOUNT: Final = (("account", r"[a-z0-9]{3,24}"),)
_AZURE: Final = (
    StoreEndpoint("azure-blob", "{account}.blob.core.windows.net", tokens=_AZURE_ACCOUNT),
    # Data Lake Gen2: the same accounts and containers ("file systems") as Blob Storage.
    StoreEndpoint("azure-blob", "{account}.dfs.core.windows.net", tokens=_AZURE_ACCOUNT),
    StoreEndpoint("azure-blob", "{account}.blob.core.usgovcloudapi.net", tokens=_AZURE_ACCOUNT),
    StoreEndpoint("azure-blob", "{account}.blob.core.chinacloudapi.cn", tokens=_AZURE_ACCOUNT),
    StoreEndpoint(  # static websites are served from the account's "$web" container
        "azure-blob",
        "{account}.{zone}.web.core.windows.net",
        paths=("/{key}",),
        tokens=(*_AZURE_ACCOUNT, ("zone", r"z[0-9]+")),
        container="$web",
    ),
)

_R2_TOKENS: Final = (("account", r"[0-9a-f]{32}"),)
_R2: Final = (
    StoreEndpoint("cloudflare-r2", "{account}.r2.cloudflarestorage.com", tokens=_R2_TOKENS),
    StoreEndpoint(
        "cloudflare-r2",
        "{account}.{region}.r2.cloudflarestorage.com",
        region_pattern=R2_JURISDICTION,
        tokens=_R2_TOKENS,
    ),
    StoreEndpoint(
        "cloudflare-r2", "{bucket}.{account}.r2.cloudflarestorage.com", tokens=_R2_TOKENS
    ),
    StoreEndpoint(
        "cloudflare-r2",
        "{bucket}.{account}.{region}.r2.cloudflarestorage.com",
        region_pattern=R2_JURISDICTION,
        tokens=_R2_TOKENS,
    ),
    # Public development URLs: one pub-<id>.r2.dev host per bucket.
    StoreEndpoint("cloudflare-r2", "{bucket}.r2.dev", tokens=(("bucket", r"pub-[0-9a-f]{32}"),)),
)

_DO: Final = (
    StoreEndpoint(
        "do-spaces", "{bucket}.{region}.digitaloceanspaces.com", region_pattern=DO_REGION
    ),
    StoreEndpoint(
        "do-spaces", "{bucket}.{region}.cdn.digitaloceanspaces.com", region_pattern=DO_REGION
    ),
    StoreEndpoint("do-spaces", "{region}.digitaloceanspaces.com", region_pattern=DO_REGION),
)

_B2: Final = (
    StoreEndpoint(  # native download URLs: f000.backblazeb2.com/file/<bucket>/<key>
        "backblaze-b2",
        "{node}.backblazeb2.com",
        paths=("/file/{bucket}/{key}",),
        tokens=(("node", r"f[0-9]{3}"),),
    ),
    StoreEndpoint("backblaze-b2", "{bucket}.s3.{region}.backblazeb2.com", region_pattern=B2_REGION),
    StoreEndpoint("backblaze-b2", "s3.{region}.backblazeb2.com", region_pattern=B2_REGION),
)

_WASABI: Final = (
    StoreEndpoint("wasabi", "{bucket}.s3.wasabisys.com", region="us-east-1"),
    StoreEndpoint("wasabi", "{bucket}.s3.{region}.wasabisys.com"),
    StoreEndpoint("wasabi", "s3.wasabisys.com", region="us-east-1"),
    StoreEndpoint("wasabi", "s3.{region}.wasabisys.com"),
)

_OSS: Final = (
    StoreEndpoint("alibaba-oss", "{bucket}.oss-accelerate.aliyuncs.com"),
    StoreEndpoint("alibaba-oss", "{bucket}.oss-accelerate-overseas.aliyuncs.com"),
    StoreEndpoint(
        "alibaba-oss", "{bucket}.oss-{region}-internal.aliyuncs.com", region_pattern=OSS_REGION
    ),
    StoreEndpoint("alibaba-oss", "{bucket}.oss-{region}.aliyuncs.com", region_pattern=OSS_REGION),
    StoreEndpoint("alibaba-oss", "oss-{region}-internal.aliyuncs.com", region_pattern=OSS_REGION),
    StoreEndpoint("alibaba-oss", "oss-{region}.aliyuncs.com", region_pattern=OSS_REGION),
)

# The simulated web's store (courtier.simweb), shaped like S3 without regions.
_SIMSTORE: Final = (
    StoreEndpoint("simstore", "{bucket}.s3.simstore.test"),
    StoreEndpoint("simstore", "s3.simstore.test"),
)

STORE_ENDPOINTS: Final[tuple[StoreEndpoint, ...]] = (
    *_AWS,
    *_GCS,
    *_AZURE,
    *_R2,
    *_DO,
    *_B2,
    *_WASABI,
    *_OSS,
    *_SIMSTORE,
)
