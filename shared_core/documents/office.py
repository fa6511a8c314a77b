"""Office Open XML: Word (python-docx), Excel (openpyxl) and PowerPoint (python-pptx).

Each file's zip directory is checked first (see ``safety.check_zip``) and its XML parts are
scanned for their size and element counts (``safety.scan_xml``), so a zip bomb, or megabytes
of empty paragraphs, is refused before a parser builds a tree. While the text is extracted a
:class:`~shared_core.documents.safety.Budget` counts paragraphs, cells, slides and time.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from .errors import DocumentError
from .records import Section, TextBuilder, check_length
from .safety import Budget, check_zip, limit_error, scan_xml
from .tables import TableRenderer, render_table

__all__ = ["load_docx", "load_xlsx", "load_pptx"]

Extracted = tuple[str, list[Section], dict[str, Any]]

_SHEETS = ("xl/worksheets/",)
_SLIDE = re.compile(r"ppt/slides/slide\d+\.xml")


def _need(module: str, package: str, what: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise DocumentError("missing-dependency", f"reading {what} needs {package}: pip install {package}") from None


def _core_properties(props: Any) -> dict[str, Any]:
    """title, author, subject, keywords, category, created, modified, last_modified_by (those set)."""
    out: dict[str, Any] = {}
    for attr, name in (("title", "title"), ("author", "author"), ("creator", "author"), ("subject", "subject"),
                       ("keywords", "keywords"), ("category", "category"), ("description", "description"),
                       ("comments", "description"), ("last_modified_by", "last_modified_by"),
                       ("lastModifiedBy", "last_modified_by"), ("created", "created"), ("modified", "modified")):
        if name in out:
            continue
        value = getattr(props, attr, None)
        if isinstance(value, datetime):
            out[name] = value.isoformat()
        elif isinstance(value, str) and value.strip():
            out[name] = value.strip()
    return out


# -- Word ----------------------------------------------------------------------------------------


def load_docx(data: bytes, budget: Budget) -> Extracted:
    """Paragraphs and tables in body order; a section per heading (``{"heading": "Intro > Setup"}``)."""
    _need("docx", "python-docx", "DOCX")
    import docx
    from docx.oxml.ns import qn
    from docx.table import Table

    limits = budget.limits
    text_tags = frozenset((qn("w:r"), qn("w:hyperlink")))  # the children that hold a paragraph's text
    with check_zip(io.BytesIO(data), limits, "DOCX file") as archive:
        scan_xml(archive, budget, tag="p", unit="paragraphs")
    document = docx.Document(io.BytesIO(data))
    budget.check()
    styles = _ParagraphStyles(document)
    builder = TextBuilder(limits.max_characters)
    path: list[tuple[int, str]] = []  # (level, text) of the headings above the current block
    headings: list[str] = []
    first_title: str | None = None
    block: list[str] = []
    block_size = 0

    def flush() -> None:
        nonlocal block_size
        if block:
            meta = {"heading": " > ".join(text for _, text in path)} if path else {}
            builder.add("\n".join(block), **meta)
            block.clear()
            block_size = 0

    for item in document.iter_inner_content():
        if isinstance(item, Table):
            lines = list(render_table(_docx_rows(item, budget)))
        else:
            budget.count_paragraphs()
            text = _paragraph_text(item._p, text_tags).strip()
            level = styles.heading_level(item)
            if text and level is not None:
                flush()
                while path and path[-1][0] >= level:
                    path.pop()
                path.append((level, text))
                headings.append(text)
                if first_title is None and level in (0, 1):
                    first_title = text
            lines = [text] if text else []
        block.extend(lines)
        block_size += sum(len(line) + 1 for line in lines)
        check_length(builder.length + block_size, limits.max_characters)
    flush()
    metadata = _core_properties(document.core_properties)
    if "title" not in metadata and first_title:
        metadata["title"] = first_title
    if headings:
        metadata["headings"] = headings[:200]
    return builder.text(), builder.sections, metadata


class _ParagraphStyles:
    """Paragraph style names by style id, read once.

    python-docx's ``paragraph.style`` finds the default style by reading every style of the
    document, for each paragraph: with Word's ~160 styles, 4 ms a paragraph, so 2 MB of empty
    paragraphs took minutes. The rules are python-docx's: an unknown id, or one of a style that
    is not a paragraph style, means the (last) default paragraph style.
    """

    def __init__(self, document: Any) -> None:
        from docx.enum.style import WD_STYLE_TYPE
        from docx.exceptions import InvalidXmlError
        from docx.oxml.ns import qn
        from docx.styles import BabelFish

        self.names: dict[str, str | None] = {}
        self.default: str | None = None
        for style in document.styles.element.iterchildren(qn("w:style")):
            try:
                if style.type != WD_STYLE_TYPE.PARAGRAPH:
                    continue
                raw = style.name_val
                name = BabelFish.internal2ui(raw) if raw else None
                if style.styleId is not None:
                    self.names.setdefault(style.styleId, name)
                if style.default:
                    self.default = name
            except (ValueError, KeyError, AttributeError, InvalidXmlError):
                continue  # a malformed style names nothing; its paragraphs fall back to the default

    def heading_level(self, paragraph: Any) -> int | None:
        """0 for a Title, n for "Heading n" (1 for a plain "Heading"), None for body text."""
        try:
            style_id = paragraph._p.style
        except (ValueError, AttributeError):
            return None
        name = self.names.get(style_id, self.default) if style_id is not None else self.default
        name = name or ""
        if name == "Title":
            return 0
        if name.startswith("Heading"):
            rest = name[len("Heading"):].strip()
            return int(rest) if rest.isdigit() else 1
        return None


def _paragraph_text(p: Any, text_tags: frozenset[str]) -> str:
    """python-docx's ``paragraph.text`` (its runs' and hyperlinks' text, in order) without its XPath
    query, which cost more than everything else done for an empty paragraph."""
    return "".join(child.text for child in p if child.tag in text_tags)


def _docx_rows(table: Any, budget: Budget) -> Iterator[list[str]]:
    """Each row's cells from the XML: a horizontally merged cell once, a vertically merged one
    repeating the text of the cell above it (as python-docx does).

    Not python-docx's ``row.cells``: it repeats a cell once per grid column it spans (one
    ``gridSpan="1000000000"`` makes a billion) and finds a vertical merge's first cell by walking
    up row by row (quadratic in the rows).
    """
    from docx.table import _Cell

    above: dict[int, str] = {}  # grid column -> the text of the cell last seen starting there
    for tr in table._tbl.tr_lst:
        cells: list[str] = []
        offset = tr.grid_before
        for tc in tr.tc_lst:
            budget.count_cells()
            text = above.get(offset, "") if tc.vMerge == "continue" else _Cell(tc, table).text
            above[offset] = text
            cells.append(text)
            offset += max(1, tc.grid_span)
        yield cells


# -- Excel ---------------------------------------------------------------------------------------


def load_xlsx(data: bytes, budget: Budget) -> Extracted:
    """One block per sheet, ``Sheet: name`` then header-aware rows; cached values, never formulas.

    Sections are rows (``{"sheet": "Q1", "row": 7}``), so a chunk knows its sheet and row range.
    A formula cell whose file holds no cached result (never opened in a spreadsheet app) is empty.
    """
    _need("openpyxl", "openpyxl", "XLSX")
    import openpyxl

    limits = budget.limits
    with check_zip(io.BytesIO(data), limits, "XLSX file") as archive:
        # openpyxl (read-only) streams worksheets; the other parts it parses whole
        scan_xml(archive, budget, tag="c", unit="cells", counted_in=_SHEETS, streamed=_SHEETS)
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        builder = TextBuilder(limits.max_characters)
        sheets: list[str] = []
        for sheet in workbook.worksheets:
            sheets.append(sheet.title)
            if hasattr(sheet, "reset_dimensions"):
                sheet.reset_dimensions()  # trust the cells, not the declared range (it may claim a million rows)
            renderer = TableRenderer()
            header_row = 0
            first = True
            for number, values in enumerate(sheet.iter_rows(values_only=True), 1):
                budget.count_cells(max(1, len(values)))  # rows between two far apart come as empty rows
                decided = renderer.decided
                line = renderer.render(values)
                if renderer.decided and not decided:
                    header_row = number
                if line is None and not (renderer.header and header_row == number):
                    continue
                if first:
                    builder.add(f"Sheet: {sheet.title}", sheet=sheet.title)
                    first = False
                    if renderer.header:
                        builder.add(f"Columns: {renderer.header_line()}", separator="\n", sheet=sheet.title,
                                    row=header_row)
                if line is not None:
                    builder.add(line, separator="\n", sheet=sheet.title, row=number)
        metadata = _core_properties(workbook.properties)
    finally:
        workbook.close()
    metadata["sheet_count"] = len(sheets)
    metadata["sheets"] = sheets
    return builder.text(), builder.sections, metadata


# -- PowerPoint -----------------------------------------------------------------------------------


def load_pptx(data: bytes, budget: Budget) -> Extracted:
    """One section per slide (``{"slide": n}``): title, text of every shape and table, then the notes."""
    _need("pptx", "python-pptx", "PPTX")
    import pptx

    limits = budget.limits
    with check_zip(io.BytesIO(data), limits, "PPTX file") as archive:
        slides = sum(1 for name in archive.namelist() if _SLIDE.fullmatch(name.lower()))
        if slides > limits.max_pages:
            raise limit_error("max_pages", limits.max_pages, f"has {slides:,} slides")
        scan_xml(archive, budget, tag="p", unit="paragraphs")
    presentation = pptx.Presentation(io.BytesIO(data))
    builder = TextBuilder(limits.max_characters)
    count = 0
    for number, slide in enumerate(presentation.slides, 1):
        budget.count_pages(unit="slides")
        count = number
        title_shape = slide.shapes.title
        title = _frame_text(title_shape.text_frame, budget) if title_shape is not None and title_shape.has_text_frame else ""
        lines = [f"Slide {number}: {title}" if title else f"Slide {number}"]
        for shape in _shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            lines.extend(_shape_lines(shape, budget))
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = _frame_text(frame, budget) if frame is not None else ""
            if notes:
                lines.append(f"Notes: {notes}")
        if len(lines) > 1 or title:
            builder.add("\n".join(lines), slide=number)
    metadata = _core_properties(presentation.core_properties)
    metadata["slide_count"] = count
    return builder.text(), builder.sections, metadata


def _shapes(shapes: Any) -> Iterator[Any]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _shape_lines(shape: Any, budget: Budget) -> list[str]:
    budget.check()
    if getattr(shape, "has_table", False) and shape.has_table:
        return list(render_table(_pptx_rows(shape.table, budget)))
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        text = _frame_text(shape.text_frame, budget)
        return [text] if text else []
    return []


def _pptx_rows(table: Any, budget: Budget) -> Iterator[list[str]]:
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            budget.count_cells()
            cells.append(cell.text)
        yield cells


def _frame_text(frame: Any, budget: Budget) -> str:
    """A text frame's text, its paragraphs counted (empty ones too)."""
    paragraphs = [paragraph.text for paragraph in frame.paragraphs]
    budget.count_paragraphs(max(1, len(paragraphs)))
    return "\n".join(paragraphs).strip()
