"""The settings of learning, recall and usage: seed defaults, validation, TOML."""

from __future__ import annotations

import pytest

from shared_core import Config, ConfigError


def test_defaults_are_the_seeds_numbers():
    cfg = Config.from_dict({})
    assert (cfg.memory.learning_decay_rate, cfg.memory.learning_prune_threshold,
            cfg.memory.learning_dedup_threshold, cfg.memory.learning_initial_confidence) == (0.05, 0.1, 0.8, 0.8)
    assert (cfg.learning.regression_drop, cfg.learning.diminishing_min_iterations, cfg.learning.diminishing_gain,
            cfg.learning.blocker_min_count, cfg.learning.model_min_cycles, cfg.learning.model_min_findings,
            cfg.learning.model_max_learnings, cfg.learning.model_max_tokens) == (0.1, 3, 0.02, 2, 2, 3, 3, 500)
    assert (cfg.recall.anti_patterns, cfg.recall.skills, cfg.recall.learnings, cfg.recall.similar_tasks,
            cfg.recall.budget_fraction, cfg.recall.task_token_budget,
            cfg.recall.similar_tasks_min_remaining) == (5, 3, 5, 3, 0.1, 200_000, 0.5)


def test_toml_sections(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[memory]\nlearning_decay_rate = 0.1\n[learning]\nregression_drop = 0.2\n'
                    '[usage]\ntimezone = "Europe/Berlin"\n[recall]\nanti_patterns = 2\n')
    cfg = Config.load(path)
    assert cfg.memory.learning_decay_rate == 0.1 and cfg.learning.regression_drop == 0.2
    assert cfg.usage.timezone == "Europe/Berlin" and cfg.recall.anti_patterns == 2


@pytest.mark.parametrize(("section", "values", "message"), [
    ("learning", {"regression_drop": -1.0}, "must not be negative"),
    ("learning", {"model_max_learnings": 0}, "at least 1"),
    ("learning", {"default_category": " "}, "must not be empty"),
    ("usage", {"timezone": "Mars/Olympus"}, "not a known time zone"),
    ("usage", {"min_confidence": 1.5}, "between"),
    ("recall", {"budget_fraction": 2.0}, "between"),
    ("recall", {"skills": -1}, "must not be negative"),
    ("memory", {"learning_reinforce_bump": 1.5}, "between"),
    ("memory", {"learning_decay_rate": -0.1}, "rate per week"),
    ("memory", {"task_stale_hours": 0.0}, "positive"),
])
def test_bad_settings_say_what_to_fix(section, values, message):
    with pytest.raises(ConfigError, match=message):
        Config.from_dict({section: values})
