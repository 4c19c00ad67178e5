"""Headless Chromium that never touches the network: every request a page makes is handed
to the crawler (``intercept``), which answers it or aborts it."""
