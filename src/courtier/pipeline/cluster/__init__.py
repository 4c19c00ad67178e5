"""A worker of a scale-out crawl: its shard leases and the sites that come with them."""
