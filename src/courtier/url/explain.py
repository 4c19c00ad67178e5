"""``courtier url explain``: what Courtier makes of a URL, for people debugging keys.

Pure: one input string in, one ``Explanation`` out, never an exception (a bad URL is an
explanation with an error). The CLI formats it as text or as one JSON object per line.
"""

from __future__ import annotations

from dataclasses import dataclass

from courtier.url.canonical import parse_url
from courtier.url.errors import UrlError
from courtier.url.objectstore import StoreRef, object_store
from courtier.url.psl import registrable_domain


@dataclass(frozen=True, slots=True)
class Explanation:
    """The canonical views of one input URL, or the error that stopped it."""

    input: str
    url: str | None = None  # the canonical (deduplication) URL
    fetch_url: str | None = None
    host: str | None = None
    site: str | None = None
    registrable_domain: str | None = None
    store: StoreRef | None = None
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        """The machine form: exactly the keys the CLI documents."""
        store = self.store
        return {
            "input": self.input,
            "url": self.url,
            "host": self.host,
            "site": self.site,
            "registrable_domain": self.registrable_domain,
            "store": None
            if store is None
            else {
                "provider": store.provider,
                "bucket": store.bucket,
                "key": store.key,
                "region": store.region,
            },
            "error": self.error,
        }

    def to_text(self) -> str:
        """The human form: the input, then one aligned line per field."""
        lines = [self.input if self.input.isprintable() else repr(self.input)]
        if self.error is not None:
            lines.append(f"  error               {self.error}")
            return "\n".join(lines)
        store = self.store
        store_text = (
            "-"
            if store is None
            else f"{store.provider} bucket={store.bucket} key={store.key!r} "
            f"region={store.region or '-'}"
        )
        fields = (
            ("url", self.url),
            ("fetch", self.fetch_url),
            ("host", self.host),
            ("site", self.site),
            ("registrable_domain", self.registrable_domain or "-"),
            ("store", store_text),
        )
        lines.extend(f"  {name:<19} {value}" for name, value in fields)
        return "\n".join(lines)


def explain(raw: str) -> Explanation:
    """Explain one URL; errors become part of the explanation."""
    try:
        url = parse_url(raw)
        return Explanation(
            input=raw,
            url=url.canonical,
            fetch_url=url.fetch_url,
            host=url.host,
            site=url.site,
            registrable_domain=registrable_domain(url.host),
            store=object_store(url),
        )
    except UrlError as error:
        return Explanation(input=raw, error=str(error))
