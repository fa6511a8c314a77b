"""Bounded work per file (issue 25, part 4): each limit refuses a file with its reason and the
setting to raise, before the parser builds anything when the zip or PDF structure shows it,
else as soon as extraction passes it. Hostile files are generated here, small: the limits are
lowered instead of the files made big. Time is a timer the test moves, never the wall clock.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from docfiles import (
    Ticks,
    docx_with_body,
    make_docx,
    make_iwork,
    make_pdf,
    make_pptx,
    make_xlsx,
    rewrite,
    xlsx_rows,
)

from shared_core.config import Config, ConfigError
from shared_core.documents import Budget, DocumentError, LimitExceeded, Limits, load_document
from shared_core.documents.safety import scan_xml

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"  # WordprocessingML


def refused(path: Path, *, budget: Budget | None = None, **limits: float) -> LimitExceeded:
    """The LimitExceeded loading ``path`` raises; it names the file, the limit and the setting."""
    with pytest.raises(LimitExceeded) as info:
        load_document(path, limits=Limits(**limits) if limits else None, budget=budget)
    error = info.value
    assert error.path == str(path) and str(error).startswith(f"{path}: ")
    assert error.setting.startswith("knowledge_base.") and f"raise {error.setting}" in error.message
    assert "(limit " in error.message
    return error


def not_called(what: str):  # noqa: ANN201 - a stand-in for a parser that must not run
    def fail(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError(f"{what} ran: the file should have been refused before parsing")
    return fail


# -- Word ------------------------------------------------------------------------------------------


def test_docx_of_200k_empty_paragraphs_is_refused_before_python_docx_parses_it(tmp_path, monkeypatch):
    import docx

    path = docx_with_body(tmp_path / "empty.docx", "<w:p/>" * 200_000)
    assert path.stat().st_size < 100_000  # 1.2 MB of XML, deflated
    monkeypatch.setattr(docx, "Document", not_called("python-docx"))
    # its zip directory alone gives it away (the part expands over 200 times) ...
    assert refused(path).setting == "knowledge_base.max_zip_ratio"
    # ... and with that check loosened, counting its paragraphs does, before python-docx parses them
    error = refused(path, max_paragraphs=10_000, max_zip_ratio=10_000)
    assert error.reason == "too-large" and error.setting == "knowledge_base.max_paragraphs" and error.limit == 10_000
    assert error.message.startswith("has more than 10,000 paragraphs (limit 10,000)")


@pytest.mark.parametrize("encoding,paragraph,lead", [
    ("utf-8", f'<x:p xmlns:x="{W}"/>', ""),  # another namespace prefix
    ("utf-16", "<w:p/>", ""),  # another encoding
    ("utf-8", "<w:p/>", " " * (3 * 2**20 // 2)),  # 1.5 MiB of blanks before the XML starts
])
def test_paragraphs_are_counted_whatever_their_prefix_or_encoding(tmp_path, monkeypatch, encoding, paragraph, lead):
    import docx

    path = docx_with_body(tmp_path / "disguised.docx", paragraph * 5_000, encoding=encoding, lead=lead)
    monkeypatch.setattr(docx, "Document", not_called("python-docx"))
    assert refused(path, max_paragraphs=1_000, max_zip_ratio=10_000).setting == "knowledge_base.max_paragraphs"
    with zipfile.ZipFile(path) as archive:
        assert scan_xml(archive, Budget(), tag="p", unit="paragraphs")[1] == 5_000


def test_docx_within_the_limits_still_reads_its_text(tmp_path):
    path = docx_with_body(tmp_path / "sparse.docx", "<w:p/>" * 500 + "<w:p><w:r><w:t>the one line</w:t></w:r></w:p>")
    budget = Budget(Limits(max_paragraphs=1_000))
    assert load_document(path, budget=budget).text == "the one line"
    assert budget.paragraphs == 501


def test_an_xml_part_over_max_part_bytes_is_refused_by_name_or_by_content(tmp_path, monkeypatch):
    import docx

    padding = "<w:p/>" * 400_000  # 2.3 MiB of XML that deflates to a few kilobytes
    named = docx_with_body(tmp_path / "named.docx", padding)
    hidden = docx_with_body(tmp_path / "hidden.docx", "", extra={"word/media/image9.png": padding.encode()})
    image = docx_with_body(tmp_path / "image.docx", "", extra={"word/media/image1.png": b"\x89PNG" + b"\x01" * 2**21})
    monkeypatch.setattr(docx, "Document", not_called("python-docx"))
    error = refused(named, max_part_bytes=2**20, max_zip_ratio=10_000)
    assert error.reason == "too-large" and error.setting == "knowledge_base.max_part_bytes"
    assert "XML part 'word/document.xml'" in error.message and "(limit 1 MiB)" in error.message
    # the same XML under a name that does not say so is measured as it is read
    error = refused(hidden, max_part_bytes=2**20, max_zip_ratio=10_000)
    assert "'word/media/image9.png'" in error.message
    # binary parts (images) are no XML a parser reads: only max_unzipped_bytes counts them
    monkeypatch.undo()
    with pytest.raises(DocumentError) as info:
        load_document(image, limits=Limits(max_part_bytes=2**20, max_zip_ratio=10_000))
    assert info.value.reason == "empty"  # read through: it has no text


def test_markup_past_max_xml_elements_is_refused_before_parsing(tmp_path, monkeypatch):
    import docx

    path = docx_with_body(tmp_path / "runs.docx", "<w:p>" + "<w:r/>" * 50_000 + "</w:p>")  # one paragraph
    monkeypatch.setattr(docx, "Document", not_called("python-docx"))
    error = refused(path, max_xml_elements=40_000)
    assert error.setting == "knowledge_base.max_xml_elements" and "more than 40,000 XML elements" in error.message


def test_a_dtd_in_an_office_part_is_refused(tmp_path):
    path = docx_with_body(tmp_path / "laughs.docx", "")
    with zipfile.ZipFile(path) as archive:
        xml = archive.read("word/document.xml")
    xml = xml.replace(b"?>", b'?><!DOCTYPE w:document [<!ENTITY lol "lol">]>', 1)
    path.write_bytes(rewrite(path.read_bytes(), {"word/document.xml": xml}))
    with pytest.raises(DocumentError) as info:
        load_document(path)
    assert not isinstance(info.value, LimitExceeded) and info.value.reason == "corrupt" and "DTD" in info.value.message


def test_a_table_cell_spanning_a_billion_columns_is_one_cell(tmp_path):
    span = '<w:tc><w:tcPr><w:gridSpan w:val="1000000000"/></w:tcPr><w:p><w:r><w:t>{}</w:t></w:r></w:p></w:tc>'
    table = "<w:tbl>" + "".join(f"<w:tr>{span.format(text)}</w:tr>" for text in ("Topic", "Ops", "Dev")) + "</w:tbl>"
    budget = Budget(Limits(max_cells=3))
    doc = load_document(docx_with_body(tmp_path / "wide.docx", table), budget=budget)
    assert doc.text.splitlines() == ["Topic: Ops", "Topic: Dev"] and budget.cells == 3


# -- Excel, CSV, PowerPoint ------------------------------------------------------------------------


def test_xlsx_with_too_many_cells_is_refused_before_openpyxl_reads_it(tmp_path, monkeypatch):
    import openpyxl

    path = xlsx_rows(tmp_path / "wide.xlsx", rows=100, columns=30)
    monkeypatch.setattr(openpyxl, "load_workbook", not_called("openpyxl"))
    error = refused(path, max_cells=1_000)
    assert error.reason == "too-large" and error.setting == "knowledge_base.max_cells"
    assert error.message.startswith("has more than 1,000 cells (limit 1,000)")


def test_xlsx_rows_far_apart_are_counted_as_they_are_read(tmp_path):
    path = xlsx_rows(tmp_path / "far.xlsx", rows=2, columns=1)
    sheet = ('<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
             '<row r="1"><c r="A1" t="inlineStr"><is><t>Top</t></is></c></row>'
             '<row r="200000"><c r="A200000" t="inlineStr"><is><t>Bottom</t></is></c></row></sheetData></worksheet>')
    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.startswith("xl/worksheets/"))
    path.write_bytes(rewrite(path.read_bytes(), {name: sheet.encode()}))
    # two cells in the file, but openpyxl yields the 199,998 rows between them one by one
    assert refused(path, max_cells=1_000).setting == "knowledge_base.max_cells"
    doc = load_document(path, limits=Limits(max_cells=300_000))
    assert doc.section_texts()[-1] == ({"sheet": "Data", "row": 200_000}, "Top: Bottom")


def test_csv_with_too_many_cells_is_refused(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("id,value\n" + "".join(f"{i},{i * i}\n" for i in range(2_000)))
    assert refused(path, max_cells=1_000).setting == "knowledge_base.max_cells"
    assert load_document(path, limits=Limits(max_cells=5_000)).metadata["rows"] == 2_000


def test_pptx_slides_count_as_pages_and_paragraphs_are_counted(tmp_path, monkeypatch):
    import pptx

    path = make_pptx(tmp_path / "launch.pptx")  # three slides
    with monkeypatch.context() as patch:
        patch.setattr(pptx, "Presentation", not_called("python-pptx"))
        error = refused(path, max_pages=2)
        assert error.setting == "knowledge_base.max_pages" and error.message.startswith("has 3 slides (limit 2)")
        assert refused(path, max_paragraphs=20).setting == "knowledge_base.max_paragraphs"
    budget = Budget()
    load_document(path, budget=budget)
    assert budget.pages == 3 and budget.cells == 4


# -- PDF and iWork ---------------------------------------------------------------------------------


def test_pdf_object_count_and_page_content_size(tmp_path):
    path = make_pdf(tmp_path / "report.pdf", ["Invoices are due within 30 days", "HMAC signatures"])
    error = refused(path, max_pdf_objects=3)
    assert error.setting == "knowledge_base.max_pdf_objects" and "objects (limit 3)" in error.message
    error = refused(path, max_pdf_page_bytes=20)
    assert error.setting == "knowledge_base.max_pdf_page_bytes" and error.message.startswith("page 1 holds")
    assert "Invoices" in load_document(path).text


def test_pdf_time_budget_is_checked_within_a_page(tmp_path):
    path = make_pdf(tmp_path / "one.pdf", ["\n".join(f"line {i} of a long page" for i in range(40))])
    # outside its one page, reading it checks the clock three times (start, open, page count):
    # the other checks, past 10 s, are made between the drawing operators of the page
    error = refused(path, budget=Budget(Limits(max_seconds_per_file=10), timer=Ticks()))
    assert error.setting == "knowledge_base.max_seconds_per_file"
    assert error.message.startswith("took more than 10 s to read")
    assert load_document(path, budget=Budget(Limits(max_seconds_per_file=10), timer=lambda: 0.0)).text


@pytest.mark.parametrize("limits,setting", [({"max_pages": 1}, "max_pages"), ({"max_file_bytes": 1_000}, "max_file_bytes")])
def test_iwork_previews_are_held_to_the_pdf_limits(tmp_path, limits, setting):
    preview = make_pdf(tmp_path / "preview.pdf", ["Plan for the garden", "Budget for the garden"])
    preview.write_bytes(preview.read_bytes() + b"\n" * 4_000)  # deflates to nothing: the preview is bigger than the file
    path = make_iwork(tmp_path / "plan.pages", preview)
    if setting == "max_file_bytes":
        limits = {"max_file_bytes": path.stat().st_size}
        assert preview.stat().st_size > path.stat().st_size
    error = refused(path, max_zip_ratio=10_000, **limits)
    assert error.setting == f"knowledge_base.{setting}"


# -- the time budget -------------------------------------------------------------------------------


def test_time_budget_stops_a_docx_between_paragraphs(tmp_path):
    path = docx_with_body(tmp_path / "long.docx", "<w:p><w:r><w:t>a line</w:t></w:r></w:p>" * 100)
    error = refused(path, budget=Budget(Limits(max_seconds_per_file=30), timer=Ticks()))
    assert error.reason == "too-large" and error.limit == 30
    assert error.message == ("took more than 30 s to read (stopped at 31.0 s) (limit 30 s); split the file, "
                             "or raise knowledge_base.max_seconds_per_file")
    assert load_document(path, budget=Budget(Limits(max_seconds_per_file=30), timer=lambda: 0.0)).text


# -- normal files and settings -----------------------------------------------------------------------


def test_normal_files_read_as_before_within_the_default_limits(tmp_path):
    expected = {
        make_docx(tmp_path / "handbook.docx"): ("Deploys are frozen on Fridays after 3pm.", {"paragraphs": 6, "cells": 9}),
        make_xlsx(tmp_path / "budget.xlsx"): ("Item: Doubled; Cost: 84", {"cells": 16}),  # cells present in rows
        make_pptx(tmp_path / "launch.pptx"): ("Notes: Mention the weather constraints", {"pages": 3}),
        make_pdf(tmp_path / "report.pdf", ["Invoices are due within 30 days"]): ("Invoices are due within 30 days",
                                                                                {"pages": 1}),
    }
    for path, (line, counts) in expected.items():
        budget = Budget()
        assert line in load_document(path, budget=budget).text.splitlines()
        assert {name: getattr(budget, name) for name in counts} == counts


def test_limits_are_knowledge_base_settings_and_are_validated():
    config = Config.from_dict({"knowledge_base": {"max_paragraphs": 10, "max_cells": 20, "max_seconds_per_file": 2.5}})
    limits = Limits.from_config(config.knowledge_base)
    assert (limits.max_paragraphs, limits.max_cells, limits.max_seconds_per_file) == (10, 20, 2.5)
    assert Limits.from_config(Config().knowledge_base) == Limits()  # the same defaults in both places
    for name, value in [("max_cells", 0), ("max_xml_elements", -1), ("max_seconds_per_file", 0),
                        ("max_seconds_per_file", float("inf")), ("max_part_bytes", 0)]:
        with pytest.raises(ConfigError, match=f"knowledge_base.{name}"):
            Config.from_dict({"knowledge_base": {name: value}})


def test_the_docs_example_runs_and_prints_what_it_says(tmp_path, monkeypatch, capsys):
    doc = Path(__file__).resolve().parents[2] / "docs" / "knowledge-base.md"
    section = doc.read_text(encoding="utf-8").split("## Limits: bounded work per file", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{doc.name}[limits example]", "exec"), {"__name__": "docs_limits_example"})  # noqa: S102
    summary, failure, error = capsys.readouterr().out.splitlines()
    assert summary.startswith("1 added, 0 updated, 0 unchanged, 1 failed (1 chunks, ")
    assert failure == (f"{tmp_path / 'inbox' / 'export.csv'}: has more than 2,000 cells (limit 2,000); split the "
                       "file, or raise knowledge_base.max_cells [too-large]")
    assert error == "too-large knowledge_base.max_cells 2000"
