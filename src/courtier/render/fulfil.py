"""The DevTools message that fulfils a paused request with the crawler's answer.

Rules:
- The body given is the decoded entity, so the headers that describe the wire (transfer and
  content encodings, the length, the connection) are dropped.
- Chromium refuses a whole response for one header it cannot take: a site's malformed
  header (a name that is no token, a value with CR, LF or NUL) is dropped instead, as a
  browser on the network would ignore it.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from courtier.render.intercept import Fulfil

_DROPPED_HEADERS = frozenset(
    {"content-encoding", "transfer-encoding", "content-length", "connection", "keep-alive"}
)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_UNSAFE_VALUE = re.compile(r"[\r\n\0]")


def fulfilment(request_id: str, answer: Fulfil) -> dict[str, Any]:
    headers = [
        {"name": name, "value": value}
        for name, value in answer.headers
        if name.lower() not in _DROPPED_HEADERS
        and _TOKEN.fullmatch(name)
        and not _UNSAFE_VALUE.search(value)
    ]
    return {
        "requestId": request_id,
        "responseCode": answer.status,
        "responseHeaders": headers,
        "body": base64.b64encode(answer.body).decode("ascii"),
    }
