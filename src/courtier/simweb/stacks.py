"""What the servers behind the CDN edge say: generic server stacks, platform C, the edge itself.

Rules:
- An edge site runs one of `world.STACKS`. Its answers carry that stack's ordinary headers
  (`stack_headers`: what every install of it sends, so unrelated sites share them): the web
  server's on every answer, the application's on its HTML pages (and on its not-found page
  when the application makes it, `APP_NOT_FOUND`); images and robots.txt are the web
  server's. Its not-found page is the stack's stock page (`stack_not_found`): the same body
  for every site of the stack, never naming the host (Express's names the path, as the real
  one does).
- Platform C's tenants carry the platform's own headers (`X-Shopwise-Tenant`,
  `X-Shopwise-Stack`, `Powered-By: Shopwise`, cookie `_shopwise_s`) and one not-found page.
- The edge adds its own headers to every answer (`edge_headers`): `Via: 1.1 quickserve`,
  `X-Served-By: cache-sim<N>-QS` (N: which edge address), `X-Cache` (`MISS`; an image
  fetched before: `HIT` and `Age`) and `QS-Ray: <16 hex>-SIM`, different on every answer.
  A Host the edge does not serve gets the edge's own error page (`edge_error`).
- Values that vary per answer are a pure function of a response counter, so runs replay.
- Generated worlds (`fuzz`) combine a web server and an application, `<server>+<app>`
  (`FUZZ_SERVERS`, `FUZZ_APPS`): the server's headers on every answer, the application's on
  its pages; the not-found page is the application's own (`APP_MADE_404`) or the server's
  stock page. `Server: nginx` alone is `nginx+static`.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Mapping

_MASK64 = (1 << 64) - 1
_PHP_NO_CACHE = (
    ("Expires", "Thu, 19 Nov 1981 08:52:00 GMT"),
    ("Cache-Control", "no-store, no-cache, must-revalidate"),
    ("Pragma", "no-cache"),
)

NGINX_404 = (
    b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
    b"<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
APACHE_404 = (
    b'<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n'
    b"<title>404 Not Found</title>\n</head><body>\n<h1>Not Found</h1>\n"
    b"<p>The requested URL was not found on this server.</p>\n</body></html>\n"
)
IIS_404 = (
    b'<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
    b'"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\r\n'
    b'<html xmlns="http://www.w3.org/1999/xhtml">\r\n<head>\r\n'
    b'<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"/>\r\n'
    b"<title>404 - File or directory not found.</title>\r\n</head>\r\n<body>\r\n"
    b'<div id="header"><h1>Server Error</h1></div>\r\n<div id="content">\r\n'
    b' <div class="content-container"><fieldset>\r\n'
    b"  <h2>404 - File or directory not found.</h2>\r\n"
    b"  <h3>The resource you are looking for might have been removed, had its name changed, "
    b"or is temporarily unavailable.</h3>\r\n </fieldset></div>\r\n</div>\r\n</body>\r\n"
    b"</html>\r\n"
)
RAILS_404 = (
    b"<!DOCTYPE html>\n<html>\n<head>\n  <title>The page you were looking for doesn't exist "
    b'(404)</title>\n  <meta name="viewport" content="width=device-width,initial-scale=1">\n'
    b'</head>\n\n<body class="rails-default-error-page">\n  <div class="dialog">\n    <div>\n'
    b"      <h1>The page you were looking for doesn't exist.</h1>\n"
    b"      <p>You may have mistyped the address or the page may have moved.</p>\n    </div>\n"
    b"    <p>If you are the application owner check the logs for more information.</p>\n"
    b"  </div>\n</body>\n</html>\n"
)
DJANGO_404 = (
    b'\n<!doctype html>\n<html lang="en">\n<head>\n  <title>Not Found</title>\n</head>\n'
    b"<body>\n  <h1>Not Found</h1><p>The requested resource was not found on this server.</p>\n"
    b"</body>\n</html>\n"
)
WORDPRESS_404 = (
    b'<!DOCTYPE html>\n<html lang="en-US">\n<head>\n<meta charset="UTF-8">\n'
    b"<title>Page not found</title>\n<meta name='robots' content='noindex, follow' />\n"
    b'</head>\n<body class="error404 hfeed">\n<main id="main" class="site-main">\n'
    b'<section class="error-404 not-found">\n<header class="page-header">\n'
    b'<h1 class="page-title">Oops! That page can&rsquo;t be found.</h1>\n</header>\n'
    b'<div class="page-content">\n<p>It looks like nothing was found at this location. '
    b"Maybe try a search?</p>\n</div>\n</section>\n</main>\n</body>\n</html>\n"
)
PLATFORM_C_404 = (
    b"<!doctype html><html><head><title>Page not found</title></head><body>"
    b'<div class="sw-404"><h1>404</h1><p>We could not find this page in the shop.</p>'
    b'<p><a href="/">Continue shopping</a></p></div>'
    b"<footer>Shop powered by Shopwise</footer></body></html>"
)
NGINX_BARE_404 = NGINX_404.replace(b"nginx/1.24.0", b"nginx")  # server_tokens off
OPENRESTY_404 = NGINX_404.replace(b"nginx/1.24.0", b"openresty")
LITESPEED_404 = (
    b'<!DOCTYPE html>\n<html style="height:100%">\n<head>\n<meta name="viewport" '
    b'content="width=device-width, initial-scale=1, shrink-to-fit=no" />\n'
    b"<title> 404 Not Found\r\n</title></head>\n<body>\n"
    b'<div style="height:auto; min-height:100%; ">'
    b'<div style="text-align: center; width:800px; margin-left: -400px; position:absolute; '
    b'top: 30%; left:50%;">\n<h1 style="margin:0; font-size:150px; line-height:150px; '
    b'font-weight:bold;">404</h1>\n<h2 style="margin-top:20px;font-size: 30px;">Not Found\r\n'
    b"</h2>\n<p>The resource requested could not be found on this server!</p>\n</div></div>"
    b"</body></html>\n"
)
LARAVEL_404 = (
    b'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    b'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    b'<title>Not Found</title>\n</head>\n<body class="antialiased">\n'
    b'<div class="flex items-center pt-8 sm:justify-start sm:pt-0">\n'
    b'<div class="px-4 text-lg text-gray-500 border-r border-gray-400 tracking-wider">404</div>\n'
    b'<div class="ml-4 text-lg text-gray-500 uppercase tracking-wider">Not Found</div>\n'
    b"</div>\n</body>\n</html>\n"
)
EDGE_ERROR = (
    b"<!doctype html><html><head><title>421 Misdirected Request</title></head><body>"
    b"<h1>Unknown site</h1><p>This quickserve edge does not serve the host you asked for. "
    b"If you own the site, check its DNS and its quickserve configuration.</p>"
    b"<p>quickserve</p></body></html>"
)
EDGE_ERROR_STATUS = 421

HTML = "text/html; charset=utf-8"


def _token(host: str, salt: str, length: int, alphabet: str = "0123456789abcdef") -> str:
    """A per-host value of up to 32 characters (a session id that looks like one)."""
    digest = hashlib.blake2b(f"{salt}:{host}".encode(), digest_size=32).digest()
    return "".join(alphabet[byte % len(alphabet)] for byte in digest[:length])


_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


Headers = tuple[tuple[str, str], ...]


def stack_headers(stack: str, host: str) -> tuple[Headers, Headers]:
    """A server stack's ordinary headers: (the server's, on every answer; the application's,
    on the pages it makes: HTML pages, and the not-found page when the application makes it,
    `app_makes_not_found`). What every install of the stack sends, so unrelated sites share
    it."""
    if "+" in stack:
        server, _, app = stack.partition("+")
        if server not in _SERVERS:
            raise ValueError(f"unknown web server {server!r} in stack {stack!r}")
        return _SERVERS[server][0], _app_headers(app, host)
    if stack == "nginx-php":
        return (("Server", "nginx/1.24.0"),), (
            ("X-Powered-By", "PHP/8.2.12"),
            ("Set-Cookie", f"PHPSESSID={_token(host, 'php', 26, _ALNUM)}; path=/"),
            *_PHP_NO_CACHE,
        )
    if stack == "apache-php":
        return (("Server", "Apache/2.4.58 (Ubuntu)"),), (
            ("X-Powered-By", "PHP/8.1.2-1ubuntu2.14"),
            ("Set-Cookie", f"PHPSESSID={_token(host, 'php', 26, _ALNUM)}; path=/"),
            *_PHP_NO_CACHE,
            ("Vary", "Accept-Encoding"),
        )
    if stack == "iis-aspnet":
        return (("Server", "Microsoft-IIS/10.0"), ("X-Powered-By", "ASP.NET")), (
            ("X-AspNet-Version", "4.0.30319"),
            (
                "Set-Cookie",
                f"ASP.NET_SessionId={_token(host, 'asp', 24, _ALNUM)}; path=/; HttpOnly; "
                "SameSite=Lax",
            ),
            ("Cache-Control", "private"),
        )
    if stack == "express":
        return (("Server", "nginx/1.18.0 (Ubuntu)"), ("X-Powered-By", "Express")), (
            ("Set-Cookie", f"connect.sid=s%3A{_token(host, 'sid', 32, _ALNUM)}; Path=/; HttpOnly"),
            ("ETag", f'W/"{_token(host, "etag", 8)}"'),
        )
    if stack == "rails":
        return (("Server", "nginx/1.24.0 + Phusion Passenger(R) 6.0.18"),), _app_headers(
            "rails", host
        )
    if stack == "django":
        return (("Server", "gunicorn"),), _app_headers("django", host)
    if stack == "caddy":
        return (("Server", "Caddy"), ("Alt-Svc", 'h3=":443"; ma=2592000')), ()
    if stack == "wordpress":
        return (("Server", "Apache"),), (
            ("X-Powered-By", "PHP/7.4.33"),
            ("Link", f'<http://{host}/wp-json/>; rel="https://api.w.org/"'),
            ("X-Pingback", f"http://{host}/xmlrpc.php"),
        )
    raise ValueError(f"unknown server stack {stack!r}")


_SERVERS: Mapping[str, tuple[Headers, bytes]] = {
    "nginx": ((("Server", "nginx"),), NGINX_BARE_404),
    "nginx-1.24": ((("Server", "nginx/1.24.0"),), NGINX_404),
    "openresty": ((("Server", "openresty"),), OPENRESTY_404),
    "apache": ((("Server", "Apache"),), APACHE_404),
    "apache-ubuntu": ((("Server", "Apache/2.4.58 (Ubuntu)"),), APACHE_404),
    "apache-centos": ((("Server", "Apache/2.4.37 (centos) OpenSSL/1.1.1k"),), APACHE_404),
    # Plesk's panel adds its own X-Powered-By to every answer of every site on the machine.
    "apache-plesk": ((("Server", "Apache"), ("X-Powered-By", "PleskLin")), APACHE_404),
    "litespeed": ((("Server", "LiteSpeed"),), LITESPEED_404),
    "caddy": ((("Server", "Caddy"), ("Alt-Svc", 'h3=":443"; ma=2592000')), b""),
}
FUZZ_SERVERS = tuple(_SERVERS)
FUZZ_APPS = (
    "static",
    "php74",
    "php81",
    "php82",
    "wordpress",
    "laravel",
    "express",
    "django",
    "rails",
)
APP_MADE_404 = frozenset({"wordpress", "laravel", "express", "django", "rails"})
_PHP = {"php74": "7.4.33", "php81": "8.1.27", "php82": "8.2.12"}


def _app_headers(app: str, host: str) -> Headers:
    """What an application adds to the pages it makes, the same on every install."""
    if app == "static":
        return ()
    if app in _PHP:
        return (
            ("X-Powered-By", f"PHP/{_PHP[app]}"),
            ("Set-Cookie", f"PHPSESSID={_token(host, 'php', 26, _ALNUM)}; path=/"),
            *_PHP_NO_CACHE,
        )
    if app == "wordpress":
        return (
            ("X-Powered-By", f"PHP/{_PHP['php81']}"),
            ("Link", f'<http://{host}/wp-json/>; rel="https://api.w.org/"'),
            ("X-Pingback", f"http://{host}/xmlrpc.php"),
        )
    if app == "laravel":
        return (
            ("X-Powered-By", f"PHP/{_PHP['php82']}"),
            ("Cache-Control", "no-cache, private"),
            ("Set-Cookie", f"XSRF-TOKEN={_token(host, 'xsrf', 32, _ALNUM)}; path=/; samesite=lax"),
            (
                "Set-Cookie",
                f"laravel_session={_token(host, 'lara', 32, _ALNUM)}; path=/; httponly; "
                "samesite=lax",
            ),
        )
    if app == "express":
        return (
            ("X-Powered-By", "Express"),
            ("Set-Cookie", f"connect.sid=s%3A{_token(host, 'sid', 32, _ALNUM)}; Path=/; HttpOnly"),
            ("ETag", f'W/"{_token(host, "etag", 8)}"'),
        )
    if app == "rails":
        return (
            ("X-Frame-Options", "SAMEORIGIN"),
            ("X-XSS-Protection", "0"),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "strict-origin-when-cross-origin"),
            ("Cache-Control", "max-age=0, private, must-revalidate"),
            ("Set-Cookie", f"_session_id={_token(host, 'rails', 32)}; path=/; HttpOnly"),
        )
    if app == "django":
        return (
            ("X-Frame-Options", "DENY"),
            ("Vary", "Cookie"),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "same-origin"),
            ("Cross-Origin-Opener-Policy", "same-origin"),
            (
                "Set-Cookie",
                f"csrftoken={_token(host, 'csrf', 32, _ALNUM)}; Max-Age=31449600; Path=/; "
                "SameSite=Lax",
            ),
        )
    raise ValueError(f"unknown application {app!r}")


# The stacks whose not-found page the application makes (with its headers); the others' is
# the web server's own stock page.
APP_NOT_FOUND = frozenset({"iis-aspnet", "express", "rails", "django", "wordpress"})


def app_makes_not_found(stack: str) -> bool:
    """Does the stack's application make its not-found page (with its headers)?"""
    if "+" in stack:
        return stack.partition("+")[2] in APP_MADE_404
    return stack in APP_NOT_FOUND


def stack_response_headers(stack: str, counter: int) -> Headers:
    """Headers a stack's application varies per answer (Rails' request id and run time)."""
    if stack != "rails" and not stack.endswith("+rails"):
        return ()
    mixed = counter * 0x9E3779B97F4A7C15 & _MASK64
    rid = f"{mixed:016x}{mixed ^ 0x5DEECE66D:016x}"
    request_id = f"{rid[:8]}-{rid[8:12]}-4{rid[13:16]}-a{rid[17:20]}-{rid[20:32]}"
    return (("X-Request-Id", request_id), ("X-Runtime", f"0.{mixed % 90000 + 4000:06d}"))


_STOCK_404: Mapping[str, bytes] = {
    "nginx-php": NGINX_404,
    "apache-php": APACHE_404,
    "iis-aspnet": IIS_404,
    "rails": RAILS_404,
    "django": DJANGO_404,
    "caddy": b"",
    "wordpress": WORDPRESS_404,
}


def stack_not_found(stack: str, path: str) -> tuple[bytes, str, Headers]:
    """The stack's stock not-found page: (body, content type, extra headers)."""
    if "+" in stack:
        server, _, app = stack.partition("+")
        if app in ("express", "rails", "django", "wordpress"):
            return stack_not_found(app, path)
        if app == "laravel":
            return LARAVEL_404, HTML, ()
        body = _SERVERS[server][1]
        return body, HTML if body else "text/plain; charset=utf-8", ()
    if stack == "express":
        shown = path.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        body = (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>Error</title>\n</head>\n<body>\n<pre>Cannot GET {shown}</pre>\n</body>\n"
            "</html>\n"
        ).encode()
        headers = (
            ("Content-Security-Policy", "default-src 'none'"),
            ("X-Content-Type-Options", "nosniff"),
        )
        return body, HTML, headers
    if stack == "caddy":
        return b"", "text/plain; charset=utf-8", ()
    return _STOCK_404[stack], HTML, ()


def platform_c_headers(host: str) -> Headers:
    """Platform C's own headers, behind the edge's."""
    tenant = zlib.crc32(host.encode()) % 900_000 + 100_000
    return (
        ("Server", "nginx"),
        ("Powered-By", "Shopwise"),
        ("X-Shopwise-Tenant", str(tenant)),
        ("X-Shopwise-Stack", f"pod{tenant % 4 + 1}"),
        ("Set-Cookie", f"_shopwise_s={_token(host, 'sw', 20)}; Path=/; SameSite=Lax"),
    )


def edge_headers(edge_index: int, counter: int) -> Headers:
    """The headers the edge adds to every answer (X-Cache and Age are added apart)."""
    ray = counter * 0x9E3779B97F4A7C15 & _MASK64
    return (
        ("Via", "1.1 quickserve"),
        ("X-Served-By", f"cache-sim{edge_index + 1}-QS"),
        ("QS-Ray", f"{ray:016x}-SIM"),
    )
