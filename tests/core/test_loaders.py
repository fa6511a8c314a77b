"""Document loaders: one test group per format, one per way a file can be bad."""

from __future__ import annotations

import sys
import zipfile

import pytest
from docfiles import (
    make_docx,
    make_encrypted_pdf,
    make_iwork,
    make_pdf,
    make_pptx,
    make_ratio_bomb,
    make_xlsx,
    make_zip_bomb,
    truncate,
)

from shared_core.documents import (
    SUPPORTED_EXTENSIONS,
    DocumentError,
    Limits,
    LoadedDocument,
    load_document,
)
from shared_core.documents.safety import decode_text, sniff
from shared_core.documents.tables import format_value, looks_like_header


def reason_of(path, **limits) -> DocumentError:
    with pytest.raises(DocumentError) as info:
        load_document(path, limits=Limits(**limits) if limits else None)
    assert info.value.path == str(path)
    assert str(path) in str(info.value)
    return info.value


# -- PDF ---------------------------------------------------------------------------------------


def test_pdf_pages_become_numbered_sections_with_document_info(tmp_path):
    path = make_pdf(tmp_path / "report.pdf", ["Invoices are due in 30 days", "", "HMAC signatures protect webhooks"],
                    title="Quarterly report", author="Ada Lovelace")
    doc = load_document(path)
    assert isinstance(doc, LoadedDocument)
    assert (doc.file_name, doc.mime_type, doc.format) == ("report.pdf", "application/pdf", "pdf")
    assert doc.size_bytes == path.stat().st_size and doc.source == path.absolute()
    assert doc.metadata["title"] == "Quarterly report" and doc.title == "Quarterly report"
    assert doc.metadata["author"] == "Ada Lovelace" and doc.author == "Ada Lovelace"
    assert doc.metadata["page_count"] == 3
    # the blank page adds no section, and the numbering stays true to the file
    assert [(meta, text) for meta, text in doc.section_texts()] == [
        ({"page": 1}, "Invoices are due in 30 days"),
        ({"page": 3}, "HMAC signatures protect webhooks"),
    ]
    assert doc.locate(0, len(doc.text)) == {"page": 1, "page_end": 3}


def test_truncated_pdf_is_corrupt(tmp_path):
    good = make_pdf(tmp_path / "good.pdf", ["some text"] * 3)
    error = reason_of(truncate(tmp_path / "cut.pdf", good))
    assert error.reason == "corrupt" and "truncated" in error.message


def test_garbled_pdf_is_corrupt(tmp_path):
    path = tmp_path / "garbled.pdf"
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 20 + b"\n%%EOF\n")
    assert reason_of(path).reason == "corrupt"


def test_password_protected_pdf_is_refused_but_owner_only_encryption_opens(tmp_path):
    good = make_pdf(tmp_path / "good.pdf", ["classified budget numbers"])
    locked = make_encrypted_pdf(tmp_path / "locked.pdf", good, user_password="secret")
    error = reason_of(locked)
    assert error.reason == "encrypted" and "password" in error.message
    owner_only = make_encrypted_pdf(tmp_path / "owner.pdf", good, user_password="")
    assert "classified budget numbers" in load_document(owner_only).text


def test_pdf_without_text_says_to_run_ocr(tmp_path):
    error = reason_of(make_pdf(tmp_path / "scan.pdf", ["", ""]))
    assert error.reason == "empty" and "OCR" in error.message


def test_pdf_page_and_character_limits(tmp_path):
    path = make_pdf(tmp_path / "long.pdf", [f"page {i} text" for i in range(5)])
    error = reason_of(path, max_pages=4)
    assert error.reason == "too-large" and "5 pages" in error.message and "max_pages" in error.message
    error = reason_of(path, max_characters=20)
    assert error.reason == "too-large" and "max_characters" in error.message


def test_text_file_named_pdf_is_wrong_extension(tmp_path):
    path = tmp_path / "notes.pdf"
    path.write_text("just some notes, not a PDF")
    error = reason_of(path)
    assert error.reason == "wrong-extension" and "plain text" in error.message


# -- Word ----------------------------------------------------------------------------------------


def test_docx_headings_paragraphs_and_tables_in_order(tmp_path):
    doc = load_document(make_docx(tmp_path / "handbook.docx"))
    assert doc.mime_type == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    assert doc.metadata["title"] == "Team handbook" and doc.metadata["author"] == "Ada Lovelace"
    assert doc.metadata["headings"] == ["Onboarding", "Accounts", "Policies"]
    sections = doc.section_texts()
    assert [meta for meta, _ in sections] == [
        {"heading": "Onboarding"}, {"heading": "Onboarding > Accounts"}, {"heading": "Policies"}]
    accounts = sections[1][1]
    assert accounts.splitlines() == [
        "Accounts",
        "Request VPN access from the helpdesk on day one.",
        "Name: Grace; Role: Mentor; Desk: 4B",
        "Name: Linus; Role: Reviewer; Desk: 2A",
    ]
    assert doc.text.index("Welcome") < doc.text.index("VPN") < doc.text.index("Fridays")


def test_docx_title_falls_back_to_first_heading(tmp_path):
    doc = load_document(make_docx(tmp_path / "plain.docx", title=None))
    assert doc.metadata["title"] == "Onboarding"


def test_docx_merged_cells_read_once_and_vertical_merges_repeat(tmp_path):
    import docx

    document = docx.Document()
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([["Team", "Lead", "Shift"], ["Ops", "Ada", ""], ["Dev", "Linus", ""]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(0, 0).merge(table.cell(0, 1)).text = "Team and lead"  # one cell spanning two columns
    table.cell(1, 2).merge(table.cell(2, 2)).text = "Night"  # one cell spanning two rows
    document.save(str(tmp_path / "rota.docx"))
    # the spanning header is one cell (named once per row); the row below a vertical merge repeats its text
    lines = load_document(tmp_path / "rota.docx").text.splitlines()
    assert len(lines) == 2 and all(line.count("Team and lead") == 1 for line in lines)
    assert [line.rsplit(": ", 1)[1] for line in lines] == ["Night", "Night"]
    assert lines[0].startswith("Team and lead: Ops;") and lines[1].startswith("Team and lead: Dev;")


@pytest.mark.parametrize("ext,marker", [(".docx", "word/document.xml"), (".xlsx", "xl/workbook.xml"),
                                        (".pptx", "ppt/presentation.xml")])
def test_zip_bombs_are_refused_before_parsing(tmp_path, ext, marker):
    declared = reason_of(make_zip_bomb(tmp_path / f"declared{ext}", marker))
    assert declared.reason == "zip-bomb" and "MiB of uncompressed data" in declared.message
    ratio = reason_of(make_ratio_bomb(tmp_path / f"ratio{ext}", marker))
    assert ratio.reason == "zip-bomb" and "expands" in ratio.message


def test_zip_with_too_many_entries_is_refused(tmp_path):
    path = tmp_path / "many.docx"
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(30):
            archive.writestr(f"part{i}.xml", "<x/>")
    assert reason_of(path, max_zip_entries=10).reason == "zip-bomb"


def test_office_file_of_another_kind_is_wrong_extension(tmp_path):
    path = make_xlsx(tmp_path / "budget.xlsx")
    renamed = tmp_path / "budget.docx"
    renamed.write_bytes(path.read_bytes())
    error = reason_of(renamed)
    assert error.reason == "wrong-extension" and ".xlsx" in error.message


def test_password_protected_office_file_is_encrypted(tmp_path):
    path = tmp_path / "locked.docx"  # Office wraps an encrypted package in an OLE compound file
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504 + "EncryptedPackage".encode("utf-16-le") + b"\0" * 512)
    assert reason_of(path).reason == "encrypted"
    old = tmp_path / "old.docx"
    old.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 1024)
    error = reason_of(old)
    assert error.reason == "wrong-extension" and "old binary Office file" in error.message


def test_truncated_docx_is_corrupt(tmp_path):
    assert reason_of(truncate(tmp_path / "cut.docx", make_docx(tmp_path / "good.docx"), 0.5)).reason == "corrupt"


# -- Excel ---------------------------------------------------------------------------------------


def test_xlsx_one_block_per_sheet_with_header_aware_rows_and_values_not_formulas(tmp_path):
    doc = load_document(make_xlsx(tmp_path / "budget.xlsx"))
    assert doc.metadata["title"] == "Budget 2026" and doc.metadata["author"] == "Grace Hopper"
    assert doc.metadata["sheets"] == ["Budget", "Notes", "Blank"] and doc.metadata["sheet_count"] == 3
    blocks = doc.text.split("\n\n")
    assert blocks == [
        "Sheet: Budget\nColumns: Item | Cost | Due\nItem: Laptops; Cost: 42; Due: 2026-03-01\n"
        "Item: Monitors; Cost: 12.5\nItem: Doubled; Cost: 84",
        "Sheet: Notes\n1 | 2 | 3\n4 | 5 | 6",
    ]
    assert "B2*2" not in doc.text  # the cached value, never the formula
    row = next(s for s in doc.sections if doc.text[s.start:s.end].startswith("Item: Monitors"))
    assert row.metadata == {"sheet": "Budget", "row": 3}


def test_xlsx_without_values_is_empty(tmp_path):
    import openpyxl

    path = tmp_path / "blank.xlsx"
    openpyxl.Workbook().save(path)
    assert reason_of(path).reason == "empty"


# -- PowerPoint ----------------------------------------------------------------------------------


def test_pptx_slides_with_text_tables_groups_and_notes(tmp_path):
    doc = load_document(make_pptx(tmp_path / "launch.pptx"))
    assert doc.metadata["slide_count"] == 3
    assert doc.metadata["author"] == "Katherine Johnson" and doc.metadata["title"] == "Launch review"
    assert doc.section_texts() == [
        ({"slide": 1}, "Slide 1: Launch window\nLiftoff at 09:32 UTC\nBackup window on Thursday\n"
                       "Notes: Mention the weather constraints"),
        ({"slide": 2}, "Slide 2: Budget\nTeam: Avionics; Spend: 1.2M\nGrouped caption about telemetry"),
    ]


def test_pptx_needs_its_optional_package(tmp_path, monkeypatch):
    path = make_pptx(tmp_path / "deck.pptx")
    monkeypatch.setitem(sys.modules, "pptx", None)
    error = reason_of(path)
    assert error.reason == "missing-dependency" and "pip install python-pptx" in error.message


# -- CSV, text, Markdown ---------------------------------------------------------------------------


def test_csv_dialect_sniffing_encoding_fallback_and_header(tmp_path):
    path = tmp_path / "people.csv"
    path.write_bytes("name;city;note\nZoë;Köln;\"likes; semicolons\"\nLuis;Málaga;\n".encode("cp1252"))
    doc = load_document(path)
    assert doc.mime_type == "text/csv"
    assert doc.text == "name: Zoë; city: Köln; note: likes; semicolons\nname: Luis; city: Málaga"
    assert doc.metadata == {"encoding": "cp1252", "delimiter": ";", "rows": 2, "columns": 3, "header": True,
                            "column_names": ["name", "city", "note"]}
    assert [s.metadata for s in doc.sections] == [{"row": 2}, {"row": 3}]


def test_csv_without_header_quoted_newlines_and_bom(tmp_path):
    path = tmp_path / "numbers.csv"
    path.write_bytes("\ufeff1,2,\"three\nlines\"\n4,5,6\n".encode("utf-8"))
    doc = load_document(path)
    assert doc.metadata["header"] is False and doc.metadata["encoding"] == "utf-8-sig"
    assert doc.text == "1 | 2 | three lines\n4 | 5 | 6"


def test_tsv_uses_tabs(tmp_path):
    path = tmp_path / "table.tsv"
    path.write_text("key\tvalue\nalpha\t1,5\n")
    assert load_document(path).text == "key: alpha; value: 1,5"


def test_txt_encodings_and_binary_content(tmp_path):
    utf8 = tmp_path / "a.txt"
    utf8.write_text("naïve café\r\nsecond line  \n", encoding="utf-8")
    doc = load_document(utf8)
    assert doc.text == "naïve café\nsecond line" and doc.metadata["encoding"] == "utf-8"
    legacy = tmp_path / "b.txt"
    legacy.write_bytes("Grüße aus Köln".encode("latin-1"))
    assert load_document(legacy).text == "Grüße aus Köln"
    binary = tmp_path / "c.txt"
    binary.write_bytes(bytes(range(256)))
    assert reason_of(binary).reason == "wrong-extension"


def test_empty_and_blank_files(tmp_path):
    empty = tmp_path / "empty.md"
    empty.write_bytes(b"")
    error = reason_of(empty)
    assert error.reason == "empty" and "0 bytes" in error.message
    blank = tmp_path / "blank.txt"
    blank.write_text("   \n\n  ")
    assert reason_of(blank).reason == "empty"


def test_markdown_headings_are_metadata(tmp_path):
    path = tmp_path / "guide.md"
    path.write_text(
        "---\ntitle: Deploy guide\nauthor: Linus\n---\n# Deploying\n\nIntro.\n\n## Staging\n\n```sh\n# not a heading\n"
        "make deploy\n```\n\nRollbacks\n---------\n\nUse the previous tag.\n\n# Appendix\n\nLinks.\n"
    )
    doc = load_document(path)
    assert doc.mime_type == "text/markdown"
    assert doc.metadata["title"] == "Deploy guide" and doc.metadata["author"] == "Linus"
    assert doc.metadata["headings"] == ["Deploying", "Staging", "Rollbacks", "Appendix"]
    assert [meta for meta, _ in doc.section_texts()] == [
        {"front_matter": True}, {"heading": "Deploying"}, {"heading": "Deploying > Staging"},
        {"heading": "Deploying > Rollbacks"}, {"heading": "Appendix"}]
    assert doc.text == path.read_text().rstrip("\n")  # the text as written


def test_markdown_atx_headings_closing_hashes_and_long_blank_runs(tmp_path):
    path = tmp_path / "odd.md"
    wide = "# Wide" + " " * 100_000 + "title"  # one regular expression backtracked for minutes on this
    path.write_text("\n\n".join(["## Setup ##", "# Title#", "#NoSpace", "#\tTabbed\t#", "####### seven", wide]))
    assert load_document(path).metadata["headings"] == ["Setup", "Title#", "Tabbed", "Wide" + " " * 100_000 + "title"]


def test_csv_dialect_sniffer_sees_8_kib_at_most(tmp_path, monkeypatch):
    import csv

    seen: list[int] = []
    real = csv.Sniffer.sniff

    def sniff(self, sample, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen.append(len(sample))
        return real(self, sample, *args, **kwargs)

    monkeypatch.setattr(csv.Sniffer, "sniff", sniff)  # quadratic in its sample: 64 KiB of '",' took 20 s
    path = tmp_path / "people.csv"
    path.write_text("name;team\n" + "".join(f"person {i};team {i % 7}\n" for i in range(2_000)))
    doc = load_document(path)
    assert seen == [8 * 1024] and doc.metadata["delimiter"] == ";" and doc.metadata["rows"] == 2_000


def test_markdown_title_from_first_heading(tmp_path):
    path = tmp_path / "notes.markdown"
    path.write_text("Some intro\n\n# Real title\n\ntext\n")
    doc = load_document(path)
    assert doc.metadata["title"] == "Real title"
    assert doc.section_texts()[0] == ({}, "Some intro")


# -- Apple iWork ---------------------------------------------------------------------------------


@pytest.mark.parametrize("ext", [".pages", ".numbers", ".key"])
def test_iwork_reads_the_embedded_preview_pdf(tmp_path, ext):
    preview = make_pdf(tmp_path / "preview.pdf", ["Quarterly plan for the garden project"], title="Plan")
    doc = load_document(make_iwork(tmp_path / f"plan{ext}", preview))
    assert doc.metadata["from_preview"] is True and doc.metadata["title"] == "Plan"
    assert doc.text == "Quarterly plan for the garden project"
    assert doc.mime_type.startswith("application/vnd.apple.")


def test_iwork_without_preview_says_to_export(tmp_path):
    error = reason_of(make_iwork(tmp_path / "plan.pages", None))
    assert error.reason == "unsupported" and "Export To > PDF" in error.message


def test_iwork_folder_bundle(tmp_path):
    bundle = tmp_path / "Old.key"
    (bundle / "QuickLook").mkdir(parents=True)
    make_pdf(bundle / "QuickLook" / "Preview.pdf", ["Keynote from 2009"])
    assert load_document(bundle).text == "Keynote from 2009"


# -- whatever else ---------------------------------------------------------------------------------


def test_unsupported_and_missing_files(tmp_path):
    doc = tmp_path / "old.doc"
    doc.write_bytes(b"\xd0\xcf\x11\xe0")
    error = reason_of(doc)
    assert error.reason == "unsupported" and "save it as .docx" in error.message
    exe = tmp_path / "tool.exe"
    exe.write_bytes(b"MZ")
    error = reason_of(exe)
    assert error.reason == "unsupported" and ".pdf" in error.message
    assert reason_of(tmp_path / "nowhere.txt").reason == "unreadable"


def test_file_size_limit(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("x" * 2000)
    error = reason_of(path, max_file_bytes=1000)
    assert error.reason == "too-large" and "max_file_bytes" in error.message


def test_supported_extensions_cover_the_seed_formats():
    for ext in (".pdf", ".docx", ".pptx", ".xlsx", ".csv", ".txt", ".md", ".pages", ".numbers", ".key"):
        assert ext in SUPPORTED_EXTENSIONS


def test_sniff_and_decode():
    assert sniff(b"%PDF-1.4 ...") == "pdf"
    assert sniff(b"PK\x03\x04rest") == "zip"
    assert sniff(b"hello\nworld") == "text"
    assert sniff(b"\x00\x01\x02") == "binary"
    assert decode_text("é".encode("utf-16")) == ("é", "utf-16")
    assert decode_text(b"\x81\x8d") == ("\x81\x8d", "latin-1")  # bytes Windows-1252 leaves undefined


def test_table_cells():
    import datetime as dt

    assert format_value(3.0) == "3" and format_value(0.1) == "0.1" and format_value(None) == ""
    assert format_value(dt.datetime(2026, 1, 2)) == "2026-01-02"
    assert format_value(dt.datetime(2026, 1, 2, 9, 30)) == "2026-01-02 09:30:00"
    assert format_value(True) == "TRUE" and format_value("  two\n words ") == "two words"
    assert looks_like_header(["Name", "Age"]) and not looks_like_header(["Ada", "36"])
    assert not looks_like_header(["x", "x"]) and not looks_like_header(["", ""])
