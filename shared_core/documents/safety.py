"""Checks before and while a parser reads a file: limits, content sniffing, zip-bomb defence, text decoding.

Parsers of untrusted files are where ingestion gets hurt: a 40 KB .docx can declare
gigabytes of XML, 2 MB of empty paragraphs can parse into a gigabyte of tree, a ``.pdf`` may
be an HTML error page, a CSV may be Windows-1252. Everything that can be checked before
parsing runs first and is cheap, so a bad file fails fast with a reason; what can only be seen
while reading (pages, rows, time) is counted by a :class:`Budget` as extraction goes.
"""

from __future__ import annotations

import codecs
import re
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import IO, Any

from .errors import DocumentError, LimitExceeded

__all__ = ["Limits", "Budget", "limit_error", "sniff", "check_zip", "scan_xml", "decode_text", "describe_kind"]

_MIB = 2**20
_RATIO_MIN_BYTES = _MIB  # small members may compress extremely well (empty XML parts); only big ones count
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_CHUNK = _MIB  # zip members are scanned this many bytes at a time
_TAG_SPAN = 40  # the longest counted tag opening: '<', a prefix of up to 32 characters, ':', the name, one byte
_DTD = re.compile(rb"<!(?:DOCTYPE|ENTITY)")
_XML_SUFFIXES = (".xml", ".rels", ".vml")


@dataclass(frozen=True)
class Limits:
    """Resource limits for loading one file (the ``knowledge_base`` config has the same names).

    Each bounds the time or memory a file can cost before any text is stored; a file past one
    is refused with a :class:`~shared_core.documents.errors.LimitExceeded` naming the setting.
    """

    max_file_bytes: int = 200 * _MIB  # the file itself (an iWork bundle: its files together)
    max_pages: int = 5000  # PDF (and iWork preview) pages, presentation slides
    max_characters: int = 10_000_000  # the extracted text
    max_unzipped_bytes: int = 512 * _MIB  # everything an Office/iWork zip declares, uncompressed
    max_zip_ratio: float = 200.0  # one zip member's expansion (members above 1 MiB)
    max_zip_entries: int = 10_000  # members of one zip
    max_part_bytes: int = 64 * _MIB  # one XML part of a zip (document.xml, a worksheet, a slide), uncompressed
    max_xml_elements: int = 2_000_000  # XML elements a Word/PowerPoint file (or an Excel file's non-sheet parts) holds
    max_paragraphs: int = 200_000  # paragraphs of a Word or PowerPoint file, empty ones included
    max_cells: int = 1_000_000  # cells of a spreadsheet, CSV file or tables (an empty spreadsheet row counts one)
    max_pdf_objects: int = 1_000_000  # objects a PDF declares (its cross-reference table is read whole)
    max_pdf_page_bytes: int = 4 * _MIB  # one PDF page's content, decompressed (parsed whole, in Python)
    max_seconds_per_file: float = 120.0  # reading one file, checked as extraction goes

    @classmethod
    def from_config(cls, config: Any) -> Limits:
        """From a :class:`~shared_core.config.KnowledgeBaseConfig` (or anything with these attributes;
        those it lacks keep their defaults)."""
        values: dict[str, Any] = {f.name: getattr(config, f.name, f.default) for f in fields(cls)}
        return cls(**values)


def limit_error(setting: str, limit: float, found: str, *, shown: str | None = None, reason: str = "too-large",
                suspicion: str | None = None, advice: str = "split the file") -> LimitExceeded:
    """The refusal for a file past ``knowledge_base.<setting>``: what was found, the limit, the setting to raise.

    ``suspicion`` (e.g. "a likely zip bomb") replaces the advice for files no normal program writes.
    """
    shown = shown if shown is not None else (f"{limit:,}" if isinstance(limit, int) else f"{limit:g}")
    if suspicion:
        message = f"{found} (limit {shown}), {suspicion}; if you trust the file, raise knowledge_base.{setting}"
    else:
        message = f"{found} (limit {shown}); {advice}, or raise knowledge_base.{setting}"
    return LimitExceeded(reason, message, setting=f"knowledge_base.{setting}", limit=limit)


class Budget:
    """What reading one file may still cost: a deadline and running counts of pages, paragraphs and cells.

    Loaders call :meth:`check` (and the ``count_*`` methods, which also check) as they go, so a file
    past ``max_seconds_per_file`` stops at the next page, row, paragraph or scanned megabyte.
    ``timer`` returns seconds (``time.monotonic``); tests pass one they move themselves.
    """

    def __init__(self, limits: Limits | None = None, *, timer: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits or Limits()
        self.timer = timer
        self.started = timer()
        self.pages = 0
        self.paragraphs = 0
        self.cells = 0

    @property
    def elapsed(self) -> float:
        """Seconds since the budget was made."""
        return self.timer() - self.started

    def check(self) -> None:
        """Raise :class:`LimitExceeded` once reading has taken longer than ``max_seconds_per_file``."""
        limit = self.limits.max_seconds_per_file
        elapsed = self.elapsed
        if elapsed > limit:
            raise limit_error("max_seconds_per_file", limit, f"took more than {limit:g} s to read (stopped at "
                              f"{elapsed:.1f} s)", shown=f"{limit:g} s")

    def count_pages(self, n: int = 1, *, unit: str = "pages") -> None:
        """``n`` more pages (or slides: ``unit="slides"``) read."""
        self.pages += n
        if self.pages > self.limits.max_pages:
            raise limit_error("max_pages", self.limits.max_pages, f"has more than {self.limits.max_pages:,} {unit}")
        self.check()

    def count_paragraphs(self, n: int = 1) -> None:
        """``n`` more paragraphs read (empty ones too: they cost as much to parse)."""
        self.paragraphs += n
        if self.paragraphs > self.limits.max_paragraphs:
            raise limit_error("max_paragraphs", self.limits.max_paragraphs,
                              f"has more than {self.limits.max_paragraphs:,} paragraphs")
        self.check()

    def count_cells(self, n: int = 1) -> None:
        """``n`` more table cells read (a spreadsheet row with no cells counts as one)."""
        self.cells += n
        if self.cells > self.limits.max_cells:
            raise limit_error("max_cells", self.limits.max_cells, f"has more than {self.limits.max_cells:,} cells")
        self.check()


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
    """Open a zip after checking its directory: entry count, declared sizes (in total and of each
    XML part), compression ratios.

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
            raise limit_error("max_zip_entries", limits.max_zip_entries, f"holds {len(infos):,} zip entries",
                              reason="zip-bomb", suspicion=f"not a normal {what}")
        total = sum(info.file_size for info in infos)
        if total > limits.max_unzipped_bytes:
            raise limit_error("max_unzipped_bytes", limits.max_unzipped_bytes,
                              f"declares {total / _MIB:,.0f} MiB of uncompressed data",
                              shown=f"{limits.max_unzipped_bytes / _MIB:,.0f} MiB", reason="zip-bomb",
                              suspicion="a likely zip bomb")
        for info in infos:
            if info.filename.lower().endswith(_XML_SUFFIXES) and info.file_size > limits.max_part_bytes:
                raise _part_too_large(info.filename, info.file_size, limits)
            if info.file_size <= _RATIO_MIN_BYTES:
                continue
            if info.compress_size <= 0 or info.file_size / info.compress_size > limits.max_zip_ratio:
                ratio = info.file_size / max(info.compress_size, 1)
                raise limit_error("max_zip_ratio", limits.max_zip_ratio,
                                  f"member {info.filename!r} expands {ratio:,.0f} times "
                                  f"({info.file_size / _MIB:,.1f} MiB from {info.compress_size:,} bytes)",
                                  shown=f"{limits.max_zip_ratio:g}x", reason="zip-bomb", suspicion="a likely zip bomb")
    except BaseException:
        archive.close()
        raise
    return archive


def _part_too_large(name: str, size: int, limits: Limits) -> LimitExceeded:
    return limit_error("max_part_bytes", limits.max_part_bytes, f"has a {size / _MIB:,.1f} MiB XML part {name!r}",
                       shown=f"{limits.max_part_bytes / _MIB:,.0f} MiB")


def scan_xml(archive: zipfile.ZipFile, budget: Budget, *, tag: str, unit: str, counted_in: tuple[str, ...] = ("",),
             streamed: tuple[str, ...] = ()) -> tuple[int, int]:
    """Read every XML part of an Office zip once, in 1 MiB steps, before a parser builds its tree.

    Counts the XML elements of the parts a parser builds whole (all but the parts whose lowercase
    names start with one of ``streamed``: openpyxl streams worksheets) against ``max_xml_elements``,
    and the elements named ``tag`` (any namespace prefix; ``p`` paragraphs, ``c`` cells) in the
    parts under ``counted_in`` against the limit ``unit`` names (``paragraphs`` or ``cells``). Also
    refuses an XML part over ``max_part_bytes`` (whatever its name) and a DTD (Office files never
    declare one; entity expansion is an attack). Parts that are not XML (images) are passed over.
    Returns (elements, tags).
    """
    limits = budget.limits
    setting = {"paragraphs": "max_paragraphs", "cells": "max_cells"}[unit]
    tag_limit: int = getattr(limits, setting)
    pattern = re.compile(rb"<(?:[A-Za-z_][\w.\-]{0,31}:)?" + re.escape(tag.encode()) + rb"[\s/>]")
    elements = tags = 0
    for info in archive.infolist():
        if info.is_dir():
            continue
        name = info.filename.lower()
        whole = not (streamed and name.startswith(streamed))
        counting = name.startswith(counted_in)
        last = tail = dtd_tail = b""
        size = 0
        try:
            with archive.open(info) as member:
                for raw_size, data in _xml_chunks(member):
                    size += raw_size
                    if size > limits.max_part_bytes:
                        raise _part_too_large(info.filename, size, limits)
                    window = dtd_tail + data
                    if _DTD.search(window):
                        raise DocumentError("corrupt", f"declares a DTD in {info.filename!r}, which Office files never "
                                            "do (XML entity expansion is an attack); re-save it from its app")
                    dtd_tail = window[-9:]
                    if whole:
                        pairs = last + data
                        elements += (data.count(b"<") - pairs.count(b"</") - pairs.count(b"<?")
                                     - pairs.count(b"<!"))
                        last = data[-1:]
                        if elements > limits.max_xml_elements:
                            raise limit_error("max_xml_elements", limits.max_xml_elements,
                                              f"holds more than {limits.max_xml_elements:,} XML elements",
                                              suspicion="far more markup than a document needs")
                    if counting:
                        buffer = tail + data
                        tags += len(pattern.findall(buffer)) - len(pattern.findall(tail))
                        tail = buffer[-_TAG_SPAN:]
                        if tags > tag_limit:
                            raise limit_error(setting, tag_limit, f"has more than {tag_limit:,} {unit}")
                    budget.check()
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
            if isinstance(exc, DocumentError):
                raise
            raise DocumentError("corrupt", f"part {info.filename!r} cannot be read ({exc}); re-save the file") from None
    return elements, tags


def _xml_chunks(member: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(raw bytes read, the same text as UTF-8) per step; nothing for a member that is not XML."""
    first = member.read(_CHUNK)
    encoding = _xml_encoding(first)
    if encoding is None:
        return
    if encoding == "utf-8":
        chunk = first
        while chunk:
            yield len(chunk), chunk
            chunk = member.read(_CHUNK)
        return
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    chunk = first
    while chunk:
        yield len(chunk), decoder.decode(chunk).encode("utf-8")
        chunk = member.read(_CHUNK)


def _xml_encoding(head: bytes) -> str | None:
    """How an XML part is encoded (from its BOM or first bytes), or None when it does not start like XML."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8"
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    for prefix, encoding in ((b"\x00\x00\x00<", "utf-32-be"), (b"<\x00\x00\x00", "utf-32-le"),
                             (b"\x00<", "utf-16-be"), (b"<\x00", "utf-16-le")):
        if head.startswith(prefix):
            return encoding
    start = head.lstrip(b" \t\r\n")  # XML may start with blanks (a megabyte of them, too: keep reading)
    return "utf-8" if not start or start.startswith(b"<") else None


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
