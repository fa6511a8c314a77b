"""The :class:`Config` of all sections: defaults, then ``config.toml``, then overrides, each checked."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .conversations import ContextConfig, ConversationsConfig, KnowledgeBaseConfig, WorkspaceConfig
from .deployment import DatabaseConfig, ServerConfig
from .learning import InsightsConfig, LearningConfig, RecallConfig, UsageConfig
from .memory import (
    ForgettingConfig,
    LinksConfig,
    MemoryConfig,
    ModelsConfig,
    RankingConfig,
    SearchConfig,
)
from .values import default_config_path, default_data_dir, parse_size

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["Config"]


_SECTIONS = {
    "models": ModelsConfig,
    "memory": MemoryConfig,
    "ranking": RankingConfig,
    "search": SearchConfig,
    "forgetting": ForgettingConfig,
    "insights": InsightsConfig,
    "recall": RecallConfig,
    "context": ContextConfig,
    "knowledge_base": KnowledgeBaseConfig,
    "links": LinksConfig,
    "learning": LearningConfig,
    "usage": UsageConfig,
    "conversations": ConversationsConfig,
    "workspace": WorkspaceConfig,
    "database": DatabaseConfig,
    "server": ServerConfig,
}


@dataclass
class Config:
    """All settings. Build with :meth:`Config.load`, or directly for tests."""

    models: ModelsConfig = field(default_factory=ModelsConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    ranking: RankingConfig = field(default_factory=RankingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    forgetting: ForgettingConfig = field(default_factory=ForgettingConfig)
    insights: InsightsConfig = field(default_factory=InsightsConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    knowledge_base: KnowledgeBaseConfig = field(default_factory=KnowledgeBaseConfig)
    links: LinksConfig = field(default_factory=LinksConfig)
    learning: LearningConfig = field(default_factory=LearningConfig)
    usage: UsageConfig = field(default_factory=UsageConfig)
    conversations: ConversationsConfig = field(default_factory=ConversationsConfig)
    workspace: WorkspaceConfig = field(default_factory=WorkspaceConfig)
    database: DatabaseConfig = field(default_factory=DatabaseConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    data_dir: Path = field(default_factory=default_data_dir)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
    ) -> Config:
        """Defaults, then the TOML file (if it exists), then ``overrides``.

        ``path=None`` reads ``$OPENKOI_CONFIG`` or ``~/.openkoi/config.toml`` when present;
        an explicit path that does not exist is an error.
        """
        explicit = path is not None
        toml_path = Path(path).expanduser() if path is not None else default_config_path()
        data: dict[str, Any] = {}
        if toml_path.exists():
            try:
                data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{toml_path} is not valid TOML: {exc}") from None
        elif explicit:
            raise ConfigError(f"config file {toml_path} does not exist")
        merged = _merge(data, dict(overrides or {}))
        return cls.from_dict(merged, origin=str(toml_path) if toml_path.exists() else "overrides")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "config") -> Config:
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key == "data_dir":
                kwargs["data_dir"] = Path(str(value)).expanduser()
                continue
            section = _SECTIONS.get(key)
            if section is None:
                raise ConfigError(
                    f"{origin}: unknown section [{key}]; known sections: {', '.join(sorted(_SECTIONS))}"
                )
            if isinstance(value, section):
                kwargs[key] = value
                continue
            if not isinstance(value, Mapping):
                raise ConfigError(f"{origin}: [{key}] must be a table of settings, got {value!r}")
            kwargs[key] = _build_section(section, key, value, origin)
        return cls(**kwargs)

    def replace(self, **overrides: Mapping[str, Any]) -> Config:
        """A copy with some sections' settings changed: ``cfg.replace(search={"fusion": "rrf"})``."""
        current: dict[str, Any] = {name: dataclasses.asdict(getattr(self, name)) for name in _SECTIONS}
        current["data_dir"] = str(self.data_dir)
        return Config.from_dict(_merge(current, overrides), origin="replace()")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: dataclasses.asdict(getattr(self, name)) for name in _SECTIONS}
        out["data_dir"] = str(self.data_dir)
        return out


def _build_section(section: type, key: str, values: Mapping[str, Any], origin: str) -> Any:
    known = {f.name: f for f in fields(section)}
    checked: dict[str, Any] = {}
    for name, value in values.items():
        if name not in known:
            raise ConfigError(
                f"{origin}: unknown setting {key}.{name}; known settings: {', '.join(sorted(known))}"
            )
        default = known[name].default
        if default is dataclasses.MISSING:  # pragma: no cover - every setting has a default
            default = None
        checked[name] = _coerce(key, name, value, default)
    try:
        return section(**checked)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{origin}: invalid [{key}] settings: {exc}") from None


def _coerce(section: str, name: str, value: Any, default: Any) -> Any:
    where = f"{section}.{name}"
    if name == "max_size":
        return parse_size(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be a whole number, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number, got {value!r}")
        return float(value)
    if isinstance(default, tuple):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where} must be a list, got {value!r}")
        return tuple(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, got {value!r}")
        return value
    return value


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out
