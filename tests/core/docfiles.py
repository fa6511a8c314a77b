"""Small documents generated for the knowledge-base tests (no binary files in the repository).

Good files are written with the same libraries users' files come from (reportlab, pypdf,
python-docx, openpyxl, python-pptx); broken ones are made from good ones: truncated,
encrypted, renamed, or zipped with a directory that declares gigabytes; hostile ones
(paragraphs by the hundred thousand, spreadsheets too wide) by rewriting their XML.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import struct
import zipfile
from collections.abc import Sequence
from pathlib import Path


def make_pdf(path: Path, pages: Sequence[str], *, title: str | None = None, author: str | None = None) -> Path:
    """One line of text per page (an empty string makes a blank page)."""
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path))
    if title:
        pdf.setTitle(title)
    if author:
        pdf.setAuthor(author)
    for text in pages:
        y = 760
        for line in text.split("\n"):
            if line:
                pdf.drawString(72, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()
    return path


def make_encrypted_pdf(path: Path, source: Path, *, user_password: str, owner_password: str = "owner") -> Path:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(str(source)))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="RC4-128")
    with open(path, "wb") as fh:
        writer.write(fh)
    return path


def truncate(path: Path, source: Path, keep: float = 0.6) -> Path:
    data = source.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def make_docx(path: Path, *, title: str | None = "Team handbook", author: str | None = "Ada Lovelace") -> Path:
    import docx

    document = docx.Document()
    if title is not None:
        document.core_properties.title = title
    if author is not None:
        document.core_properties.author = author
    document.add_heading("Onboarding", 1)
    document.add_paragraph("Welcome to the platform team. Your first week is about the deploy pipeline.")
    document.add_heading("Accounts", 2)
    document.add_paragraph("Request VPN access from the helpdesk on day one.")
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([["Name", "Role", "Desk"], ["Grace", "Mentor", "4B"], ["Linus", "Reviewer", "2A"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_heading("Policies", 1)
    document.add_paragraph("Deploys are frozen on Fridays after 3pm.")
    document.save(str(path))
    return path


def make_xlsx(path: Path) -> Path:
    """Sheets Budget (header + rows + a formula whose cached value is 84) and Notes (no header)."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Budget"
    sheet.append(["Item", "Cost", "Due"])
    sheet.append(["Laptops", 42, dt.datetime(2026, 3, 1)])
    sheet.append(["Monitors", 12.5, None])
    sheet["B4"] = "=B2*2"
    sheet["A4"] = "Doubled"
    notes = workbook.create_sheet("Notes")
    notes.append([1, 2, 3])
    notes.append([4, 5, 6])
    workbook.create_sheet("Blank")
    workbook.properties.title = "Budget 2026"
    workbook.properties.creator = "Grace Hopper"
    workbook.save(str(path))
    # openpyxl cannot store a formula's cached result; a spreadsheet app would. Add it as Excel does.
    return _rewrite_member(path, "xl/worksheets/sheet1.xml",
                           lambda xml: re.sub(rb"(<c r=\"B4\"[^>]*>\s*<f>[^<]*</f>)(\s*<v>\s*</v>)?", rb"\1<v>84</v>", xml))


def make_pptx(path: Path) -> Path:
    import pptx
    from pptx.util import Inches

    presentation = pptx.Presentation()
    presentation.core_properties.author = "Katherine Johnson"
    presentation.core_properties.title = "Launch review"
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Launch window"
    slide.placeholders[1].text = "Liftoff at 09:32 UTC\nBackup window on Thursday"
    slide.notes_slide.notes_text_frame.text = "Mention the weather constraints"
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    second.shapes.title.text = "Budget"
    rows = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for r, row in enumerate([["Team", "Spend"], ["Avionics", "1.2M"]]):
        for c, value in enumerate(row):
            rows.cell(r, c).text = value
    group = second.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(4), Inches(3), Inches(1))
    box.text_frame.text = "Grouped caption about telemetry"
    presentation.slides.add_slide(presentation.slide_layouts[6])  # a blank slide
    presentation.save(str(path))
    return path


def make_zip_bomb(path: Path, marker: str, *, declared: int = 0xFFFFFFF0) -> Path:
    """A small valid zip with the OOXML part ``marker`` whose directory declares ``declared`` bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr(marker, "<x/>" * 100)
    data = bytearray(buffer.getvalue())
    for signature, size_offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        start = 0
        while (index := data.find(signature, start)) >= 0:
            name_length = struct.unpack_from("<H", data, index + (28 if signature == b"PK\x01\x02" else 26))[0]
            name_at = index + (46 if signature == b"PK\x01\x02" else 30)
            if bytes(data[name_at : name_at + name_length]).decode() == marker:
                struct.pack_into("<I", data, index + size_offset, declared)
            start = index + 4
    path.write_bytes(bytes(data))
    return path


def make_ratio_bomb(path: Path, marker: str, megabytes: int = 4) -> Path:
    """An honest zip whose one part is megabytes of zeros deflated to a few kilobytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr(marker, b"\0" * (megabytes * 2**20))
    return path


def make_iwork(path: Path, preview_pdf: Path | None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("Index/Document.iwa", b"\x00\x01protobuf")
        archive.writestr("Metadata/Properties.plist", "<plist/>")
        if preview_pdf is not None:
            archive.write(preview_pdf, "QuickLook/Preview.pdf")
    return path


def rewrite(source: bytes, changes: dict[str, bytes]) -> bytes:
    """The zip ``source`` with some members replaced or added."""
    with zipfile.ZipFile(io.BytesIO(source)) as archive:
        parts = {info.filename: archive.read(info) for info in archive.infolist()}
    parts.update(changes)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return out.getvalue()


def docx_with_body(path: Path, body: str, *, encoding: str = "utf-8", lead: str = "",
                   extra: dict[str, bytes] | None = None) -> Path:
    """A python-docx document whose body starts with ``body`` (WordprocessingML), its document.xml
    in ``encoding`` and, with ``lead`` (blanks), starting with it instead of an XML declaration."""
    import docx

    buffer = io.BytesIO()
    docx.Document().save(buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as archive:
        xml = archive.read("word/document.xml").decode("utf-8")
    head, rest = xml.split("<w:body>", 1)
    xml = head.replace('encoding="UTF-8"', f'encoding="{encoding.upper()}"') + "<w:body>" + body + rest
    if lead:
        xml = lead + xml[xml.index("?>") + 2:].lstrip()
    data = xml.encode("utf-16") if encoding == "utf-16" else xml.encode(encoding)
    path.write_bytes(rewrite(buffer.getvalue(), {"word/document.xml": data, **(extra or {})}))
    return path


def xlsx_rows(path: Path, rows: int, columns: int) -> Path:
    """A one-sheet workbook ("Data"): a header row, then rows of numbers."""
    import openpyxl

    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet("Data")
    sheet.append([f"Column {c}" for c in range(columns)])
    for r in range(rows - 1):
        sheet.append([r * columns + c for c in range(columns)])
    workbook.save(str(path))
    return path


class Ticks:
    """A timer for a document Budget that moves one second each time it is read (never the wall clock)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _rewrite_member(path: Path, member: str, change) -> Path:  # noqa: ANN001
    with zipfile.ZipFile(path) as archive:
        parts = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in parts:
            archive.writestr(info, change(data) if info.filename == member else data)
    return path
