"""Which pages look like application shells (``content.shell``), read through parse_page."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from courtier.content.parse import parse_page
from courtier.content.shell import MAX_LINKS, MAX_TEXT

BASE = "http://spa.test/"


def shell_of(html: str) -> str | None:
    return parse_page(html.encode(), BASE).shell


def test_a_react_shell_is_a_shell_with_its_reasons() -> None:
    html = (
        "<!doctype html><html><head><title>Loading…</title>"
        '<script src="/static/app.js" defer></script></head>'
        '<body><div id="root"></div>'
        "<noscript>You need to enable JavaScript to run this app.</noscript></body></html>"
    )
    reason = shell_of(html)
    assert reason is not None
    assert "app root #root" in reason
    assert "noscript asks for JavaScript" in reason
    assert "1 external script" in reason


def test_an_inline_data_loader_counts_as_a_sign() -> None:
    html = "<html><body><main></main><script>fetch('/api/x').then(r => r.json())</script></body>"
    reason = shell_of(html)
    assert reason is not None and "1 inline data script" in reason


def test_script_text_is_not_visible_text() -> None:
    code = "var a = 1;" * 200  # far more than MAX_TEXT characters, all of it script
    html = f'<html><body><div id="app"></div><script>{code}</script></body></html>'
    assert shell_of(html) is not None


def test_a_page_with_content_is_not_a_shell_even_with_an_app_root() -> None:
    text = "word " * (MAX_TEXT // 4)
    html = f'<html><body><div id="app"><p>{text}</p></div><script src="/a.js"></script></body>'
    assert shell_of(html) is None


def test_a_page_with_many_links_is_not_a_shell() -> None:
    links = "".join(f'<a href="/p/{i}">{i}</a>' for i in range(MAX_LINKS))
    html = f'<html><body><div id="app">{links}</div><script src="/a.js"></script></body>'
    assert shell_of(html) is None


def test_an_empty_page_without_any_sign_of_an_application_is_not_a_shell() -> None:
    assert shell_of("<html><body><p>Gone.</p></body></html>") is None
    assert shell_of("") is None


def test_the_verdict_survives_the_trip_from_the_worker() -> None:
    page = parse_page(b'<div id="app"></div><script src="/a.js"></script>', BASE)
    assert page.shell is not None
    assert pickle.loads(pickle.dumps(page)).shell == page.shell


@given(st.text(max_size=400))
def test_any_text_gets_a_verdict_or_none_never_an_error(text: str) -> None:
    html = f'<html><body><div id="app">{text}</div><noscript>{text}</noscript></body></html>'
    reason = shell_of(html)
    assert reason is None or isinstance(reason, str)
