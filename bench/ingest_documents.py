"""Knowledge-base ingest throughput on a generated corpus (pages/s, chunks/s, documents/s).

The corpus is made here, deterministically: ``--per-format`` documents (default 30) of each of
PDF (``--pdf-pages`` pages each), DOCX, XLSX, PPTX, CSV, Markdown and TXT, 210 documents in
all, of generated prose about a few dozen topics. Each repeat ingests every format's folder
into a fresh store file (the default hashing embedder, default settings: 1000/200 chunks,
1000 rows a transaction), then ingests everything again (the unchanged-file no-op path).
``parse`` is the time the loaders alone take for the same files. Medians over ``--repeats``.

The table goes to stdout and replaces the "Knowledge-base ingest" section of
docs/benchmarks.md (``--no-docs`` to leave it alone).

    python bench/ingest_documents.py [--per-format 30] [--pdf-pages 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import re
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import describe as describe_machine  # noqa: E402

from shared_core import MemoryStore  # noqa: E402
from shared_core.documents import load_document  # noqa: E402

FORMATS = ("pdf", "docx", "xlsx", "pptx", "csv", "md", "txt")
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADING = "## Knowledge-base ingest"

TOPICS = ["invoice", "deploy", "rollback", "budget", "kernel", "compiler", "garden", "launch", "telemetry",
          "contract", "warranty", "payroll", "vacation", "security", "certificate", "database", "migration",
          "backup", "incident", "roadmap", "hiring", "onboarding", "pricing", "refund", "shipping", "inventory",
          "forecast", "audit", "license", "firmware", "satellite", "harvest", "recipe", "cycling", "museum"]
WORDS = ("the a of to and in for on with by from at team system report plan week month quarter customer "
         "service review process data network policy update request issue change risk cost time number "
         "result office project client product market model test build release version schedule").split()


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 18))]
    for _ in range(rng.randint(1, 3)):
        words.insert(rng.randrange(len(words)), rng.choice(TOPICS))
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random, sentences: int = 6) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def make_corpus(root: Path, per_format: int, pdf_pages: int) -> None:
    import docx
    import openpyxl
    import pptx
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    rng = random.Random(20260101)
    styles = getSampleStyleSheet()
    for fmt in FORMATS:
        (root / fmt).mkdir(parents=True)
    for i in range(per_format):
        topic = TOPICS[i % len(TOPICS)]
        story = []
        for page in range(pdf_pages):
            story += [Paragraph(paragraph(rng), styles["BodyText"]) for _ in range(4)]
            if page < pdf_pages - 1:
                story.append(PageBreak())
        SimpleDocTemplate(str(root / "pdf" / f"{topic}-{i}.pdf"), pagesize=A4, title=f"{topic} report {i}",
                          author="bench").build(story)

        document = docx.Document()
        document.core_properties.title = f"{topic} handbook {i}"
        for section in range(4):
            document.add_heading(f"{topic.title()} part {section}", 1)
            for _ in range(3):
                document.add_paragraph(paragraph(rng, 4))
        table = document.add_table(rows=6, cols=3)
        for r in range(6):
            for c in range(3):
                table.cell(r, c).text = ["Item", "Owner", "Status"][c] if r == 0 else rng.choice(WORDS)
        document.save(str(root / "docx" / f"{topic}-{i}.docx"))

        workbook = openpyxl.Workbook()
        for s in range(3):
            sheet = workbook.active if s == 0 else workbook.create_sheet()
            sheet.title = f"{topic[:10]}{s}"
            sheet.append(["Date", "Item", "Amount", "Note"])
            for r in range(40):
                sheet.append([dt.date(2026, 1, 1) + dt.timedelta(days=r), rng.choice(TOPICS),
                              round(rng.uniform(1, 999), 2), sentence(rng)])
        workbook.save(str(root / "xlsx" / f"{topic}-{i}.xlsx"))

        deck = pptx.Presentation()
        for s in range(8):
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = f"{topic.title()} slide {s}"
            slide.placeholders[1].text = "\n".join(sentence(rng) for _ in range(4))
            slide.notes_slide.notes_text_frame.text = sentence(rng)
        deck.save(str(root / "pptx" / f"{topic}-{i}.pptx"))

        rows = ["id,topic,amount,comment"] + [f"{r},{rng.choice(TOPICS)},{rng.randint(1, 500)},\"{sentence(rng)}\""
                                              for r in range(100)]
        (root / "csv" / f"{topic}-{i}.csv").write_text("\n".join(rows) + "\n")
        sections = [f"## {topic.title()} {s}\n\n{paragraph(rng)}\n\n{paragraph(rng)}" for s in range(6)]
        (root / "md" / f"{topic}-{i}.md").write_text(f"# {topic.title()} notes {i}\n\n" + "\n\n".join(sections) + "\n")
        (root / "txt" / f"{topic}-{i}.txt").write_text("\n\n".join(paragraph(rng) for _ in range(12)) + "\n")


def pages_of(metadata: dict) -> int:
    return int(metadata.get("page_count") or metadata.get("slide_count") or 0)


def run(root: Path, workdir: Path, repeat: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    db = workdir / f"bench-{repeat}.db"
    with MemoryStore.open(db, config={}) as store:
        for fmt in FORMATS:
            files = sorted((root / fmt).iterdir())
            started = time.perf_counter()
            loaded = [load_document(f) for f in files]
            parse = time.perf_counter() - started
            started = time.perf_counter()
            report = store.documents.ingest(root / fmt)
            seconds = time.perf_counter() - started
            assert report.ok and len(report.added) == len(files), report
            out[fmt] = {"docs": len(files), "pages": sum(pages_of(d.metadata) for d in loaded),
                        "chunks": report.chunks, "megabytes": sum(f.stat().st_size for f in files) / 1e6,
                        "parse": parse, "seconds": seconds}
        started = time.perf_counter()
        again = store.documents.ingest(root)
        out["unchanged"] = {"docs": len(again.unchanged), "seconds": time.perf_counter() - started}
        assert not again.added and not again.updated
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    return out


def table(results: list[dict[str, dict[str, float]]]) -> list[str]:
    def med(fmt: str, key: str) -> float:
        return statistics.median(r[fmt][key] for r in results)

    lines = ["| format | docs | pages | chunks | MB | parse s | ingest s | docs/s | pages/s | chunks/s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    total = {"docs": 0.0, "pages": 0.0, "chunks": 0.0, "megabytes": 0.0, "parse": 0.0, "seconds": 0.0}
    for fmt in FORMATS:
        row = {key: med(fmt, key) for key in total}
        for key in total:
            total[key] += row[key]
        lines.append(_row(fmt, row))
    lines.append(_row("**all**", total, page_rate=False))  # pages/s over formats without pages means little
    unchanged_docs = results[0]["unchanged"]["docs"]
    unchanged = statistics.median(r["unchanged"]["seconds"] for r in results)
    lines.append(f"| re-ingest, unchanged | {unchanged_docs:.0f} | | | | | {unchanged:.2f} | "
                 f"{unchanged_docs / unchanged:.0f} | | |")
    return lines


def _row(name: str, r: dict[str, float], page_rate: bool = True) -> str:
    pages = f"{r['pages']:.0f}" if r["pages"] else "-"
    pages_rate = f"{r['pages'] / r['seconds']:.1f}" if r["pages"] and page_rate else "-"
    return (f"| {name} | {r['docs']:.0f} | {pages} | {r['chunks']:.0f} | {r['megabytes']:.1f} | {r['parse']:.2f} | "
            f"{r['seconds']:.2f} | {r['docs'] / r['seconds']:.1f} | {pages_rate} | {r['chunks'] / r['seconds']:.0f} |")


def write_docs(section: str) -> None:
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n\nMeasured by the scripts in bench/.\n"
    pattern = re.compile(rf"^{re.escape(HEADING)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text(text.rstrip("\n") + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-format", type=int, default=30, help="documents of each of the 7 formats")
    parser.add_argument("--pdf-pages", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    command = "python bench/ingest_documents.py" + "".join(
        f" {shlex.quote(a)}" for a in sys.argv[1:] if a != "--no-docs")
    with tempfile.TemporaryDirectory(prefix="openkoi-ingest-") as tmp:
        root = Path(tmp) / "corpus"
        started = time.perf_counter()
        make_corpus(root, args.per_format, args.pdf_pages)
        generated = time.perf_counter() - started
        results = [run(root, Path(tmp), i) for i in range(args.repeats)]
    lines = table(results)
    section = "\n".join([
        HEADING, "",
        f"Machine: {describe_machine()}.",
        f"Command: `{command}` ({len(FORMATS) * args.per_format} generated documents, corpus made in "
        f"{generated:.0f} s; medians of {args.repeats} runs, each into a fresh store file).",
        "",
        *lines,
        "",
        "`parse` is the loaders alone; `ingest` is loading, chunking (1000/200), embedding and writing "
        "(1000 rows a transaction), with the default hashing embedder, which takes most of the time. "
        "Pages are PDF pages and PPTX slides. The last row re-ingests the whole "
        "corpus unchanged: each file is hashed and compared, nothing is parsed or written.",
        "",
    ])
    print(section)
    if not args.no_docs:
        write_docs(section)
        print(f"(written to {DOCS})")


if __name__ == "__main__":
    main()
