"""Usage events and pattern mining (seed 000): what the user does, when, and with which skills.

Every event is a row of ``usage_events`` with the seed's fields (type, channel, description,
category, skills used, score, timestamp, day, hour, day of week); ``day``/``hour``/
``day_of_week`` (Monday = 0) are computed in ``usage.timezone``. Flushed tasks log one
automatically (``usage.log_tasks``).

:meth:`Usage.mine` looks at the last ``usage.window_days`` of events and records patterns
in ``usage_patterns`` (ids derived from what they are about, so mining again updates them):

* ``recurring_time``, daily: one category in one hour of the day. Confidence = days with
  such an event / days since the first one (today included);
* ``recurring_time``, weekly (only where the daily pattern is not confident): one category
  on one weekday and hour. Confidence = weeks with one / weeks since the first one;
* ``skill_combination``: a set of 2+ skills used together. Confidence = events using all of
  them / events using any of them.

A pattern needs ``usage.min_samples`` (3) occurrences and ``usage.min_confidence`` (0.5). One
seen ``usage.propose_min_samples`` (5) times with ``usage.propose_confidence`` (0.7) proposes a
skill: a SKILL.md under ``<data dir>/skills/proposed/`` (status ``proposed``); ``dismiss``
stops a pattern from being proposed. Patterns that stop qualifying become ``lapsed``.
"""

from .records import PATTERN_STATUSES, MiningReport, UsageEvent, UsagePattern, UsageSummary
from .service import Usage

__all__ = ["Usage", "UsageEvent", "UsagePattern", "UsageSummary", "MiningReport", "PATTERN_STATUSES"]
