from pathlib import Path

import pytest

from courtier.config import ConfigError, load


def test_defaults_need_no_file():
    config = load()
    assert config.politeness.site_interval == 1.0
    assert "courtier/" in config.fetch.user_agent
    assert config.fetch.contact_url in config.fetch.user_agent


def test_file_then_overrides_take_precedence(tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text('[politeness]\nsite_interval = 2\n[fetch]\nuser_agent_token = "acme"\n')
    config = load(path, ["politeness.site_interval=3.5"])
    assert config.politeness.site_interval == 3.5
    assert config.fetch.user_agent_token == "acme"


@pytest.mark.parametrize(
    "override",
    ["politeness.nope=1", "nosection.key=1", "politeness.site_interval=fast", "justakey"],
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
