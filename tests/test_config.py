from pathlib import Path

import pytest

from courtier.config import Config, ConfigError, load
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


# -- every setting typed and ranged; every layer checked ---------------------------------------


def test_every_setting_has_a_rule_besides_its_type():
    from courtier import _settings
    from courtier.config import RULES, Config

    missing = [
        ".".join(path)
        for path, _value, owner, annotation in _settings.leaves(Config())
        if annotation is not bool and path[-1] not in RULES.get(owner, {})
    ]
    assert not missing, f"add a line to courtier.config.RULES for: {', '.join(missing)}"


def test_every_default_is_within_its_rule():
    from courtier.config import Config, validate

    validate(Config())


def test_layers_in_order_file_environment_flags(tmp_path: Path):
    from courtier.config import resolve

    path = tmp_path / "c.toml"
    path.write_text("[crawl]\nmax_depth = 3\nparse_workers = 2\nqueue_per_site = 5\n")
    env = {"COURTIER_CRAWL__PARSE_WORKERS": "3", "COURTIER_CRAWL__QUEUE_PER_SITE": "6"}
    resolved = resolve(path, ["crawl.queue_per_site=7"], env=env)
    crawl = resolved.config.crawl
    assert (crawl.max_depth, crawl.parse_workers, crawl.queue_per_site) == (3, 3, 7)
    assert str(resolved.sources["crawl.max_depth"]) == f"file {path}:2:13"
    assert str(resolved.sources["crawl.parse_workers"]) == "env COURTIER_CRAWL__PARSE_WORKERS"
    assert str(resolved.sources["crawl.queue_per_site"]) == "-s crawl.queue_per_site=7"
    assert str(resolved.sources["crawl.max_in_flight"]) == "default"


def test_the_environment_is_read_by_default_and_typos_in_it_are_errors(monkeypatch):
    monkeypatch.setenv("COURTIER_LIMITS__CDN_MISS__RATE", "7")
    assert load().limits.cdn_miss.rate == 7.0
    monkeypatch.setenv("COURTIER_LIMITS__CDN_MIS__RATE", "7")
    with pytest.raises(ConfigError, match="COURTIER_LIMITS__CDN_MIS__RATE"):
        load()


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        ('[crawl]\nparse_workers = "3"\n', ":2:17:", "wrong type (a string)"),
        ("[crawl]\n\n  max_in_flight=-1\n", ":3:17:", "from 0 to"),
        ("[limits]\norigin = { burst = 1, rate = 0 }\n", ":2:30:", "limits.origin.rate"),
        ("limits.site.rate = -1\n", ":1:20:", "limits.site.rate"),
        ('[fetch]\nallowed_types = [\n  "text/",\n  3,\n]\n', ":2:17:", "wrong type (a list)"),
        ("[politeness]\n'max_lead' = nan\n", ":2:14:", "not finite"),
        ('[costs]\nrules = ["""^/a => index""", "x"]\n', ":2:9:", 'item 2 "x"'),
        ("[media]\nfetch = 1\n", ":2:9:", "wrong type (a whole number): must be true or false"),
        ("[crawl]\nmax_depth = 3.0\n", ":2:13:", "wrong type (a number)"),
        ("[limits.nosuch]\nrate = 1\n", ":1:1:", "unknown setting limits.nosuch"),
    ],
)
def test_a_bad_value_in_a_file_is_reported_at_its_own_line_and_column(
    tmp_path: Path, text: str, where: str, says: str
):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load(path, env={})
    message = str(raised.value)
    assert message.startswith(f"{path}{where}"), message
    assert says in message and "\n" not in message


def test_values_given_as_text_are_read_for_their_type():
    config = load(
        None,
        [
            'fetch.user_agent_token="acme-bot"',
            "frontier.sitemaps=False",
            "crawl.max_in_flight=1_000",
            "limits.site.rate=inf",
            "fetch.contact_url=https://example.org/bot?a=1#x",
        ],
        env={},
    )
    assert config.fetch.user_agent_token == "acme-bot"
    assert config.frontier.sitemaps is False
    assert config.crawl.max_in_flight == 1000
    assert config.limits.site.rate == float("inf")
    assert config.fetch.contact_url == "https://example.org/bot?a=1#x"


def test_a_config_built_in_python_is_checked_by_validate():
    from courtier.config import Config, CrawlSection, validate

    with pytest.raises(ConfigError, match=r"crawl\.parse_workers = -1: must be"):
        validate(Config(crawl=CrawlSection(parse_workers=-1)))


def test_from_mapping_checks_like_a_file():
    from courtier.config import Config

    assert Config.from_mapping({"limits": {"cdn-miss": {"rate": 9}}}).limits.cdn_miss.rate == 9.0
    with pytest.raises(ConfigError, match=r"wrong type \(a string\)"):
        Config.from_mapping({"crawl": {"max_depth": "3"}})
    with pytest.raises(ConfigError, match="is a table"):
        Config.from_mapping({"limits": {"site": 3}})


def test_a_section_constraint_names_the_inputs_that_set_it(tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text("[frontier]\nsplit_floor = 0.5\n")
    with pytest.raises(ConfigError) as raised:
        load(path, ["frontier.split_ceiling=0.4"], env={})  # each fine alone, not together
    message = str(raised.value)
    assert message.startswith("[frontier]: need 0 < floor <= ceiling <= 1, got 0.5, 0.4")
    assert f"{path}:2:15: frontier.split_floor = 0.5" in message
    assert "-s frontier.split_ceiling=0.4" in message


def test_positions_survive_multiline_strings_arrays_and_comments():
    from courtier._settings import toml_positions

    text = (
        '# top\n[costs]\nrules = [\n  """a\n]b""", # c\n  \'x\',\n]\nindex = 5 # [x]\n'
        '"detail" = 2\n[limits.site]\nrate = 1\n[[x]]\ny = { "z w" = 1 }\n'
    )
    positions = toml_positions(text)
    assert positions[("costs", "index")] == ((8, 1), (8, 9))
    assert positions[("costs", "detail")][1] == (9, 12)
    assert positions[("limits", "site", "rate")][1] == (11, 8)
    assert positions[("x", "y", "z w")][1] == (13, 15)
    assert toml_positions("a = [") == {}  # never raises


def test_limit_overrides_give_one_key_its_own_parameters() -> None:
    from courtier.politeness.keys import LimitKey

    config = Config.from_mapping(
        {
            "limits": {
                "origin": {"rate": 4.0},
                "overrides": ["site:Slow.test => rate=0.2", "origin:platform-a => burst=2"],
            }
        }
    )
    policy = config.limits.policy()
    assert policy.params(LimitKey(KeyType.SITE, "slow.test")).interval == 5.0
    platform = policy.params(LimitKey(KeyType.ORIGIN, "platform-a"))
    assert (platform.interval, platform.burst) == (0.25, 2.0)  # the type's rate, its burst
    assert policy.params(LimitKey(KeyType.ORIGIN, "other")).burst == 0.0
    assert config.limits.site_interval("slow.test:8080") == 5.0  # a site on a port: its host
    assert config.limits.site_interval("fast.test") is None


def test_parse_text_is_on_by_default_and_a_setting_turns_it_off():
    assert load().parse.text is True
    assert load(None, ["parse.text=false"]).parse.text is False
    assert load(None, ["parse.near_distance=0"]).parse.near_distance == 0
    for bad in ("parse.text=maybe", "parse.near_distance=17", "parse.remember=-1"):
        with pytest.raises(ConfigError):
            load(None, [bad])
