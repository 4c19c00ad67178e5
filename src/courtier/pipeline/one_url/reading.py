"""A body read by hand as a crawl reads it, and what a crawl would do with its links.

Rules:
- What a crawl parses is parsed, nothing else (``answers.verdict.decide``: a 2xx answer of
  HTML, XHTML, PDF, RSS or Atom); any other answer is described by its document alone.
- The body is read by the crawl's reader with the crawl's context (``Keeper.context``: the
  type, the robots token, X-Robots-Tag, the redaction policy, Link headers, the parse hook
  and its budget): decoded in its own encoding, redacted, parsed, its main text, Markdown
  and language taken, then the hook run (``content.reading.read_page``), against the URL it
  was fetched from. It runs here, in this process, not in a parse worker: no budget but the
  hook's own (``[parse] hook_timeout``). A reader that raises is a ``parse_error`` as in a
  crawl, with its traceback kept (``Reading.traces``); so is a hook's exception
  (``hook.tracing_hooks``), which leaves the document its ``hook_error`` as in a crawl.
- The document is the crawl's (``answers.verdict.document``), with the fields a crawl's
  keeper adds: the redaction counts, the declared canonical and what it copies
  (``Keeper.copied``).
- The links are judged by the crawl's discovery (``feed.discovery.Discovery``) as links of a
  seed page at depth 0, the seed being the URL's site and the sites given (a store's seed):
  links into the seed are frontier, links out of it horizon; an image on a media host is a
  requisite for the media lanes (``[media] fetch``); a page's nofollow, ``[scope]``
  patterns, a secret in a URL, a trap pattern's cap and the depth cap keep a link out of
  both, and each such reason is counted (``Reading.kept_out``).
- A parse hook's ``HookResult`` has done its work on the page before the links are judged
  (``content.hook_links``): the links it dropped are gone, the URLs it added are judged as
  the page's own, and the document says which under ``hook_links``, with the priority the
  frontier's URLs would take (``Links.priority``).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any

from courtier.config import Config
from courtier.content.hook import tracing_hooks
from courtier.content.parse import ParsedPage
from courtier.content.reading import read_page
from courtier.frontier.base import LeasedUrl
from courtier.net.fetch import FetchResult
from courtier.net.policy import AddressPolicy
from courtier.pipeline.answers.fetching import Answer
from courtier.pipeline.answers.verdict import Verdict, decide, document
from courtier.pipeline.feed.discovery import Discovery
from courtier.pipeline.feed.intake import UrlIntake
from courtier.pipeline.feed.scope import ScopeRules
from courtier.pipeline.keeping.archive import redaction_policy
from courtier.pipeline.keeping.keeper import Keeper
from courtier.pipeline.lanes.site import SiteLane
from courtier.pipeline.stats import CrawlStats
from courtier.url import Url, host_of_site


@dataclass(slots=True)
class Links:
    """What a crawl's discovery makes of a page's links."""

    frontier: list[str] = field(default_factory=list)
    horizon: list[str] = field(default_factory=list)
    media: list[str] = field(default_factory=list)
    kept_out: dict[str, int] = field(default_factory=dict)
    """Links kept out of both, by reason (``nofollow``, ``scope-pattern``, ...)."""
    joined: list[str] = field(default_factory=list)
    """Sites a link brought into the seed (``[scope] subdomains``)."""
    priority: int = 0
    """The priority the frontier's URLs would take (the parse hook's; 0: none)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "frontier": self.frontier,
            "horizon": self.horizon,
            "media": self.media,
            "kept_out": self.kept_out,
            "joined": self.joined,
            "priority": self.priority,
        }


@dataclass(slots=True)
class Reading:
    document: dict[str, Any]
    page: ParsedPage | None = None
    not_parsed: str | None = None
    """Why the body was not parsed (None: it was)."""
    links: Links = field(default_factory=Links)
    traces: list[str] = field(default_factory=list)
    """Tracebacks of what raised while reading: the reader, the parse hook."""

    @property
    def hook_failed(self) -> bool:
        return "hook_error" in self.document

    @property
    def failed(self) -> bool:
        """The reader or the hook failed (a debugging command exits 1)."""
        return self.hook_failed or "parse_error" in self.document


def read_answer(
    config: Config,
    result: FetchResult,
    url: Url,
    seed: set[str],
    policy: AddressPolicy,
) -> Reading:
    """``result``, the answer of ``url``, read as a crawl reads it (see the module's rules)."""
    keeper = Keeper(config, CrawlStats(), None, None)
    verdict = decide(Answer(url.fetch_url, result), attempts=0, suspended=False, sitemap=False)
    if verdict is not Verdict.PARSE_PAGE:
        record = document(result, url=url.fetch_url, site=url.site, depth=0)
        return Reading(record, not_parsed=_why_not(result, verdict))
    context = keeper.context(result, url.site)
    traces: list[str] = []
    try:
        with tracing_hooks() as traces:
            page = read_page(result.content, result.url, context)
    except Exception:  # the reader's bug or an input it cannot take, as in a crawl
        record = document(result, url=url.fetch_url, site=url.site, depth=0)
        record["parse_error"] = "parse-error"
        return Reading(record, not_parsed="the reader raised", traces=[traceback.format_exc()])
    fields: dict[str, Any] = {"depth": 0}
    if page.redactions:
        fields["redacted"] = dict(sorted(page.redactions.items()))
    fields.update(keeper.copied(url.fetch_url, page))
    record = document(result, url=url.fetch_url, site=url.site, page=page, **fields)
    links = judge_links(config, page, url, seed, policy)
    return Reading(record, page, links=links, traces=traces)


def read_file(
    config: Config,
    body: bytes,
    url: Url,
    content_type: str,
    seed: set[str],
    policy: AddressPolicy,
) -> Reading:
    """A saved body read as a crawl would read it had ``url`` answered it (200, of
    ``content_type``); the document keeps no fields of a fetch that did not happen."""
    result = FetchResult(url.fetch_url, 200, content_type, body, headers=_headers(content_type))
    reading = read_answer(config, result, url, seed, policy)
    for name in ("status", "fetched_at", "elapsed_ms"):
        reading.document.pop(name, None)
    return reading


def _headers(content_type: str) -> tuple[tuple[str, str], ...]:
    return (("Content-Type", content_type),) if content_type else ()


def judge_links(
    config: Config, page: ParsedPage, url: Url, seed: set[str], policy: AddressPolicy
) -> Links:
    """The crawl's discovery over ``page``'s links, as read from ``url`` at depth 0."""
    stats = CrawlStats()
    scope = {url.site, *seed}
    joined: list[str] = []

    def adopt(site: str, _scheme: str, _parent: str, _why: str) -> None:
        scope.add(site)
        joined.append(site)

    lane = SiteLane(name=url.site, host=host_of_site(url.site), scheme=url.scheme)
    discovery = Discovery(
        {url.site: lane},
        scope,
        stats,
        policy,
        config.frontier.surface_policy(config.crawl.max_depth),
        UrlIntake(stats.refused, redaction_policy(config)),
        rules=ScopeRules(config.scope),
        adopt=adopt,
    )
    media: list[str] = []
    if config.media.fetch:
        rules = config.media.rules()

        def requisite(image: Url, _site: str) -> bool:
            if rules.media_source(image) is None:
                return False
            media.append(image.fetch_url)
            return True

        discovery.media = requisite
    discovery.page(lane, LeasedUrl(0, url.fetch_url, url.site, 0, 0), page)
    new_urls, horizon, _edges, _evictions = discovery.drain()
    kept_out = dict(stats.refused)
    for reason, count in (
        ("nofollow", stats.nofollow_links),
        ("depth-capped", stats.depth_capped),
        ("trap-capped", stats.trap_capped),
    ):
        if count:
            kept_out[reason] = count
    return Links(
        [new.fetch_url for new in new_urls],
        [link.canonical for link in horizon],
        media,
        kept_out,
        joined,
        page.priority,
    )


def _why_not(result: FetchResult, verdict: Verdict) -> str:
    if result.status is None:
        return f"no answer ({result.error})"
    if verdict is Verdict.REDIRECT:
        return "a redirect"
    if not 200 <= result.status < 300:
        return f"status {result.status}: a crawl parses 2xx answers only"
    kind = result.content_type or "no Content-Type"
    return f"{kind}: a crawl parses HTML, XHTML, PDF, RSS and Atom only"
