"""Splitting document text into overlapping chunks (seed 003: 1000 characters, 200 overlap).

The splitting itself is langchain-text-splitters' ``RecursiveCharacterTextSplitter``
(paragraphs, then lines, then words, then characters). Sizes count characters by default,
or tokens (``unit="tokens"``): with tiktoken's encoding when tiktoken is installed and the
encoding is already on disk (this library never downloads on its own; set
``OPENKOI_TIKTOKEN=1`` to allow it), else an estimate of one token per 4 characters (CJK
characters one each), which errs on the side of smaller chunks for English prose.

Every chunk knows its index and its character offsets in the document text, and where it
lies (page, sheet and row, slide, heading) from the loader's sections.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..tokens import tokenizer as offline_tokenizer
from .records import LoadedDocument

__all__ = ["Chunk", "Chunker"]



@dataclass(frozen=True)
class Chunk:
    """``text == document.text[start:end]``; ``metadata`` has ``chunk_index``, ``start``, ``end``
    and the location (``page``/``page_end``, ``sheet``/``row``, ``slide``, ``heading``)."""

    index: int
    text: str
    start: int
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)


class Chunker:
    """``RecursiveCharacterTextSplitter`` with offsets; sizes in characters or tokens.

    ``tokenizer`` (a function from text to its token count) overrides the tiktoken lookup
    when ``unit="tokens"``.
    """

    def __init__(
        self,
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
        *,
        unit: str = "characters",
        encoding: str = "cl100k_base",
        tokenizer: Callable[[str], int] | None = None,
        separators: list[str] | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        if not 0 <= chunk_overlap < chunk_size:
            raise ValueError(f"chunk_overlap must be at least 0 and below chunk_size ({chunk_size}), got {chunk_overlap}")
        if unit not in ("characters", "tokens"):
            raise ValueError(f"unit must be 'characters' or 'tokens', got {unit!r}")
        try:
            from langchain_text_splitters import RecursiveCharacterTextSplitter
        except ImportError:
            raise ImportError(
                "chunking documents needs langchain-text-splitters: pip install langchain-text-splitters"
            ) from None
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.unit = unit
        if unit == "characters":
            self.tokenizer_name = "characters"
            length: Callable[[str], int] = len
        elif tokenizer is not None:
            self.tokenizer_name = getattr(tokenizer, "__name__", "custom")
            length = tokenizer
        else:
            self.tokenizer_name, length = offline_tokenizer(encoding)
        self.length = length
        self._splitter = RecursiveCharacterTextSplitter(
            chunk_size=chunk_size, chunk_overlap=chunk_overlap, length_function=length,
            separators=separators, keep_separator=True, strip_whitespace=True,
        )

    @classmethod
    def from_config(cls, config: Any) -> Chunker:
        """From the ``knowledge_base`` config section."""
        return cls(config.chunk_size, config.chunk_overlap, unit=config.chunk_unit, encoding=config.token_encoding)

    @property
    def signature(self) -> str:
        """Names the chunking, e.g. ``characters:1000/200``; a document chunked otherwise is re-chunked."""
        return f"{self.tokenizer_name}:{self.chunk_size}/{self.chunk_overlap}"

    def __repr__(self) -> str:
        return f"Chunker({self.signature})"

    def split(self, text: str) -> list[tuple[str, int, int]]:
        """(chunk text, start, end) with ``text[start:end] == chunk text``, in order."""
        out: list[tuple[str, int, int]] = []
        previous_start, previous_end = -1, 0
        for piece in self._splitter.split_text(text):
            low = previous_start + 1
            if self.unit == "characters":  # the overlap carried over is at most chunk_overlap characters
                low = max(low, previous_end - self.chunk_overlap)
            start = text.find(piece, low)
            if start < 0:
                start = text.find(piece)
            if start < 0:  # the splitter only ever cuts and strips, so this means a bug
                raise RuntimeError(f"chunk {len(out)} is not a substring of the text; please report this")
            end = start + len(piece)
            if out and start <= previous_start:
                # the splitter can emit a chunk that only extends the previous one ('a', then 'a aa'):
                # keep the longer, so no chunk is contained in another and starts keep increasing
                if end <= previous_end:
                    continue
                out.pop()
            out.append((piece, start, end))
            previous_start, previous_end = start, end
        return out

    def chunk(self, document: LoadedDocument) -> list[Chunk]:
        """The document's chunks, each with its index, offsets and location."""
        chunks = []
        for index, (text, start, end) in enumerate(self.split(document.text)):
            metadata = {"chunk_index": index, "start": start, "end": end, **document.locate(start, end)}
            chunks.append(Chunk(index, text, start, end, metadata))
        return chunks
