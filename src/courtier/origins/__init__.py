"""Which sites share servers: origin inference from DNS, response headers and TLS.

See docs/origins.md. The pieces: ``evidence`` (what a decision rests on), ``cdn`` (CDN edges),
``dns_evidence`` (CNAME chains, addresses, PTR names), ``header_evidence`` (response header
fingerprints), ``tls_evidence`` (certificates, corroboration only), ``cluster`` (the pure
clusterer), ``probe`` (the HTTP header probe), ``infer`` (the async orchestration) and
``store`` (the SQLite tables in the crawl's store).
"""

from courtier.origins.cdn import CdnRules
from courtier.origins.cluster import Assignment, OriginChange, SiteFacts, cluster, origin_changes
from courtier.origins.dns_evidence import DnsEvidenceSource, DnsFacts
from courtier.origins.evidence import Evidence, Kind
from courtier.origins.header_evidence import HeaderFingerprint, ProbeResponse, header_fingerprint
from courtier.origins.infer import InferenceResult, OriginInference
from courtier.origins.probe import HttpHeaderProbe, Probe
from courtier.origins.store import OriginStore, OriginStoreError, StoredOrigin
from courtier.origins.tls_evidence import TlsFacts, tls_facts, tls_relation

__all__ = [
    "Assignment",
    "CdnRules",
    "DnsEvidenceSource",
    "DnsFacts",
    "Evidence",
    "HeaderFingerprint",
    "HttpHeaderProbe",
    "InferenceResult",
    "Kind",
    "OriginChange",
    "OriginInference",
    "OriginStore",
    "OriginStoreError",
    "Probe",
    "ProbeResponse",
    "SiteFacts",
    "StoredOrigin",
    "TlsFacts",
    "cluster",
    "header_fingerprint",
    "origin_changes",
    "tls_facts",
    "tls_relation",
]
