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
from typing import Any, Callable

__all__ = ["estimate_tokens", "count_tokens", "tokenizer_name"]

_ENCODING = "cl100k_base"
_URL = f"https://openaipublic.blob.core.windows.net/encodings/{_ENCODING}.tiktoken"


def estimate_tokens(text: str) -> int:
    """The dependency-free estimate: ceil(other characters / 4) + CJK characters."""
    if not text:
        return 0
    cjk = sum(1 for ch in text if _is_cjk(ch))
    return math.ceil((len(text) - cjk) / 4) + cjk


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return 0x3040 <= code <= 0x30FF or 0x3400 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF


def _tiktoken_cached() -> bool:
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), "data-gym-cache"
    )
    return os.path.exists(os.path.join(cache, hashlib.sha1(_URL.encode()).hexdigest()))


@functools.lru_cache(maxsize=1)
def _encoder() -> Callable[[str], Any] | None:
    try:
        import tiktoken
    except ImportError:
        return None
    if not (_tiktoken_cached() or os.environ.get("OPENKOI_TIKTOKEN") == "1"):
        return None
    try:
        encoding = tiktoken.get_encoding(_ENCODING)
    except Exception:  # a failed download or a broken cache file: fall back to the estimate
        return None
    return functools.partial(encoding.encode, disallowed_special=())


def count_tokens(text: str) -> int:
    """Tokens in ``text``: exact (cl100k_base) when tiktoken is usable offline, else the estimate."""
    encode = _encoder()
    return len(encode(text)) if encode is not None else estimate_tokens(text)


def tokenizer_name() -> str:
    """Which counter ``count_tokens`` uses: ``tiktoken:cl100k_base`` or ``estimate``."""
    return f"tiktoken:{_ENCODING}" if _encoder() is not None else "estimate"
