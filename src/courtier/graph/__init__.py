"""The link graph of the crawl, aggregated to hosts: PageRank and the promotion of horizon hosts."""
