"""Token counts for budgets: tiktoken when its encoding is already on disk, else an estimate.

tiktoken downloads its BPE files on first use; this library never touches the network
on its own, so tiktoken is used only when the ``tokens`` extra is installed and the
encoding is already cached (or ``OPENKOI_TIKTOKEN=1`` allows the download). Otherwise
the estimate is one token per 4 characters, with CJK characters counted one each;
it runs a little high for English prose, which is the safe side for a budget.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import tempfile
from collections.abc import Callable

__all__ = ["estimate_tokens", "count_tokens", "tokenizer", "tokenizer_name", "DEFAULT_ENCODING"]

DEFAULT_ENCODING = "cl100k_base"


def estimate_tokens(text: str) -> int:
    """The dependency-free estimate: ceil(other characters / 4) + CJK characters."""
    if not text:
        return 0
    cjk = sum(1 for ch in text if _is_cjk(ch))
    return math.ceil((len(text) - cjk) / 4) + cjk


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return 0x3040 <= code <= 0x30FF or 0x3400 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF


def _tiktoken_cached(encoding: str) -> bool:
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), "data-gym-cache"
    )
    url = f"https://openaipublic.blob.core.windows.net/encodings/{encoding}.tiktoken"
    return os.path.exists(os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()))


@functools.lru_cache(maxsize=8)
def tokenizer(encoding: str = DEFAULT_ENCODING) -> tuple[str, Callable[[str], int]]:
    """``("tiktoken:<encoding>", count)`` when tiktoken can load it offline, else ``("estimate", ...)``."""
    try:
        import tiktoken
    except ImportError:
        return "estimate", estimate_tokens
    if not (_tiktoken_cached(encoding) or os.environ.get("OPENKOI_TIKTOKEN") == "1"):
        return "estimate", estimate_tokens
    try:
        codec = tiktoken.get_encoding(encoding)
    except Exception:  # a failed download, a broken cache file, an unknown name: fall back
        return "estimate", estimate_tokens

    def count(text: str) -> int:
        return len(codec.encode(text, disallowed_special=()))

    return f"tiktoken:{encoding}", count


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Tokens in ``text``: exact when tiktoken is usable offline, else the estimate."""
    return tokenizer(encoding)[1](text)


def tokenizer_name(encoding: str = DEFAULT_ENCODING) -> str:
    """Which counter ``count_tokens`` uses: ``tiktoken:<encoding>`` or ``estimate``."""
    return tokenizer(encoding)[0]
