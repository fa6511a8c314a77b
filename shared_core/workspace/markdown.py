"""Markdown text of workspace files: comments removed for prompts, and chunks for the index.

Chunks follow the Markdown: a heading starts a new chunk, paragraphs are packed up to the chunk
size, a longer paragraph is cut at line or word boundaries; headings in a row (``# Memory`` then
``## Pets``) open one chunk together. HTML comments are instructions for people: never loaded
into a prompt or indexed.
"""

from __future__ import annotations

import re

__all__ = ["strip_comments", "has_content", "chunk_markdown"]

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING_ONLY = re.compile(r"^\s*#{1,6}\s.*$", re.MULTILINE)


def strip_comments(text: str) -> str:
    """The text without HTML comments, trailing spaces and runs of blank lines."""
    text = _COMMENT.sub("", text)
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    return "\n".join(out).strip()


def has_content(text: str) -> bool:
    """True when a file holds more than headings and comments (a fresh template holds nothing)."""
    return bool(_HEADING_ONLY.sub("", strip_comments(text)).strip())

_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def chunk_markdown(text: str, size: int = 1000) -> list[tuple[str, str | None]]:
    """(chunk text, heading) pairs of a Markdown text, comments removed (see the module docs)."""
    chunks: list[tuple[str, str | None]] = []
    heading: str | None = None
    current: list[str] = []
    has_body = False

    def flush() -> None:
        nonlocal has_body
        body = "\n\n".join(p for p in current if p.strip()).strip()
        if body:
            chunks.append((body, heading))
        current.clear()
        has_body = False

    for block in re.split(r"\n\s*\n", strip_comments(text)):
        block = block.strip()
        if not block:
            continue
        lines = block.splitlines()
        match = _HEADING.match(lines[0])
        if match:
            if has_body:  # a heading starts a chunk; headings in a row stay together
                flush()
            heading = match.group(1) or heading
        if not match or len(lines) > 1:
            has_body = True
        for piece in _pieces(block, size):
            if current and len("\n\n".join(current)) + 2 + len(piece) > size:
                flush()
            current.append(piece)
    flush()
    return chunks


def _pieces(block: str, size: int) -> list[str]:
    """A paragraph in pieces of at most ``size`` characters, cut at line breaks, then spaces."""
    if len(block) <= size:
        return [block]
    out: list[str] = []
    rest = block
    while len(rest) > size:
        cut = rest.rfind("\n", 0, size)
        if cut < size // 2:
            cut = rest.rfind(" ", 0, size)
        if cut < size // 2:
            cut = size
        out.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        out.append(rest)
    return out
