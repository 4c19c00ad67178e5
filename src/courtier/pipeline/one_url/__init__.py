"""One URL by hand, as a crawl would take it: ``courtier fetch`` and ``courtier parse``.

``booking`` (the keys a crawl books and the clocks it books them on), ``fetching`` (robots.txt,
the guard, the booked fetch, redirects: a ``Trace``) and ``reading`` (the crawl's reader, its
document and what its discovery makes of the links). Nothing here is used by the engine; it
is made of the engine's own pieces, so a person sees what a crawl would do.
"""
