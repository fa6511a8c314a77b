"""config.toml, environment variables and keyword overrides."""

from __future__ import annotations

import pytest

from shared_core import Config, ConfigError, MemoryStore
from shared_core.config import parse_size


def test_seed_defaults():
    cfg = Config()
    assert cfg.memory.reinforce_weight == 3 and cfg.memory.demote_weight == 1
    assert cfg.memory.fact_dedup_threshold == 0.9 and cfg.memory.learning_dedup_threshold == 0.8
    assert cfg.memory.learning_decay_rate == 0.05 and cfg.memory.learning_prune_threshold == 0.1
    assert cfg.memory.max_size == 100 * 10**6 and cfg.memory.prune_percent == 1
    assert cfg.memory.prune_schedule == "0 4 * * *"
    assert cfg.ranking.score_weight == 0.2 and cfg.ranking.recency_rate == 0.01
    assert cfg.forgetting.short_to_mid_threshold == 0.65 and cfg.forgetting.mid_to_long_threshold == 0.45
    assert cfg.knowledge_base.chunk_size == 1000 and cfg.knowledge_base.chunk_overlap == 200


def test_toml_file_then_overrides(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text('[memory]\nlearning_decay_rate = 0.1\nmax_size = "5MB"\n[search]\nfusion = "rrf"\n')
    monkeypatch.setenv("OPENKOI_CONFIG", str(path))
    cfg = Config.load(overrides={"search": {"fusion": "weighted"}})
    assert cfg.memory.learning_decay_rate == 0.1 and cfg.memory.max_size == 5_000_000
    assert cfg.search.fusion == "weighted"
    with MemoryStore.open(":memory:", config={"ranking": {"score_weight": 0.5}}) as store:
        assert store.config.ranking.score_weight == 0.5 and store.config.memory.learning_decay_rate == 0.1


def test_data_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENKOI_DATA", str(tmp_path / "d"))
    assert Config.load().data_dir == tmp_path / "d"


@pytest.mark.parametrize(
    "toml, message",
    [
        ("[nope]\nx = 1\n", "unknown section \\[nope\\]"),
        ("[memory]\nbogus = 1\n", "unknown setting memory.bogus"),
        ("[memory]\nreinforce_weight = 'x'\n", "must be a number"),
        ("[search]\nfusion = 'magic'\n", "fusion 'magic' is unknown"),
        ("[memory]\nfact_dedup_threshold = 2\n", "between 0.0 and 1.0"),
        ("[memory]\nmax_size = 'lots'\n", "as a size"),
        ("not toml at all = = =", "not valid TOML"),
    ],
)
def test_bad_settings_are_clear_errors(tmp_path, toml, message):
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=message):
        Config.load(path)


def test_missing_explicit_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        Config.load(tmp_path / "missing.toml")


def test_parse_size():
    assert parse_size("100MB") == 100_000_000 and parse_size("1KiB") == 1024 and parse_size(42) == 42
    with pytest.raises(ConfigError):
        parse_size("-5")
