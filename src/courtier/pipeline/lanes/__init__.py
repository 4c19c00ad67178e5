"""The lanes: seed sites (pages), media hosts, what both share (services), the seed itself
(seeding), origins learned live, and feeding lanes from the store."""
