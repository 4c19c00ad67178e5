"""Samples of every key variety ``courtier.sinks.redact`` knows (all made up): one table for
the unit tests and the end-to-end test that greps a crawl's whole output."""

# ruff: noqa: E501  (the table of samples reads best one sample a line)

from __future__ import annotations

HEX = "0123456789abcdef"
B62 = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz"


def rep(alphabet: str, n: int) -> str:
    return (alphabet * (n // len(alphabet) + 1))[:n]


# (kind, text holding one key, the key itself: what must disappear)
KEYS: list[tuple[str, str, str]] = [
    ("google-api-key", 'maps.js?key={}&cb=x', "AIza" + rep(B62, 35)),
    ("google-oauth-secret", '"client_secret": "{}"', "GOCSPX-" + rep(B62, 28)),
    ("google-oauth-token", "Authorization: Bearer {}", "ya29." + rep(B62, 40)),
    ("aws-access-key-id", "aws_access_key_id = {}", "AKIA" + rep("QWERTYUIOPASDFGH2345", 16)),
    ("aws-secret-key", 'aws_secret_access_key = "{}"', rep("wJalrXUtnFEMI/K7MDENG/bPxRfiCY", 40)),
    ("stripe-secret-key", "Stripe('{}')", "sk_live_" + rep(B62, 24)),
    # gitleaks' range: 10 to 99 characters after the prefix, live, test or prod
    ("stripe-secret-key", "STRIPE_KEY={}", "rk_prod_" + rep(B62, 10)),
    ("stripe-secret-key", "STRIPE_KEY={}", "sk_test_" + rep(B62, 99)),
    ("aws-access-key-id", "key {}", "A3T" + "X" + rep("QWERTYUIOPASDFGH2345", 16)),
    ("stripe-publishable-key", "Stripe('{}')", "pk_test_" + rep(B62, 24)),
    ("stripe-webhook-secret", "secret={}", "whsec_" + rep(B62, 32)),
    ("mapbox-token", "mapboxgl.accessToken = '{}';", "pk.eyJ1Ijoib" + rep(B62, 20) + "." + rep(B62, 22)),
    ("github-token", "token {}", "ghp_" + rep(B62, 36)),
    ("github-token", "token {}", "github_pat_" + rep(B62 + "_", 82)),
    ("gitlab-token", "PRIVATE-TOKEN: {}", "glpat-" + rep(B62, 20)),
    ("slack-webhook", "post to {}", "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/" + rep(B62, 24)),
    ("slack-token", "SLACK={}", "xoxb-1234567890-" + rep(B62, 24)),
    ("twilio-api-key", "sid={}", "SK" + rep(HEX, 32)),
    ("twilio-api-key", "sid={}", "SK" + rep(HEX.upper(), 32)),
    ("twilio-account-sid", "account {}", "AC" + rep(HEX, 32)),
    ("sendgrid-api-key", "key: {}", "SG." + rep(B62, 22) + "." + rep(B62, 43)),
    ("mailgun-api-key", "api:{}", "key-" + rep(HEX, 32)),
    ("mailchimp-api-key", "apikey {}", rep(HEX, 32) + "-us14"),
    ("algolia-api-key", 'algoliaApiKey: "{}"', rep(HEX, 32)),
    ("algolia-api-key", "algoliasearch('ABCDEF1234', '{}')", rep(HEX, 32)),
    ("here-api-key", "https://geocode.search.hereapi.com/v1/geocode?apiKey={}", rep(B62 + "_-", 43)),
    ("bing-maps-key", "credentials: '{}'", rep(B62 + "_-", 64)),
    ("bing-maps-key", "https://dev.virtualearth.net/REST/v1/Locations?q=x&key={}", rep(B62, 64)),
    ("sentry-dsn", "dsn: 'https://{}@o1.ingest.sentry.io/42'", rep(HEX, 32)),
    ("recaptcha-site-key", '<div class="g-recaptcha" data-sitekey="{}">', "6Lc" + rep(B62, 37)),
    ("anthropic-api-key", "ANTHROPIC_API_KEY={}", "sk-ant-api03-" + rep(B62 + "_-", 90)),
    ("openai-api-key", "OPENAI_API_KEY={}", "sk-" + rep(B62, 20) + "T3BlbkFJ" + rep(B62, 20)),
    ("openai-api-key", "OPENAI_API_KEY={}", "sk-proj-" + rep(B62, 48)),
    ("shopify-token", "X-Shopify-Access-Token: {}", "shpat_" + rep(HEX, 32)),
    ("square-token", "Square token {}", "sq0atp-" + rep(B62, 22)),
    ("facebook-access-token", "access_token={}", "EAAB" + rep(B62, 120)),
    ("twitter-bearer-token", "Bearer {}", "A" * 21 + rep(B62 + "%", 60)),
    ("npm-token", "//registry.npmjs.org/:_authToken={}", "npm_" + rep(B62, 36)),
    ("pypi-token", "password = {}", "pypi-AgEIcHlwaS5vcmc" + rep(B62, 60)),
    ("discord-webhook", "{}", "https://discord.com/api/webhooks/123456789012345678/" + rep(B62 + "_-", 68)),
    ("telegram-bot-token", "bot{}/sendMessage", "123456789:AA" + rep(B62 + "_-", 33)),
    ("digitalocean-token", "DO_TOKEN={}", "dop_v1_" + rep(HEX, 64)),
    ("huggingface-token", "HF_TOKEN={}", "hf_" + rep(B62, 34)),
    ("huggingface-token", "HF_TOKEN={}", "api_org_" + rep(B62, 34)),
    ("atlassian-api-token", "JIRA_TOKEN={}", "ATATT3" + rep(B62 + "_-=", 186)),
    ("databricks-token", "DATABRICKS_TOKEN={}", "dapi" + rep("0123456789abcdefgh", 32)),
    ("doppler-token", "DOPPLER_TOKEN={}", "dp.pt." + rep(B62, 43)),
    ("grafana-token", "GRAFANA_TOKEN={}", "glc_" + rep(B62 + "+/", 40) + "=="),
    ("grafana-token", "GRAFANA_TOKEN={}", "glsa_" + rep(B62, 32) + "_" + rep(HEX, 8)),
    ("vault-token", "VAULT_TOKEN={}", "hvs." + rep(B62 + "_-", 95)),
    ("pulumi-token", "PULUMI_ACCESS_TOKEN={}", "pul-" + rep(HEX, 40)),
    ("contentful-token", "CONTENTFUL_TOKEN={}", "CFPAT-" + rep(B62 + "_-", 43)),
    ("rubygems-token", "GEM_HOST_API_KEY={}", "rubygems_" + rep(HEX, 48)),
    ("planetscale-token", "PLANETSCALE_TOKEN={}", "pscale_tkn_" + rep(B62, 43)),
    ("sentry-token", "SENTRY_AUTH_TOKEN={}", "sntryu_" + rep(HEX, 64)),
    ("age-secret-key", "{}", "AGE-SECRET-KEY-1" + rep("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    ("azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={};", rep(B62 + "+/", 86) + "=="),
    ("heroku-api-key", "HEROKU_API_KEY={}", "01234567-89ab-cdef-0123-456789abcdef"),
    ("newrelic-key", "NEW_RELIC_KEY={}", "NRAK-" + rep("ABCDEFGHJKLMNPQRSTUVWXYZ234", 27)),
    ("dropbox-token", "Bearer {}", "sl." + rep(B62 + "_-", 140)),
    ("postman-api-key", "x-api-key: {}", "PMAK-" + rep(HEX, 24) + "-" + rep(HEX, 34)),
    ("linear-api-key", "Authorization: {}", "lin_api_" + rep(B62, 40)),
    ("jwt", "token={}", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36"),
    ("generic-secret", 'client_secret: "{}"', "9f8e7d6c5b4a3f2e1d0c9b8a"),
    ("private-key", "{}", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + rep(B62, 200) + "\n-----END RSA PRIVATE KEY-----"),
]  # fmt: skip
