"""A real server on a free port, seeded, and a headless Chromium (Debian's, driven by Playwright).

No browser is downloaded: the tests use ``/usr/bin/chromium`` (``OPENKOI_CHROMIUM`` names another);
``make test`` installs it as root when it is missing. Screenshots of each view go to
``tmp/pytest/inspector/`` (test artefacts, not committed); ``make screenshots`` copies the same
shots to ``docs/images/inspector-*.png``.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the inspector tests need the 'server' extra")
playwright_sync = pytest.importorskip("playwright.sync_api", reason="the inspector tests need playwright (dev extra)")

from shared_core import ManualClock, MemoryStore  # noqa: E402
from shared_core.config import Config  # noqa: E402
from shared_core.server.auth import TokenFile  # noqa: E402
from shared_core.server.ui import SessionTokens, bind, page_url  # noqa: E402

from .seed import ALICE, Seeded, seed  # noqa: E402

CHROMIUM = os.environ.get("OPENKOI_CHROMIUM", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = ROOT / "tmp" / "pytest" / "inspector"
DOC_IMAGES = os.environ.get("OPENKOI_DOC_SCREENSHOTS")  # set by `make screenshots`: docs/images
START_TIMEOUT = 60.0  # seconds for the server to come up on a busy machine


@dataclass
class Server:
    """A running inspector: its address, tokens and the seeded ids."""

    base: str
    admin_token: str  # every namespace
    alice_token: str  # user:alice only
    session_url: str  # what `openkoi-memory ui -n user:alice` would print
    ids: Seeded
    store: MemoryStore


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    import uvicorn

    from shared_core.server.rest import create_app

    root = tmp_path_factory.mktemp("inspector")
    clock = ManualClock("2026-03-02T09:00:00Z")
    patches = pytest.MonkeyPatch()
    fixed_ids(patches, clock)  # the same ids on every run: the screenshots show them
    store = MemoryStore.open(root / "agent.db", clock=clock, config=Config(data_dir=root / "data"))  # never ~/.openkoi
    ids = seed(store, clock)
    tokens_path = root / "tokens.toml"
    file, admin = TokenFile.load_or_create(tokens_path)
    alice = file.add("alice-only", [ALICE])
    tokens = SessionTokens.around(str(tokens_path), [ALICE])
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = create_app(store, tokens=tokens, mcp=False, host="127.0.0.1")
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not uv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the inspector's server did not start")
        time.sleep(0.05)
    assert admin is not None
    try:
        yield Server(f"http://127.0.0.1:{port}", admin, alice,
                     page_url("127.0.0.1", port, tokens.session_token, ALICE), ids, store)
    finally:
        uv.should_exit = True
        thread.join(timeout=START_TIMEOUT)
        sock.close()
        store.close()
        patches.undo()


def fixed_ids(patches: pytest.MonkeyPatch, clock: ManualClock) -> None:
    """New memory and message ids made from the store's clock and a seeded random source instead of the
    wall clock and the system's: ids made in the same order come out the same on every run."""
    import random
    from types import SimpleNamespace

    from shared_core.conversations import records as message_records
    from shared_core.memories import records as memory_records

    source = random.Random(26)

    def token_hex(n: int) -> str:
        return source.randbytes(n).hex()

    patches.setattr(memory_records, "time", SimpleNamespace(time_ns=lambda: int(clock.now().timestamp() * 1e9)))
    patches.setattr(memory_records, "secrets", SimpleNamespace(token_hex=token_hex))
    patches.setattr(message_records, "secrets", SimpleNamespace(token_hex=token_hex))


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        message = (f"no Chromium at {CHROMIUM}: apt-get install -y chromium (make test does it as root), or set "
                   "OPENKOI_CHROMIUM to a Chromium or Chrome binary")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with playwright_sync.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1100, "height": 760}, locale="en-GB", timezone_id="UTC",
                                  device_scale_factor=1)
    context.set_default_timeout(30_000)  # generous: the machine may be busy
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"the page threw: {errors}"


def ready(page, view: str) -> None:
    """Wait until the page has rendered ``view``."""
    page.wait_for_selector(f"body[data-state=ready][data-view={view}]")


def shoot(page, name: str, *, full_page: bool = False, element: str | None = None) -> Path:
    """Save a screenshot of the page (or of the ``element`` a selector names) as a test artefact (and,
    under `make screenshots`, for the docs)."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    ignore = ARTEFACTS.parents[1] / ".gitignore"  # tmp/ holds test output only: git never sees it
    if not ignore.exists():
        ignore.write_text("*\n")
    target = ARTEFACTS / f"inspector-{name}.png"
    if element is not None:
        page.locator(element).screenshot(path=str(target))
    else:
        page.screenshot(path=str(target), full_page=full_page)
    if DOC_IMAGES:
        folder = Path(DOC_IMAGES)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, folder / target.name)
    return target
