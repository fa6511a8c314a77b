"""Bearer tokens: the private tokens file, 401 without a token, 403 outside a token's namespaces (revealing nothing)."""

from __future__ import annotations

import os
import stat

import pytest
import uvicorn
from click.testing import CliRunner
from starlette.testclient import TestClient

from shared_core import ConfigError
from shared_core.cli import main
from shared_core.cli.server import is_loopback
from shared_core.server.auth import Principal, TokenFile, default_tokens_path


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_first_run_creates_a_private_tokens_file(tmp_path):
    path = tmp_path / "cfg" / "tokens.toml"
    tokens, token = TokenFile.load_or_create(path)
    assert token.startswith("okm_") and len(token) > 40
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    assert 'name = "default"' in path.read_text() and 'namespaces = ["*"]' in path.read_text()
    again, created = TokenFile.load_or_create(path)
    assert created is None and again.entries == tokens.entries
    assert again.authenticate(token) == Principal("default", ("*",))
    assert again.authenticate(token + "x") is None and again.authenticate("") is None and again.authenticate(None) is None


def test_default_location_is_beside_the_config(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENKOI_CONFIG", str(tmp_path / "conf" / "config.toml"))
    assert default_tokens_path() == tmp_path / "conf" / "tokens.toml"
    monkeypatch.setenv("OPENKOI_TOKENS", str(tmp_path / "elsewhere.toml"))
    assert default_tokens_path() == tmp_path / "elsewhere.toml"


def test_a_tokens_file_others_can_read_is_refused(tmp_path):
    path = tmp_path / "tokens.toml"
    TokenFile.load_or_create(path)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        TokenFile.load(path)
    with pytest.raises(ConfigError, match="does not exist"):
        TokenFile.load(tmp_path / "missing.toml")


def _write(path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o600)


def test_the_file_format(tmp_path):
    path = tmp_path / "tokens.toml"
    secret = "okm_" + "a" * 40
    import hashlib

    _write(path, f'''
[[tokens]]
name = "notebook"
sha256 = "{hashlib.sha256(secret.encode()).hexdigest()}"
namespaces = ["user:alice", "team:*"]

[[tokens]]
name = "ci"
token = "plain-token-of-enough-length"
''')
    tokens = TokenFile.load(path)
    alice = tokens.authenticate(secret)
    assert alice == Principal("notebook", ("user:alice", "team:*"))
    assert alice.allows("user:alice") and alice.allows("team:infra") and alice.allows("team:")
    assert not alice.allows("user:alice2") and not alice.allows("teamx") and not alice.allows("user:bob")
    assert alice.default_namespace is None and not alice.unrestricted
    assert tokens.authenticate("plain-token-of-enough-length").unrestricted  # namespaces default to all
    assert Principal("one", ("user:alice",)).default_namespace == "user:alice"
    for bad, message in (
        ('[[tokens]]\nname = "x"\ntoken = "short"\n', "at least 16"),
        ('[[tokens]]\nname = "x"\n', "exactly one of 'token' or 'sha256'"),
        ('[[tokens]]\nname = "x"\nsha256 = "zz"\n', "64 hex digits"),
        ('[[tokens]]\nname = "x"\ntoken = "0123456789abcdef"\nnamespaces = ["a*b"]\n', "may only end"),
        ('[[tokens]]\nname = "x"\ntoken = "0123456789abcdef"\nnamespaces = []\n', "non-empty list"),
        ('[[tokens]]\nname = "x"\ntoken = "0123456789abcdef"\nscope = 1\n', "unknown keys"),
        ('[[tokens]]\nname = "x"\ntoken = "0123456789abcdef"\n[[tokens]]\nname = "x"\ntoken = "0123456789abcdefg"\n',
         "twice"),
        ("tokens = 3\n", "array of tables"),
        ("[[tokens]\n", "not valid TOML"),
    ):
        _write(path, bad)
        with pytest.raises(ConfigError, match=message):
            TokenFile.load(path)


def test_added_and_revoked_tokens_count_at_once_and_a_broken_file_fails_closed(tmp_path):
    path = tmp_path / "tokens.toml"
    running, first = TokenFile.load_or_create(path)  # what a running server holds
    manager = TokenFile.load(path)  # what `openkoi-memory token add` does meanwhile
    second = manager.add("alice", ["user:alice"])
    assert second not in path.read_text() and _mode(path) == 0o600
    assert running.authenticate(second) == Principal("alice", ("user:alice",))
    with pytest.raises(ValueError, match="already a token named"):
        manager.add("alice", ["*"])
    assert manager.revoke("alice") and not manager.revoke("alice")
    assert running.authenticate(second) is None and running.authenticate(first) is not None
    path.chmod(0o644)
    assert running.authenticate(first) is None  # insecure now: refuse everything until fixed
    path.chmod(0o600)
    assert running.authenticate(first) is not None


def test_every_route_needs_a_token(app, anonymous, token):
    paths = app.openapi()["paths"]
    assert len(paths) >= 20
    calls = [(method, path.replace("{", "").replace("}", "")) for path, item in paths.items() for method in item]
    for method, path in [*calls, ("get", "/openapi.json"), ("get", "/docs"), ("get", "/nowhere")]:
        response = anonymous.request(method.upper(), path)
        assert response.status_code == 401, (method, path)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "Bearer" in response.json()["detail"]
        wrong = anonymous.request(method.upper(), path, headers={"Authorization": f"Bearer {token}x"})
        assert wrong.status_code == 401
    assert anonymous.get("/api/health", headers={"Authorization": f"Basic {token}"}).status_code == 401
    assert anonymous.get("/api/health", headers={"Authorization": f"bearer {token}"}).status_code == 200


def test_a_limited_token_reveals_nothing_outside_its_namespaces(app, server_store, tokens, base_url):
    file, _ = tokens
    alice_token = file.add("alice", ["user:alice"])
    bob_memory = server_store.add("Bob's salary is 90k", namespace="user:bob")
    bob_doc = server_store.documents.ingest_text("Bob's contract text", name="bob.txt", namespace="user:bob")
    server_store.add("Alice likes oolong", namespace="user:alice")
    with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {alice_token}"}) as alice:
        outside = [
            alice.get(f"/api/memories/{bob_memory}", params={"namespace": "user:bob"}),
            alice.get("/api/memories/no-such-id", params={"namespace": "user:bob"}),
            alice.get("/api/memories/no-such-id", params={"namespace": "user:nobody"}),
            alice.post("/api/memories/search", json={"query": "salary"}, params={"namespace": "user:bob"}),
            alice.delete(f"/api/memories/{bob_memory}", params={"namespace": "user:bob"}),
            alice.get(f"/api/kb/documents/{bob_doc.id}/content", params={"namespace": "user:bob"}),
            alice.get("/api/kb/documents/0000000000000000/content", params={"namespace": "user:bob"}),
            alice.get("/api/usage/summary", params={"namespace": "user:bob"}),
        ]
        assert {r.status_code for r in outside} == {403}
        assert {r.text for r in outside} == {'{"detail":"this token may not use that namespace"}'}
        # inside its namespace, someone else's id is exactly as absent as an id that never existed
        theirs = alice.get(f"/api/memories/{bob_memory}")
        nothing = alice.get("/api/memories/0123456789abcdef")
        assert theirs.status_code == nothing.status_code == 404
        assert theirs.json()["detail"].replace(bob_memory, "X") == nothing.json()["detail"].replace("0123456789abcdef", "X")
        doc = alice.get(f"/api/kb/documents/{bob_doc.id}")
        assert doc.status_code == 404 and "user:bob" not in doc.text
        assert alice.post(f"/api/memories/{bob_memory}/feedback", json={"signal": "demote"}).status_code == 404
        # the token's only namespace is its default
        listed = alice.get("/api/memories").json()
        assert [m["text"] for m in listed] == ["Alice likes oolong"]
        assert alice.post("/api/memories", json={"text": "Alice's cat is Tom"}).json()["memory"]["namespace"] == "user:alice"
        assert [n["namespace"] for n in alice.get("/api/namespaces").json()] == ["user:alice"]
        assert alice.post("/api/maintenance/run").status_code == 403
        status = alice.get("/api/maintenance")
        assert status.status_code == 200 and status.json()["schedule"] == "0 4 * * *"
    assert server_store.get(bob_memory).score == 0 and server_store.count(namespace="user:bob", kind="fact") == 1


def test_loopback_only_without_tokens(tmp_path, monkeypatch):
    assert is_loopback("127.0.0.1") and is_loopback("127.8.9.1") and is_loopback("::1") and is_loopback("[::1]")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")

    def never(*args, **kwargs):  # the refusal must come before anything listens
        raise AssertionError("uvicorn.run was called")

    monkeypatch.setattr(uvicorn, "run", never)
    runner = CliRunner()
    db = str(tmp_path / "m.db")
    refused = runner.invoke(main, ["--db", db, "serve", "--no-auth", "--host", "0.0.0.0", "--no-maintenance"])
    assert refused.exit_code == 1 and "refusing to serve 0.0.0.0 without tokens" in refused.output
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    empty.chmod(0o600)
    refused = runner.invoke(main, ["--db", db, "serve", "--tokens-file", str(empty), "--host", "10.0.0.1"])
    assert refused.exit_code == 1 and "holds no tokens" in refused.output
    refused = runner.invoke(main, ["--db", db, "mcp", "--transport", "http", "--no-auth", "--host", "0.0.0.0"])
    assert refused.exit_code == 1 and "refusing" in refused.output


def test_token_commands(tmp_path):
    runner = CliRunner()
    path = str(tmp_path / "t" / "tokens.toml")
    added = runner.invoke(main, ["token", "add", "alice", "-n", "user:alice", "-n", "team:*", "--tokens-file", path])
    assert added.exit_code == 0, added.output
    secret = added.stdout.strip().splitlines()[0]
    assert TokenFile.load(path).authenticate(secret) == Principal("alice", ("user:alice", "team:*"))
    listed = runner.invoke(main, ["token", "list", "--tokens-file", path])
    assert listed.stdout.splitlines() == ["default\t*", "alice\tuser:alice, team:*"]
    assert secret not in listed.output
    bad = runner.invoke(main, ["token", "add", "x", "-n", "a*b", "--tokens-file", path])
    assert bad.exit_code == 1 and "may only end" in bad.output
    assert runner.invoke(main, ["token", "revoke", "alice", "--tokens-file", path]).exit_code == 0
    assert runner.invoke(main, ["token", "revoke", "alice", "--tokens-file", path]).exit_code == 1


def test_serve_defaults_to_seed_003s_local_address_and_makes_a_token_on_first_run(tmp_path, monkeypatch):
    seen = {}

    def fake_run(app, **kwargs):
        seen.update(kwargs, app=app)

    monkeypatch.setattr(uvicorn, "run", fake_run)
    monkeypatch.setenv("OPENKOI_CONFIG", str(tmp_path / "conf" / "config.toml"))
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), "serve", "--no-maintenance"])
    assert result.exit_code == 0, result.output
    assert (seen["host"], seen["port"]) == ("127.0.0.1", 3415)
    path = tmp_path / "conf" / "tokens.toml"
    assert _mode(path) == 0o600
    token = TokenFile.load(path).entries[0].token
    assert f"Authorization: Bearer {token}" in result.output and "http://127.0.0.1:3415/api/" in result.output
    again = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), "serve", "--no-maintenance", "--port", "9"])
    assert again.exit_code == 0 and token not in again.output and seen["port"] == 9  # printed once only
