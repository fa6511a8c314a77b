"""How learnings are extracted from a finished task (seed 000): the rules (tier 1, no tokens), and
when and how a text model is asked (tier 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..llm import ModelOutputError, TextModel, parse_json_output
from ..ranking import is_diminishing, is_regression
from ..tokens import count_tokens
from .records import LearningCandidate, LearningType

if TYPE_CHECKING:
    from ..config import Config
    from ..tasks.records import TaskRecord

__all__ = ["EXTRACTION_PROMPT", "rule_learnings", "wants_model", "model_learnings"]

# seed 000's tier-2 prompt, word for word; the JSON instruction after it is ours
EXTRACTION_PROMPT = """\
Extract 1-3 reusable learnings from this task execution.
Each learning should be a single sentence that would help
with similar future tasks."""
_JSON_INSTRUCTION = (
    'Answer with JSON only: {"learnings": [{"type": "Heuristic" or "Preference", "content": "<one sentence>"}]}'
)


def rule_learnings(task: TaskRecord, config: Config) -> list[LearningCandidate]:
    """Seed 000's tier 1 (0 tokens): regressions, diminishing returns, recurring blockers."""
    cfg = config.learning
    out: list[LearningCandidate] = []
    context = _context(task)
    cycles = sorted((c for c in task.cycles if c.score is not None), key=lambda c: c.iteration)
    for previous, current in zip(cycles, cycles[1:], strict=False):
        if is_regression(previous.score, current.score, cfg.regression_drop):  # type: ignore[arg-type]
            fixes = [f.fix for f in task.findings_of(previous) if f.fix]
            fixes += [f.fix for f in task.findings if f.resolved_in == current.id and f.fix and f.fix not in fixes]
            text = (f"Iteration {current.iteration} regressed from {previous.score:.2f} to {current.score:.2f}"
                    f"{context}. The attempted fix was counterproductive")
            if fixes:
                text += f" ({'; '.join(_clip(f, 80) for f in fixes[:3])})"
            out.append(LearningCandidate(LearningType.ANTI_PATTERN, text + ".", task.category))
    scores = [c.score for c in cycles]
    if len(task.cycles) >= cfg.diminishing_min_iterations and is_diminishing(
        scores, cfg.diminishing_min_iterations, cfg.diminishing_gain  # type: ignore[arg-type]
    ):
        enough = len(scores) - 1
        kind = f"{task.category} tasks" if task.category else "this type of task"
        plural = "iteration" if enough == 1 else "iterations"
        out.append(LearningCandidate(
            LearningType.HEURISTIC,
            f"Diminishing returns after {enough} {plural} on {kind}. Consider reducing max_iterations to {enough}.",
            task.category,
        ))
    severity = cfg.blocker_severity.casefold()
    blockers: dict[str, list[Any]] = {}
    names: dict[str, str] = {}
    for finding in task.findings:
        if finding.severity.strip().casefold() == severity:
            key = finding.dimension.strip().casefold()
            blockers.setdefault(key, []).append(finding)
            names.setdefault(key, finding.dimension.strip())
    iteration_of = {c.id: c.iteration for c in task.cycles}
    for key, found in blockers.items():
        if len(found) < cfg.blocker_min_count:
            continue
        dimension = names[key]
        spread = len({iteration_of.get(f.cycle_id) for f in found})
        titles = "; ".join(dict.fromkeys(_clip(f.title, 60) for f in found[:3]))
        across = f"across {spread} iterations" if spread > 1 else "in one iteration"
        out.append(LearningCandidate(
            LearningType.ANTI_PATTERN,
            f"The {dimension} dimension produced {len(found)} blocker findings {across}{context} ({titles}). "
            f"Don't move on while {dimension} blockers are open; check {dimension} first.",
            task.category,
        ))
    return out


def wants_model(task: TaskRecord, config: Config) -> bool:
    """Seed 000's tier-2 condition: cycles >= 2 and some evaluation produced >= 3 findings."""
    cfg = config.learning
    if len(task.cycles) < cfg.model_min_cycles:
        return False
    return any(len(task.findings_of(c)) >= cfg.model_min_findings for c in task.cycles)


def model_learnings(task: TaskRecord, model: TextModel, config: Config) -> list[LearningCandidate]:
    """Seed 000's tier 2: ask the model for 1-3 single-sentence learnings (raises ModelOutputError)."""
    cfg = config.learning
    summary = _fit(task.summary(max_findings=20), cfg.model_max_tokens)
    prompt = f"{EXTRACTION_PROMPT}\n\n{summary}\n\n{_JSON_INSTRUCTION}"
    answer = model.complete(prompt, max_tokens=cfg.model_max_tokens)
    data = parse_json_output(answer)
    items = data.get("learnings") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ModelOutputError(f"expected a list of learnings, got {type(items).__name__}")
    out: list[LearningCandidate] = []
    for item in items:
        kind: Any = LearningType.HEURISTIC
        if isinstance(item, dict):
            text, kind = item.get("content") or item.get("learning"), item.get("type", kind)
        else:
            text = item
        if not isinstance(text, str) or not text.strip():
            continue
        try:
            kind = LearningType.parse(kind)
        except ValueError:
            kind = LearningType.HEURISTIC
        sentence = " ".join(text.split())
        if len(sentence) > 400:
            continue
        out.append(LearningCandidate(kind, sentence, task.category, "model"))
    if not out:
        raise ModelOutputError(f"the model's answer held no usable learning: {str(answer)[:120]!r}")
    return out[: cfg.model_max_learnings]


def _context(task: TaskRecord) -> str:
    return f' while working on "{_clip(task.description, 80)}"' if task.description else ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _fit(text: str, budget: int) -> str:
    """Cut ``text`` (by lines) to at most ``budget`` tokens."""
    if count_tokens(text) <= budget:
        return text
    kept: list[str] = []
    for line in text.splitlines():
        if count_tokens("\n".join([*kept, line])) > budget:
            break
        kept.append(line)
    return "\n".join(kept)
