"""Checks before a parser sees a file: limits, content sniffing, zip-bomb defence, text decoding.

Parsers of untrusted files are where ingestion gets hurt: a 40 KB .docx can declare
gigabytes of XML, a ``.pdf`` may be an HTML error page, a CSV may be Windows-1252.
Everything here is cheap and runs first, so a bad file fails fast with a reason.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from typing import IO, Any

from .errors import DocumentError

__all__ = ["Limits", "sniff", "check_zip", "decode_text", "describe_kind"]

_MIB = 2**20
_RATIO_MIN_BYTES = _MIB  # small members may compress extremely well (empty XML parts); only big ones count
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


@dataclass(frozen=True)
class Limits:
    """Resource limits for loading one file (the ``knowledge_base`` config has the same names)."""

    max_file_bytes: int = 200 * _MIB
    max_pages: int = 5000
    max_characters: int = 10_000_000
    max_unzipped_bytes: int = 512 * _MIB
    max_zip_ratio: float = 200.0
    max_zip_entries: int = 10_000

    @classmethod
    def from_config(cls, config: Any) -> Limits:
        """From a :class:`~shared_core.config.KnowledgeBaseConfig` (or anything with these attributes)."""
        return cls(**{name: getattr(config, name) for name in cls.__dataclass_fields__})


def sniff(head: bytes) -> str:
    """What the first bytes say the file is: ``pdf``, ``zip``, ``ole``, ``text`` or ``binary``."""
    if b"%PDF-" in head[:1024]:
        return "pdf"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.startswith(_OLE):
        return "ole"
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")):
        return "text"
    sample = head[:8192]
    if b"\x00" in sample:
        return "binary"
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return "binary" if sample and controls / len(sample) > 0.1 else "text"


def describe_kind(kind: str) -> str:
    return {
        "pdf": "a PDF",
        "zip": "a zip archive (an Office .docx/.xlsx/.pptx or an iWork file)",
        "ole": "an old binary Office file or a password-protected Office file",
        "text": "plain text",
        "binary": "binary data",
    }[kind]


def check_zip(source: str | IO[bytes], limits: Limits, what: str) -> zipfile.ZipFile:
    """Open a zip after checking its directory: entry count, declared total size, compression ratios.

    The declared sizes are what a reader decompresses at most (Python's zipfile stops at a
    member's declared size and then checks its CRC), so checking them is enough.
    """
    try:
        archive = zipfile.ZipFile(source)
    except zipfile.BadZipFile as exc:
        raise DocumentError(
            "corrupt", f"is not a readable {what} ({exc}); it may be truncated: re-download or re-save it"
        ) from None
    except (OSError, EOFError, ValueError) as exc:
        raise DocumentError("corrupt", f"is not a readable {what} ({exc})") from None
    try:
        infos = archive.infolist()
        if len(infos) > limits.max_zip_entries:
            raise DocumentError(
                "zip-bomb",
                f"holds {len(infos):,} zip entries (limit {limits.max_zip_entries:,}); this is not a normal "
                f"{what}; raise knowledge_base.max_zip_entries if you trust it",
            )
        total = sum(info.file_size for info in infos)
        if total > limits.max_unzipped_bytes:
            raise DocumentError(
                "zip-bomb",
                f"declares {total / _MIB:,.0f} MiB of uncompressed data (limit {limits.max_unzipped_bytes / _MIB:,.0f} "
                f"MiB), a likely zip bomb; raise knowledge_base.max_unzipped_bytes if you trust it",
            )
        for info in infos:
            if info.file_size <= _RATIO_MIN_BYTES:
                continue
            if info.compress_size <= 0 or info.file_size / info.compress_size > limits.max_zip_ratio:
                ratio = info.file_size / max(info.compress_size, 1)
                raise DocumentError(
                    "zip-bomb",
                    f"member {info.filename!r} expands {ratio:,.0f} times ({info.file_size / _MIB:,.1f} MiB from "
                    f"{info.compress_size:,} bytes; limit {limits.max_zip_ratio:g}x), a likely zip bomb; raise "
                    "knowledge_base.max_zip_ratio if you trust it",
                )
    except BaseException:
        archive.close()
        raise
    return archive


def decode_text(data: bytes) -> tuple[str, str]:
    """Decode bytes as text: a BOM decides, else UTF-8, else Windows-1252, else Latin-1 (never fails)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace"), "utf-8-sig"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace"), "utf-16"
    for encoding in ("utf-8", "cp1252"):
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1"), "latin-1"
