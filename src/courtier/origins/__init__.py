"""Which sites share servers: origin inference from DNS, response headers and TLS.

See docs/origins.md. The pieces: ``evidence`` (what a decision rests on), ``cdn`` (CDN edges),
``dns_evidence`` (CNAME chains, addresses, PTR names), ``header_evidence`` (response header
fingerprints), ``tls_evidence`` (certificates, corroboration only), ``cluster`` (the pure
clusterer), ``probe`` (the HTTP header probe), ``infer`` (the async orchestration),
``store`` (the SQLite tables in the crawl's store) and ``media`` (cache verdicts of media
sources).
"""

# No re-exports: importing one light module (``cdn``, ``media``) must not pull in the
# fetcher and the configuration (``probe`` imports ``courtier.net.fetch``, which imports
# ``courtier.config``, which needs ``courtier.politeness.keys``, which uses ``cdn``).
