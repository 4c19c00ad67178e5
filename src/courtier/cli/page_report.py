"""What ``courtier fetch`` and ``courtier parse`` print: one report, as JSON or for a person.

The report is built once as a JSON object (``report``), then printed as is (``--json``: one
object on one line) or as text (``print_report``). Keys: ``url`` (as asked), ``final_url``,
``status``, ``requests`` (each request: kind, URL, keys booked, cost, wait, status, or the
guard's refusal), ``robots`` (each site's robots.txt: where the answer came from, its rules,
Crawl-delay), ``redirects``, ``headers`` (the last answer's, values redacted as a crawl's
archive redacts them: ``redact.redact_url`` under ``[redact]``), ``document`` (the crawl's
document of the page, with ``hook_links``: what the parse hook added, dropped and the
priority it gave), ``links`` (frontier, horizon, media, kept out), ``not_parsed``,
``stopped``, ``notes`` and ``tracebacks`` (the reader's or the hook's). A key with nothing to
say is left out.
"""

from __future__ import annotations

import json
from typing import Any

from courtier.config import Config
from courtier.net.fetch import FetchResult
from courtier.pipeline.keeping.archive import redaction_policy
from courtier.pipeline.one_url.fetching import Trace
from courtier.pipeline.one_url.reading import Reading
from courtier.sinks.redact import redact_url

TEXT_CHARS = 300
"""Characters of the main text shown (``--json`` has it all)."""


def redacted_headers(config: Config, result: FetchResult) -> list[list[str]]:
    policy = redaction_policy(config)
    return [[name, redact_url(value, policy).text] for name, value in result.headers]


def report(
    config: Config,
    *,
    asked: str,
    trace: Trace | None = None,
    reading: Reading | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report of a fetch (``trace``) and its reading, or of a file's reading alone."""
    out: dict[str, Any] = {"url": asked}
    if trace is not None:
        out["final_url"] = trace.url
        out["requests"] = [sent.to_json() for sent in trace.requests]
        out["robots"] = [note.to_json() for note in trace.robots]
        if trace.origin is not None:
            out["origin"] = trace.origin
        out["redirects"] = [
            {"status": status, "from": source, "to": target}
            for status, source, target in trace.redirects
        ]
        if trace.result is not None:
            out["status"] = trace.result.status
            out["headers"] = redacted_headers(config, trace.result)
        if trace.stopped:
            out["stopped"] = trace.stopped
        if trace.notes:
            out["notes"] = list(trace.notes)
    if reading is not None:
        out["document"] = reading.document
        if reading.not_parsed is not None:
            out["not_parsed"] = reading.not_parsed
        if reading.page is not None:
            out["links"] = reading.links.to_json()
        if reading.traces:
            out["tracebacks"] = list(reading.traces)
    out.update(extra or {})
    return out


def print_json(out: dict[str, Any]) -> None:
    print(json.dumps(out, ensure_ascii=False))


def print_report(out: dict[str, Any], *, links: int) -> None:
    """``out`` for a person; the first ``links`` links of each kind."""
    for sent in out.get("requests", []):
        print(_request_line(sent))
    for note in out.get("robots", []):
        delay = note["crawl_delay"]
        print(
            f"robots.txt of {note['site']}: {note['rules']} (status {note['http_status']}, "
            f"{note['source']}), crawl-delay {'none' if delay is None else f'{delay:g} s'}"
        )
    for hop in out.get("redirects", []):
        print(f"redirect {hop['status']}: {hop['from']} -> {hop['to']}")
    if out.get("stopped"):
        print(f"stopped: {out['stopped']}")
    for note in out.get("notes", []):
        print(f"note: {note}")
    document = out.get("document")
    if document is not None:
        print()
        _print_document(out, document)
    headers = out.get("headers")
    if headers:
        print("\nheaders:")
        for name, value in headers:
            print(f"  {name}: {value}")
    if "links" in out:
        _print_links(out["links"], links)
    if document is not None and "hook_links" in document:
        _print_hook_links(document["hook_links"], links)
    for trace in out.get("tracebacks", []):
        print("\ntraceback:\n" + trace.rstrip())


def _request_line(sent: dict[str, Any]) -> str:
    head = f"{sent['kind']:<10} {sent['url']}"
    if "refusal" in sent:
        return f"{head}  refused by the SSRF guard: {sent['refusal']}"
    answer = sent["status"] if sent["status"] is not None else f"no answer ({sent.get('error')})"
    return (
        f"{head}  -> {answer}  [{', '.join(sent['keys'])}; cost {sent['cost']:g}, "
        f"waited {sent['waited_s']:.2f} s; {sent['elapsed_ms']:g} ms"
        + (f" from {sent['address']}" if sent.get("address") else "")
        + "]"
    )


def _print_document(out: dict[str, Any], document: dict[str, Any]) -> None:
    rows: list[tuple[str, Any]] = [("url", document.get("url"))]
    if "status" in document:
        rows.append(("status", document.get("status")))
    rows.append(("type", document.get("content_type") or "-"))
    rows.append(("bytes", document.get("bytes")))
    for name in ("error", "location", "not_parsed", "parse_error"):
        value = out.get(name) if name == "not_parsed" else document.get(name)
        if value:
            rows.append((name.replace("_", " "), value))
    if "title" in document:
        rows.append(("title", document["title"]))
        rows.append(("encoding", document.get("encoding")))
        language = document.get("language")
        score = document.get("language_score")
        rows.append(("language", "-" if language is None else f"{language} ({score:.2f})"))
    for name in ("canonical", "duplicate_of", "robots", "redacted", "format", "parse_truncated"):
        if document.get(name):
            rows.append((name.replace("_", " "), document[name]))
    if "text" in document:
        text = " ".join(str(document["text"]).split())
        more = f" ... ({len(text)} characters)" if len(text) > TEXT_CHARS else ""
        rows.append(("text", text[:TEXT_CHARS] + more))
        rows.append(("markdown", f"{len(document.get('markdown') or '')} characters"))
    if "images" in document:
        rows.append(("images", len(document["images"])))
    if "hook" in document:
        rows.append(("hook", json.dumps(document["hook"], ensure_ascii=False)))
    if "hook_error" in document:
        rows.append(("hook error", document["hook_error"]))
    if "render" in document:
        render = document["render"]
        rows.append(("render", f"{render.get('decision')}, rendered {render.get('rendered')}"))
    for name, value in rows:
        if isinstance(value, list):
            value = ", ".join(map(str, value))
        elif isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        print(f"{name + ':':<10} {value}")


def _print_links(links: dict[str, Any], shown: int) -> None:
    frontier, horizon, media = links["frontier"], links["horizon"], links["media"]
    kept_out = links["kept_out"]
    total = len(frontier) + len(horizon) + len(media) + sum(kept_out.values())
    parts = [f"frontier {len(frontier)}", f"horizon {len(horizon)}"]
    if media:
        parts.append(f"media {len(media)}")
    if kept_out:
        parts.append("kept out: " + ", ".join(f"{k} {v}" for k, v in sorted(kept_out.items())))
    print(f"\nlinks: {total} ({'; '.join(parts)})")
    for kind, urls in (("frontier", frontier), ("horizon", horizon), ("media", media)):
        for url in urls[:shown]:
            print(f"  {kind:<8} {url}")
        if len(urls) > shown:
            print(f"  {kind:<8} ... and {len(urls) - shown} more (--links N, or --json)")
    for site in links.get("joined", []):
        print(f"  {site} joins the seed ([scope] subdomains)")


def _print_hook_links(done: dict[str, Any], shown: int) -> None:
    """What the parse hook did to the page's links (``content.hook_links``)."""
    added, dropped, not_urls = done["added"], done["dropped"], done.get("not_urls", [])
    parts = [f"added {len(added)}", f"dropped {len(dropped)}"]
    if not_urls:
        parts.append(f"not URLs {len(not_urls)}")
    priority = done["priority"]
    print(
        f"\nhook links: {', '.join(parts)}; priority {priority}"
        + (f" (new URLs due {priority} days early)" if priority else "")
    )
    for kind, urls in (("added", added), ("dropped", dropped), ("not a URL", not_urls)):
        for url in urls[:shown]:
            print(f"  {kind:<9} {url}")
        if len(urls) > shown:
            print(f"  {kind:<9} ... and {len(urls) - shown} more (--links N, or --json)")
