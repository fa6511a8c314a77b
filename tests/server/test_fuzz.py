"""Bad input over the wire: schemathesis sends valid and invalid requests built from the OpenAPI document.

Every operation gets a bounded number of generated requests (positive and negative): 20 each in
``make test``, ``OPENKOI_FUZZ_EXAMPLES`` each in ``make fuzz`` (500). None may answer 5xx (a 503
would tell the client to retry a request that can never succeed), none may show a stack trace or
the server's paths, every error is a JSON ``{"detail": ...}`` without ``Retry-After``, and every
success matches the response schema the document declares. Each case a run finds becomes a test
in test_errors.py or test_rest.py.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance

from shared_core import MemoryStore
from shared_core.config import Config
from shared_core.server.auth import TokenFile
from shared_core.server.rest import create_app

EXAMPLES_PER_OPERATION = int(os.environ.get("OPENKOI_FUZZ_EXAMPLES", "20"))  # CI bound; raise it locally


def _target() -> tuple[MemoryStore, object, dict[str, str], Path]:
    """Built at import, because schemathesis parametrizes from a loaded schema (its lazy fixture
    loader does not work with this pytest); the files live in a temporary folder removed at the end."""
    root = Path(tempfile.mkdtemp(prefix="openkoi-fuzz-"))
    tokens, token = TokenFile.load_or_create(root / "tokens.toml")
    store = MemoryStore.open(root / "fuzz.db", config=Config(data_dir=root))  # never reads ~/.openkoi
    store.add("Alice likes oolong tea", namespace="default")
    store.documents.ingest_text("# Leave\n\nParental leave is sixteen weeks.", name="handbook.md")
    store.insights.upsert("Launch moved", "to March 3", importance="high", dedupe_key="launch")
    docs = root / "docs"
    docs.mkdir()
    (docs / "runbook.md").write_text("# Runbook\n\nRestart the workers.")
    app = create_app(store, tokens=tokens, mcp=False, upload_dir=root / "uploads", documents_roots=[docs])
    return store, app, {"Authorization": f"Bearer {token}", "Host": "127.0.0.1:3415"}, root


STORE, APP, AUTH, ROOT = _target()
schema = schemathesis.openapi.from_asgi("/openapi.json", APP, headers=AUTH)
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=EXAMPLES_PER_OPERATION,
    allow_x00=True, database="none",
)


@pytest.fixture(scope="module", autouse=True)
def _cleanup():
    yield
    STORE.close()
    shutil.rmtree(ROOT, ignore_errors=True)


_TRACE_MARKERS = ("Traceback (most recent call last)", 'File "/', "site-packages", "shared_core/")


@schemathesis.check
def no_stack_trace(ctx, response, case):
    text = response.text
    leaked = [marker for marker in _TRACE_MARKERS if marker in text]
    if leaked:
        raise AssertionError(f"the response shows server internals ({leaked[0]!r})")


@schemathesis.check
def no_server_paths(ctx, response, case):
    if str(ROOT) in response.text or str(ROOT.resolve()) in response.text:
        raise AssertionError("the response shows a path of the server's files")


@schemathesis.check
def client_errors_say_no_retry(ctx, response, case):
    if 400 <= response.status_code < 500 and "retry-after" in {k.lower() for k in response.headers}:
        raise AssertionError(f"a {response.status_code} carries Retry-After: the client would retry in vain")


@schemathesis.check
def errors_are_json_details(ctx, response, case):
    if response.status_code < 400:
        return
    try:
        body = json.loads(response.text)
    except ValueError:
        raise AssertionError(f"a {response.status_code} answer is not JSON: {response.text[:200]!r}") from None
    if not isinstance(body, dict) or "detail" not in body:
        raise AssertionError(f"a {response.status_code} answer has no 'detail': {response.text[:200]!r}")


@pytest.mark.slow
@pytest.mark.fuzz
@schema.parametrize()
@settings(suppress_health_check=list(HealthCheck), deadline=None)
def test_no_generated_request_breaks_the_api(case):
    case.call_and_validate(headers=AUTH, checks=[not_a_server_error, no_stack_trace, no_server_paths,
                                                 client_errors_say_no_retry, errors_are_json_details,
                                                 response_schema_conformance])
