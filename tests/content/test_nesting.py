"""The nesting pre-scan against a tag-by-tag reading of its rules (``content.nesting``): the
vectorised scan must cut where a plain loop over the ``<`` of the page, one at a time, cuts,
whatever the blocks it is scanned in."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtier.content import nesting
from courtier.content.nesting import MAX_DEPTH, nesting_cut

_NAME_END = {0x20 | b for b in b" \t\n\r\f/>"}


def _lower(b: int) -> int:
    return b | 0x20


def _name(body: bytes, at: int) -> tuple[bytes, bool]:
    """The name after ``<`` or ``</`` at ``at`` as the scan reads it: its first eight bytes
    lower-cased, letters and digits; and whether it ends there (or fills all eight)."""
    window = bytes(_lower(b) for b in (body[at : at + 8] + b"\0" * 8)[:8])
    length = next(
        (i for i, b in enumerate(window) if not (0x61 <= b <= 0x7A or 0x30 <= b <= 0x39)), 8
    )
    if length == 8:
        return window, True
    return window[:length], window[length] in _NAME_END


_NEVER = {n.encode() for n in nesting._NEVER_NESTING}
_OPAQUE = {n.encode() for n in nesting._OPAQUE}


def _end_tag(body: bytes, at: int, name: bytes) -> int:
    """``</name``, ``</NAME`` or ``</Name`` after ``at`` (not ``</nAME``), -1 when none."""
    found = [
        i
        for i in range(at + 1, len(body) - len(name) - 1)
        if body[i : i + 2] == b"</"
        and body[i + 2 : i + 2 + len(name)] in (name, name.upper(), name.capitalize())
    ]
    return found[0] if found else -1


def reference_cut(body: bytes, max_depth: int, block: int) -> int | None:
    if len(body) <= 2 * max_depth or body.count(b"<") <= max_depth:
        return None
    depth, skip_until = 0, 0
    for start in range(0, len(body), block):
        stop = min(start + block, len(body))
        marks = [i for i in range(start, stop) if body[i] in b"<>"]
        lts = [i for i in marks if body[i] == 0x3C]
        if depth + len(lts) <= max_depth and stop == len(body):
            return None
        tags = []  # (position, name, closing, kind) of each "<" that opens a tag
        for k, at in enumerate(lts):
            mark = marks.index(at)
            previous = marks[mark - 1] if mark > 0 else None
            closing = body[at + 1 : at + 2] == b"/"
            first = (body[at + 1 + closing : at + 2 + closing] or b"\0")[0]
            inside = (
                previous is not None
                and body[previous] == 0x3C
                and k > 0
                and (
                    0x61
                    <= _lower(
                        (
                            body[
                                previous
                                + 1
                                + (body[previous + 1 : previous + 2] == b"/") : previous + 3
                            ]
                            or b"\0"
                        )[0]
                    )
                    <= 0x7A
                    or body[previous + 1 : previous + 2] in (b"/", b"!")
                )
            )
            comment = body[at + 1 : at + 4] == b"!--"
            if comment:
                tags.append((at, b"", False, "comment"))
            if inside or not 0x61 <= _lower(first) <= 0x7A:
                continue
            name, ended = _name(body, at + 1 + closing)
            kind = "counted"
            if ended and name in _NEVER:
                kind = "never"
            elif ended and name in _OPAQUE:
                kind = "opaque"
            tags.append((at, name, closing, kind))
        ranges = []
        if skip_until > (lts[0] if lts else stop):
            ranges.append((-1, skip_until))
        for n, (at, name, closing, kind) in enumerate(tags):
            if kind == "comment":
                end = body.find(b"-->", at + 2)
                ranges.append((at, len(body) if end < 0 else end))
            elif kind == "opaque" and not closing:
                closer = next(
                    (a for a, nm, c, kd in tags[n + 1 :] if kd == "opaque" and c and nm == name),
                    None,
                )
                if closer is None:
                    closer = _end_tag(body, at, name)
                ranges.append((at, len(body) if closer < 0 else closer))
        if ranges:
            skip_until = max(skip_until, max(end for _, end in ranges))
        for at, _, closing, kind in tags:
            if kind != "counted" or any(s < at < e for s, e in ranges):
                continue
            depth = max(0, depth - 1) if closing else depth + 1
            if depth > max_depth:
                return at
    return None


_FRAGMENTS = [
    b"<div>", b"</div>", b"<DIV class=x>", b"</DIV >", b"<p>", b"<b>", b"</b>", b"x", b" ",
    b"<span title='a<b'>", b"<a onclick=\"if (i<n) go()\">", b"< ", b"<", b">", b"</", b"<!",
    b"<br>", b"<br-x>", b"<img/>", b"<table>", b"<frameset>", b"<framesetx>", b"<noscript2>",
    b"<script>", b"</script>", b"</SCRIPT>", b"</Script>", b"</sCRIPT>", b"<style>",
    b"</style>", b"<svg>", b"<path/>", b"</svg>", b"<math>", b"</math>", b"<!--", b"-->",
    b"<!-->", b"<section>", b"</section>", b"<h1>", b"<custom-element>", b"<x1>", b"</x1>",
]  # fmt: skip


@settings(deadline=None, max_examples=150, derandomize=True)
@given(
    st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=60),
    st.integers(1, 4),
    st.sampled_from([7, 16, 64, 1 << 20]),
)
def test_the_scan_cuts_where_a_tag_by_tag_reading_cuts(
    fragments: list[bytes], max_depth: int, block: int
) -> None:
    body = b"".join(fragments)
    expected = reference_cut(body, max_depth, block)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nesting, "_BLOCK", block)
        assert nesting_cut(body, max_depth) == expected


@pytest.mark.parametrize(
    ("body", "cut"),
    [
        (b"<div><!-- <div><div> --><div><div>", 29),  # a comment hides its tags
        (b"<div><!--><div><div><div>", 15),  # "<!-->" is a whole comment
        (b"<div><script>if (a<b) {<div><div>}</SCRIPT><div><div>", 48),
        (b"<div><svg><g><g><g></svg><div><div>", 30),
        (b"<div><textarea><div><div></Textarea><div><div>", 41),
        (b"<div></div></div></div><div><div><div>", 33),  # closers of nothing are ignored
    ],
)
def test_comments_and_raw_text_hide_their_tags_until_they_end(body: bytes, cut: int | None):
    assert nesting_cut(body, 2) == cut


@pytest.mark.parametrize("opening", [b"<!--", b"<script>", b"<svg>"])
def test_a_comment_or_raw_text_across_the_scans_block_boundary_is_no_error(opening: bytes):
    """One ending in the next megabyte before that block's first tag hid nothing there; the
    scan raised (IndexError) and the page was left unparsed."""
    closing = {b"<!--": b"-->", b"<script>": b"</script>", b"<svg>": b"</svg>"}[opening]
    body = b"<div>" + opening + b"x" * (1 << 20) + closing + b" <b>x</b>" * 600
    assert nesting_cut(body) is None
    assert nesting_cut(body + b"<div>" * MAX_DEPTH) == len(body) + 5 * (MAX_DEPTH - 1)


def test_an_end_tag_before_its_element_in_the_same_block_does_not_end_it() -> None:
    """A stray ``</script>``, then a script whose end tag is in the next block: the script
    hides its content up to its own end tag (the scan took the stray one and hid nothing)."""
    body = b"<div></script><script><div></script><div><div><div>"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nesting, "_BLOCK", 17)  # the script opens at 14, its end tag at 27
        assert nesting_cut(body, 1) == 36


def test_a_page_with_too_few_tags_is_never_cut() -> None:
    assert nesting_cut(b"<div>" * MAX_DEPTH + b"x" * 5000) is None
    assert nesting_cut(b"<div>" * 3, 2) == 10
    assert nesting_cut(b"<div><div>x", 2) is None


_CORPUS = [
    # end tags of raw text found in a later block: lower, upper or capitalised, not mixed
    b"<div><script>if (a<b) {x}</script><div><div><div>",
    b"<div><script>if (a<b) {x}</SCRIPT><div><div><div>",
    b"<div><script>if (a<b) {x}</Script><div><div><div>",
    b"<div><script>if (a<b) {x}</sCRIPT><div><div><div></script><div><div>",
    b"<div><style>x</STYLE>y</style><div><div><div>",
    b"<div><script>xx</SCRIPT>yy</script><div><div><div>",
    b"<div><style>xx</Styles><div><div><div>",
    # several candidates for the end tag, with tags between them that it hides or not
    b"<div><script>xx</script><i><i><i>yy</SCRIPT><div><div><div>",
    b"<div><script>xx</sCRIPT><i><i><i></script><div><div><div>",
    b"<i></SCRIPT><script><i><i><i></script><i><i><i>",
    b"<div><script>xx</SCRIPT><i><i><i>yy</Script><i><i>zz</script><div>",
    b"<div><script>a</script><i><i><i>b</script><div><div><div>",
    b"<div><script>xx</Style>yy</script><i><i><i>zz</SCRIPT><div>",
    b"<div><script>xx</Style>yy</SCRIPT><i><i><i>zz</script><div>",
    b"<div><script>xx</Style>yy</SCRIPT><i><i><i>zz</Script>ww</script><div>",
    b"<div><script>xx</S</SCRIPT><i><i><i>yy</script><div>",
    b"<div><!x-<i><i><i>--><div><div>",
    b"<div><style>x</style>y</STYLE><div><div><div>",
    b"<div><title><b></titles><div><div><div>",
    b"<div><textarea><i></textarea  ><div><div><div>",
    # several raw-text elements and comments in one block, nested and overlapping
    b"<div><svg><math></svg><div></math><div><div><div>",
    b"<div><math><svg></math><div></svg><div><div><div>",
    b"<div></script><script><div></script><div><div><div>",
    b"<div><!-- <script> --><div></script><div><div><div>",
    b"<div><!--x--><!-- y --><div><!-- z<div>--><div><div>",
    b"<div><!-x><div><!- -><div><div>",
    b"<div><!--><div><!---><div><div><div>",
    # a "<" inside a tag, after a "</" or a "<!", and names of digits and z
    b"<a href='x<y'><b title=\"<c\"><i><u><s>",
    b"</x<div><div><div><div>",
    b"<!x<div><div><div><div>",
    b"<z><z9><h0><x00><h1><h9><h10><az09>",
    b"<div0><br0><br9><brz><br ><br/><br>",
    b"<framesetx><frameset><framesets><noscripts><noscript>",
    b"<div>\x00<div>\x11<div>\x19<div>",
    b"<DIV><dIv><Div/><div\t><div\n><div\r><div\x0c>",
    b"<{b><[b><@b><`b><div><div><div>",
    b"<p>< <div><div><div>",
    b"</p>< <div><div><div>",
    b"<div><div><br",
]


@pytest.mark.parametrize("body", _CORPUS)
def test_the_scan_cuts_where_a_tag_by_tag_reading_cuts_in_blocks_of_any_size(body: bytes):
    for max_depth in (1, 2, 3):
        for block in (3, 5, 7, 9, 12, 17, 1 << 20):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(nesting, "_BLOCK", block)
                cut = nesting_cut(body, max_depth)
            assert cut == reference_cut(body, max_depth, block), (max_depth, block)
