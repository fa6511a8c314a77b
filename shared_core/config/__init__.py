"""Settings: ``config.toml`` + environment + keyword overrides, every seed constant named.

Where a value comes from a seed document, the comment names the seed (000 OpenKoi,
001 OpenMotoko, 002 Koshi, 003 OpenLoomi, 004 the agent fleet). Precedence, lowest
first: defaults, the TOML file (``OPENKOI_CONFIG`` or ``~/.openkoi/config.toml``),
then the ``overrides`` mapping given in code.

The sections live by concept: :mod:`.memory` (models, memory, ranking, search, forgetting,
links), :mod:`.learning` (insights, recall, learning, usage), :mod:`.conversations` (context,
conversations, workspace, knowledge base), :mod:`.deployment` (database, server); :mod:`.settings`
holds :class:`Config` and the loading, :mod:`.values` the default paths and shared checks.

>>> cfg = Config.load(overrides={"ranking": {"score_weight": 0.3}})
>>> cfg.ranking.score_weight
0.3
"""

from ..errors import ConfigError as ConfigError  # importable from here too
from .conversations import ADDENDUM_SHARES as ADDENDUM_SHARES
from .conversations import ContextConfig, ConversationsConfig, KnowledgeBaseConfig, WorkspaceConfig
from .deployment import DatabaseConfig, ServerConfig
from .learning import IMPORTANCE_LEVELS as IMPORTANCE_LEVELS
from .learning import URGENCY_LEVELS as URGENCY_LEVELS
from .learning import InsightsConfig, LearningConfig, RecallConfig, UsageConfig
from .memory import (
    ForgettingConfig,
    LinksConfig,
    MemoryConfig,
    ModelsConfig,
    RankingConfig,
    SearchConfig,
)
from .settings import Config
from .values import APP_NAME as APP_NAME
from .values import default_config_path, default_data_dir, parse_size

__all__ = [
    "Config",
    "ModelsConfig",
    "MemoryConfig",
    "RankingConfig",
    "SearchConfig",
    "ForgettingConfig",
    "InsightsConfig",
    "RecallConfig",
    "ContextConfig",
    "KnowledgeBaseConfig",
    "LinksConfig",
    "LearningConfig",
    "UsageConfig",
    "ConversationsConfig",
    "WorkspaceConfig",
    "DatabaseConfig",
    "ServerConfig",
    "default_data_dir",
    "default_config_path",
    "parse_size",
]
