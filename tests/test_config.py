from pathlib import Path

import pytest

from courtier.config import ConfigError, load
from courtier.politeness.keys import KeyType


def test_defaults_need_no_file():
    config = load()
    assert config.site_interval == 1.0
    assert config.limits.origin.rate == 2.0
    assert "courtier/" in config.fetch.user_agent
    assert config.fetch.contact_url in config.fetch.user_agent


def test_file_then_overrides_take_precedence(tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text('[politeness]\nmax_lead = 2\n[fetch]\nuser_agent_token = "acme"\n')
    config = load(path, ["politeness.max_lead=3.5"])
    assert config.politeness.max_lead == 3.5
    assert config.fetch.user_agent_token == "acme"


@pytest.mark.parametrize(
    "override",
    [
        "politeness.nope=1",
        "nosection.key=1",
        "politeness.max_lead=fast",
        "justakey",
        "limits.origin.rate=0",
        "limits.nosuchkey.rate=1",
        "limits.origin=3",
    ],
)
def test_bad_overrides_are_clear_errors(override: str):
    with pytest.raises(ConfigError):
        load(None, [override])


def test_unknown_key_in_file_is_an_error(tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text("[crawl]\nmax_in_fligth = 3\n")
    with pytest.raises(ConfigError, match="max_in_fligth"):
        load(path)


def test_list_settings_read_from_file_and_overrides(tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text('[fetch]\nallowed_types = ["text/html"]\n')
    assert load(path).fetch.allowed_types == ("text/html",)
    config = load(None, ['fetch.allowed_types=["image/", "text/"]'])
    assert config.fetch.allowed_types == ("image/", "text/")
    with pytest.raises(ConfigError):
        load(None, ["fetch.allowed_types=3"])


def test_limits_per_key_type_from_file_and_overrides(tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text("[limits.origin]\nrate = 4\nburst = 0.5\n\n[limits.bucket]\nrate = 100\n")
    config = load(path, ["limits.site.rate=0.5", "limits.cdn-miss.slot_width=0.1"])
    assert config.limits.origin.rate == 4.0 and config.limits.origin.burst == 0.5
    assert config.limits.bucket.rate == 100.0
    assert config.site_interval == 2.0
    assert config.limits.cdn_miss.slot_width == 0.1
    policy = config.limits.policy()
    assert policy.types[KeyType.ORIGIN].rate == 4.0
    assert policy.types[KeyType.CDN_MISS].slot_width == 0.1


def test_the_readme_configuration_example_loads(tmp_path: Path):
    import re

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(.*?)```", readme, re.S)
    assert block is not None
    path = tmp_path / "readme.toml"
    path.write_text(block.group(1))
    assert load(path) == load()  # the README shows the defaults


def test_costs_and_url_rules_from_the_file(tmp_path: Path):
    from courtier.politeness.keys import RequestClass

    path = tmp_path / "c.toml"
    path.write_text('[costs]\nindex = 6\nrules = ["^/api/ => index", "\\\\.pdf$ => image"]\n')
    model = load(path).costs.model()
    assert model.cost_of_target("/api/items") == 6.0
    assert model.classify_target("/docs/a.pdf") is RequestClass.IMAGE
    assert model.cost_of_target("/search?q=x") == 6.0  # built-in rules still apply after
    for bad in ('rules = ["^/x/"]', 'rules = ["^/x/ => expensive"]', 'rules = ["( => index"]'):
        path.write_text(f"[costs]\n{bad}\n")
        with pytest.raises(ConfigError):
            load(path)
