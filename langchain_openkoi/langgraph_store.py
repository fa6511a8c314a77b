"""``OpenKoiStore``: LangGraph's long-term memory store (``BaseStore``) on one openkoi-memory file.

How LangGraph's model maps onto the core:

* **Namespaces.** A tuple becomes a core namespace with every label followed by a dot
  (:mod:`shared_core.namespaces`): ``("users", "alice")`` is ``"users.alice."``. Labels cannot
  contain dots (LangGraph forbids them), so a prefix search for ``("users",)`` is the plain
  string prefix ``"users."``: exact (never ``("usersX",)``) and served by the core's own
  namespace-prefix scope. A template label (``"{user_id}"``) is refused: whoever calls the
  store (LangMem's tools, your node) fills it from the run's config first.
* **One memory, every door.** The other memories of a namespace (facts the middleware or the
  memory tools saved, learnings...) are items too (:mod:`shared_core.items`): key = the
  memory's id, value = ``{"content": text, "kind": kind, ...}``. ``get``, ``search`` and
  ``list_namespaces`` show them; ``put(ns, id, {"content": ...})`` corrects one in place and
  ``delete(ns, id)`` deletes it.
* **Keys.** Core ids are global, LangGraph keys unique per namespace: an item's id is a hash
  of (namespace, key), ``"lg-<32 hex>"``, so a put upserts the same row.
* **Values.** The core memory's metadata holds ``{"key", "value", "ttl_minutes"}``: the value
  round-trips as the JSON it was given (types and key order), and filters address it.
* **Indexing.** The text at the configured ``fields`` (LangGraph's own path syntax and
  extraction helpers) becomes the memory's text, so it gets the core's FTS5 keyword index and
  one vector (texts from several paths are joined by newlines; LangGraph's stores keep one
  vector per path). Without ``fields``, a value's ``content`` text is indexed when it has one
  (LangMem's shape), else the whole value. Searching with ``query`` ranks every item in scope
  as LangGraph's stores do (:func:`shared_core.item_search.search_items`: the core's hybrid
  matches by relevance, then the rest by vector similarity; scores in [0, 1]). Items put with ``index=False`` (or whose
  fields are all missing) are stored as kind ``langgraph_item_unindexed`` with a constant
  placeholder vector instead of an embedding (no embedding call is made): every query search
  here is scoped to kind ``langgraph_item``, so they never match a query, but ``get`` and
  filter-only searches return them, as in LangGraph's own stores.
* **TTL.** ``ttl`` minutes become the core's ``expires_at``; reads with ``refresh_ttl``
  push it out again (``MemoryStore.set_expiry``); expired items are invisible at once, and
  ``sweep_ttl()`` (or the sweeper thread) deletes them with the core's ``sweep_expired``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import math
import os
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from shared_core import FilterError, Memory, NewMemory
from shared_core.clock import Clock
from shared_core.config import Config
from shared_core.item_search import item_scope, search_items
from shared_core.items import (
    ITEM_KIND,
    ITEM_KINDS,
    MEMORY_ITEM_KINDS,
    MEMORY_VALUE_FIELDS,
    STORE_ITEM_KINDS,
    UNINDEXED_KIND,
    item_key,
    item_text,
    item_value,
)
from shared_core.namespaces import check_labels, decode_namespace, is_template
from shared_core.namespaces import encode_namespace as _encode

from ._core import open_store
from .embeddings import LangChainEmbedder

__all__ = [
    "OpenKoiStore", "encode_namespace", "decode_namespace", "item_id", "searchable", "translate_filter",
    "store_filter", "ITEM_KIND", "UNINDEXED_KIND",
]

logger = logging.getLogger(__name__)

_KINDS = STORE_ITEM_KINDS
_INDEX_KEYS = frozenset({"dims", "embed", "fields", "distance_type"})
_TTL_KEYS = frozenset({"refresh_on_read", "default_ttl", "sweep_interval_minutes", "omit_expired"})


def searchable(where: Mapping[str, Any] | None) -> dict[str, Any]:
    """``where`` that also leaves out items put with ``index=False``: for searches over every kind.

    Their placeholder vector says nothing about their content, so a search that does not pick
    kinds (the retriever's and ``memory_search``'s default) must not see them.
    """
    visible = {"@kind": {"$ne": UNINDEXED_KIND}}
    return visible if not where else {"$and": [visible, dict(where)]}


def encode_namespace(namespace: Sequence[str]) -> str:
    """``("users", "alice")`` -> ``"users.alice."`` (:func:`shared_core.namespaces.encode_namespace`),
    with LangGraph's ``InvalidNamespaceError`` for a bad or template namespace."""
    _check_labels(namespace)
    return _encode(namespace) if namespace else ""


def item_id(namespace: Sequence[str], key: str) -> str:
    """The core id of the item ``key`` in ``namespace``: unique per (namespace, key), stable."""
    digest = hashlib.blake2b(json.dumps([list(namespace), key]).encode(), digest_size=16).hexdigest()
    return f"lg-{digest}"


class OpenKoiStore(BaseStore):
    """A LangGraph ``BaseStore`` on an openkoi-memory file, with hybrid (keyword + vector) search.

    ``OpenKoiStore("agent.db")`` opens (or creates) the file; ``OpenKoiStore(store=memory_store)``
    works on an open :class:`MemoryStore`. ``index`` is LangGraph's ``IndexConfig``:
    ``{"dims": 1536, "embed": <Embeddings | function | "provider:model">, "fields": ["text"]}``;
    ``embed`` becomes the file's embedder (wrapped by :class:`LangChainEmbedder`), without it
    the store's own embedder (the local static one by default) is used; ``fields`` defaults
    to ``["$"]``. ``ttl`` is LangGraph's ``TTLConfig`` (``default_ttl`` minutes,
    ``refresh_on_read``, ``sweep_interval_minutes``); expired items are always omitted.
    ``fusion`` picks the core's fusion for query searches (default: the store's setting).

    Use it as ``create_agent(model, tools, store=OpenKoiStore("agent.db"))``; inside tools,
    ``langgraph.config.get_store()`` (or ``ToolRuntime.store``) returns it.
    """

    supports_ttl = True

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        store: Any = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        config: Config | Mapping[str, Any] | None = None,
        clock: Clock | None = None,
        fusion: str | None = None,
    ) -> None:
        super().__init__()
        embedder, dims, fields = _index_settings(index)
        self.ttl_config = _ttl_settings(ttl)
        self.memory_store, self._owned = open_store(store, path, embedder, config=config, clock=clock)
        if dims is not None and dims != self.memory_store.embedder.dims:
            if self._owned:
                self.memory_store.close()
            raise ValueError(
                f"index dims is {dims}, but the store's embedder {self.memory_store.embedder.name!r} makes "
                f"{self.memory_store.embedder.dims}-dimensional vectors; fix dims or pass the matching embed"
            )
        self.index_config = index
        self.fusion = fusion
        self._fields = [(path_, path_ if path_ == "$" else tokenize_path(path_)) for path_ in fields]
        self._default_fields = not (index or {}).get("fields")
        placeholder = np.zeros(self.memory_store.embedder.dims, dtype=np.float32)
        placeholder[0] = 1.0
        self._placeholder = placeholder
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the TTL sweeper and close the file if this store opened it."""
        self.stop_ttl_sweeper(timeout=5)
        if self._owned:
            self.memory_store.close()

    def __enter__(self) -> OpenKoiStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenKoiStore({self.memory_store.path!r}, embedder={self.memory_store.embedder.name!r})"

    @staticmethod
    def core_namespace(namespace: Sequence[str]) -> str:
        """The core namespace a LangGraph namespace is stored under (for the core API, the CLI...)."""
        return encode_namespace(namespace)

    # -- the batch interface --------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the reads in order, then all puts and deletes in one transaction (last put of a key wins)."""
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        gets: list[tuple[int, GetOp]] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                _check_labels(op.namespace)
                gets.append((i, op))
            elif isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
            elif isinstance(op, PutOp):
                _check_put_namespace(op.namespace)
                puts[(tuple(op.namespace), op.key)] = op
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}; expected GetOp, SearchOp, PutOp or ListNamespacesOp")
        if gets:
            self._get_many(gets, results)
        if puts:
            self._write(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- reads ----------------------------------------------------------------------------------

    def _get_many(self, gets: list[tuple[int, GetOp]], results: list[Result]) -> None:
        found = self._find([(tuple(op.namespace), op.key) for _, op in gets])
        self._refresh([found[(tuple(op.namespace), op.key)] for _, op in gets
                       if op.refresh_ttl and (tuple(op.namespace), op.key) in found])
        for i, op in gets:
            memory = found.get((tuple(op.namespace), op.key))
            results[i] = None if memory is None else _item(memory)

    def _find(self, keys: Sequence[tuple[tuple[str, ...], str]]) -> dict[tuple[tuple[str, ...], str], Memory]:
        """The memory behind each (namespace, key) that exists: a store item, or a memory whose id is the key."""
        ids = {item_id(ns, key): (ns, key) for ns, key in keys}
        ids.update({key: (ns, key) for ns, key in keys if key not in ids})
        namespaces = sorted({encode_namespace(ns) for ns, _ in keys})
        found: dict[tuple[tuple[str, ...], str], Memory] = {}
        for memory in self.memory_store.list(namespace=namespaces, kind=ITEM_KINDS, ids=sorted(ids)):
            ns, key = ids[memory.id]
            if memory.namespace == encode_namespace(ns) and item_key(memory) == key:
                found.setdefault((ns, key), memory)
        return found

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = encode_namespace(op.namespace_prefix)
        where = store_filter(op.filter)
        scope = item_scope(self.memory_store, prefix)
        pairs: list[tuple[Memory, float | None]]
        if op.query:
            pairs = search_items(self.memory_store, op.query, scope=scope, where=where, limit=op.limit,
                                 offset=op.offset, fusion=self.fusion)
        elif scope["namespace"] == []:
            pairs = []
        else:
            memories = self.memory_store.list(
                **scope, kind=ITEM_KINDS, where=where, limit=op.limit, offset=op.offset,
                order_by="updated_at", descending=True,
            )
            pairs = [(memory, None) for memory in memories]
        if op.refresh_ttl:
            self._refresh([memory for memory, _ in pairs])
        return [_search_item(memory, score) for memory, score in pairs]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        literal: tuple[str, ...] = ()
        for condition in conditions:
            _check_labels([label for label in condition.path if label != "*"])
            if condition.match_type == "prefix":
                fixed = []
                for label in condition.path:
                    if label == "*":
                        break
                    fixed.append(label)
                literal = max(literal, tuple(fixed), key=len)
        counts = self.memory_store.namespaces(encode_namespace(literal) if literal else None, kind=list(ITEM_KINDS),
                                              include_expired=False)
        namespaces = []
        for text in counts:
            try:
                namespace = decode_namespace(text)
            except ValueError:
                continue  # not written by this adapter
            if all(_matches(condition, namespace) for condition in conditions):
                namespaces.append(namespace)
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    def _refresh(self, memories: Sequence[Memory]) -> None:
        """Push out the expiry of items read with ``refresh_ttl`` (the ones put with a TTL)."""
        by_ttl: dict[float, list[str]] = defaultdict(list)
        for memory in memories:
            minutes = memory.metadata.get("ttl_minutes") if memory.kind in _KINDS else None
            if minutes:
                by_ttl[float(minutes)].append(memory.id)
        for minutes, ids in by_ttl.items():
            self.memory_store.set_expiry(ids, ttl=minutes * 60)

    # -- writes ---------------------------------------------------------------------------------

    def _write(self, puts: list[PutOp]) -> None:
        existing = self._find([(tuple(op.namespace), op.key) for op in puts])
        memories = {where: m for where, m in existing.items() if m.kind in MEMORY_ITEM_KINDS}  # other doors' memories
        corrections = [(memories[(tuple(op.namespace), op.key)], _content(op)) for op in puts
                       if op.value is not None and (tuple(op.namespace), op.key) in memories]
        deletes = [memories[(tuple(op.namespace), op.key)].id if (tuple(op.namespace), op.key) in memories
                   else item_id(op.namespace, op.key) for op in puts if op.value is None]
        items = [self._new_memory(op) for op in puts
                 if op.value is not None and (tuple(op.namespace), op.key) not in memories]
        with self.memory_store.transaction():
            if deletes:
                self.memory_store.delete(deletes, missing_ok=True)
            for memory, text in corrections:
                self.memory_store.update(memory.id, text, namespace=memory.namespace)
            if items:
                self.memory_store.add_many(items)

    def _new_memory(self, op: PutOp) -> NewMemory:
        if not isinstance(op.value, Mapping):
            raise TypeError(f"a store value must be a dict, got {type(op.value).__name__} for key {op.key!r}")
        if not isinstance(op.key, str) or not op.key:
            raise ValueError(f"a store key must be a non-empty string, got {op.key!r}")
        value = dict(op.value)
        ttl = _check_ttl(op.ttl)
        common: dict[str, Any] = dict(
            id=item_id(op.namespace, op.key),
            namespace=encode_namespace(op.namespace),
            metadata={"key": op.key, "value": value, "ttl_minutes": ttl},
            source="langgraph",
            ttl=None if ttl is None else ttl * 60,
        )
        texts = [item_text(value)] if op.index is None and self._default_fields else self._texts(value, op.index)
        if texts:
            return NewMemory(text="\n".join(texts), kind=ITEM_KIND, **common)
        text = json.dumps(value, ensure_ascii=False, default=str)
        return NewMemory(text=text, kind=UNINDEXED_KIND, vector=self._placeholder, **common)

    def _texts(self, value: dict[str, Any], index: Any) -> list[str]:
        if index is False:
            return []
        if index is None:
            paths = self._fields
        elif isinstance(index, (list, tuple)) and all(isinstance(p, str) for p in index):
            paths = [(p, p if p == "$" else tokenize_path(p)) for p in index]
        else:
            raise TypeError(f"index must be False, None or a list of field paths such as ['text'], got {index!r}")
        texts: list[str] = []
        for _, tokens in paths:
            texts.extend(t for t in get_text_at_path(value, tokens) if t.strip())
        return texts

    # -- TTL sweeping -----------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired memory in the file now (the core's ``sweep_expired``); return how many."""
        return self.memory_store.sweep_expired()

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Sweep expired items every ``sweep_interval_minutes`` (else the TTL config's, else 5) in a thread.

        Returns a future that completes when :meth:`stop_ttl_sweeper` stops the thread; cancelling
        it stops the thread too.
        """
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
            return future
        interval = float(sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5)
        if not interval > 0:
            raise ValueError(f"sweep_interval_minutes must be positive, got {sweep_interval_minutes!r}")
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(interval * 60):
                try:
                    swept = self.sweep_ttl()
                    if swept:
                        logger.info("swept %d expired memories", swept)
                except Exception:  # keep sweeping: one failed sweep must not end the thread
                    logger.exception("TTL sweep failed")
            if not future.done():
                future.set_result(None)

        self._sweeper = threading.Thread(target=loop, name="openkoi-ttl-sweeper", daemon=True)
        self._sweeper.start()
        future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True once it has stopped (or was not running)."""
        if self._sweeper is None or not self._sweeper.is_alive():
            return True
        self._stop.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped


# -- LangGraph filters on the core's filter language ------------------------------------------------


def store_filter(spec: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A LangGraph filter over every item of a namespace: the stored value of the store's own items,
    the fields of ``{"content", "kind", "category", "tags"}`` of the memories other doors wrote."""
    items = translate_filter(spec)
    if items is None:
        return None
    memories = translate_filter(spec, fields=MEMORY_VALUE_FIELDS)
    own = list(STORE_ITEM_KINDS)
    return {"$or": [{"$and": [{"@kind": {"$in": own}}, items]},
                    {"$and": [{"@kind": {"$nin": own}}, memories]}]}


def translate_filter(spec: Mapping[str, Any] | None, prefix: str = "value",
                     fields: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """A LangGraph filter as a core filter over the stored value.

    ``{"status": "active"}`` and ``{"score": {"$gt": 4.99}}`` work as in LangGraph, as does any
    core operator (``$in $nin $exists $contains ...``) and ``$and``/``$or``/``$not``. A nested
    dict without operators matches the fields it names (``{"a": {"b": 1}}`` holds for
    ``{"a": {"b": 1, "c": 2}}``, like LangGraph's in-memory and Postgres stores); a list
    matches exactly; a dotted key reaches nested fields (like LangGraph's SQLite store).
    ``fields`` maps top-level value fields to the core fields that hold them (``{"content": "@text"}``).
    """
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise FilterError(f"a store filter must be a dict such as {{'status': 'active'}}, got {spec!r}")
    parts = list(_translate(spec, prefix, fields or {}))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _translate(spec: Mapping[str, Any], prefix: str, fields: Mapping[str, str]) -> Iterable[dict[str, Any]]:
    for key, expected in spec.items():
        if not isinstance(key, str) or not key:
            raise FilterError(f"filter keys must be non-empty strings, got {key!r}")
        if key in ("$and", "$or"):
            if isinstance(expected, (str, bytes, Mapping)) or not isinstance(expected, Sequence) or not expected:
                raise FilterError(f"{key} takes a non-empty list of filters, got {expected!r}")
            yield {key: [translate_filter(child, prefix, fields) or {} for child in expected]}
        elif key == "$not":
            inner = translate_filter(expected, prefix, fields)
            if inner is None:
                raise FilterError("$not needs a filter to negate")
            yield {"$not": inner}
        elif key.startswith("$"):
            raise FilterError(f"{key!r} cannot stand at the top of a filter; use $and, $or, $not, or a field name")
        else:
            path = fields.get(key) or f"{prefix}.{key}"
            if isinstance(expected, Mapping) and expected:
                operators = [k for k in expected if isinstance(k, str) and k.startswith("$")]
                if operators and len(operators) != len(expected):
                    raise FilterError(f"filter on {key!r} mixes operators and fields: {dict(expected)!r}")
                if operators:
                    yield {path: dict(expected)}
                else:
                    yield from _translate(expected, f"{prefix}.{key}", {})
            else:
                yield {path: {"$eq": expected}}


# -- helpers --------------------------------------------------------------------------------------


def _item(memory: Memory) -> Item:
    created, updated = _stamps(memory)
    return Item(namespace=decode_namespace(memory.namespace), key=item_key(memory), value=item_value(memory),
                created_at=created, updated_at=updated)


def _search_item(memory: Memory, score: float | None) -> SearchItem:
    created, updated = _stamps(memory)
    return SearchItem(namespace=decode_namespace(memory.namespace), key=item_key(memory), value=item_value(memory),
                      created_at=created, updated_at=updated, score=score)


def _stamps(memory: Memory) -> tuple[datetime, datetime]:
    """A stored memory's creation and update times (a stored row always has its creation time)."""
    if memory.created_at is None:
        raise ValueError(f"memory {memory.id!r} has no creation time; only stored memories become items")
    return memory.created_at, memory.updated_at or memory.created_at


def _content(op: PutOp) -> str:
    """The new text of a memory another door wrote, put back as an item: its value's ``content``."""
    content = op.value.get("content") if isinstance(op.value, Mapping) else None
    if not isinstance(content, str) or not content.strip():
        raise ValueError(
            f"{op.key!r} in {tuple(op.namespace)!r} is a memory (a fact, a learning...), shown as "
            "{'content': text, 'kind': ...}; put {'content': 'the corrected text'} to correct it, or use another key"
        )
    return content


def _check_labels(namespace: Sequence[str]) -> None:
    """The core's label rules, as LangGraph's ``InvalidNamespaceError``; templates refused."""
    try:
        check_labels(namespace)
    except ValueError as exc:
        raise InvalidNamespaceError(str(exc)) from None
    if is_template(tuple(namespace)):
        raise InvalidNamespaceError(
            f"namespace {tuple(namespace)!r} is a template; fill it from the run's config before calling the store "
            "(e.g. ('memories', config['configurable']['user_id'])), or give the template to create_memory_tools "
            "or OpenKoiMemoryMiddleware, which fill it per run"
        )


def _check_put_namespace(namespace: Sequence[str]) -> None:
    _check_labels(namespace)
    if not namespace:
        raise InvalidNamespaceError("an item's namespace cannot be empty; use e.g. ('memories', user_id)")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'the root label "langgraph" is reserved by LangGraph; got {namespace!r}')


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        part = namespace[: len(path)]
    elif condition.match_type == "suffix":
        part = namespace[len(namespace) - len(path) :]
    else:
        raise ValueError(f"unknown namespace match type {condition.match_type!r}; use 'prefix' or 'suffix'")
    return all(want == "*" or want == have for want, have in zip(path, part, strict=True))


def _check_ttl(ttl: Any) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"ttl is in minutes and must be a positive number (or None for no expiry), got {ttl!r}")
    return float(ttl)


def _index_settings(index: IndexConfig | None) -> tuple[LangChainEmbedder | None, int | None, list[str]]:
    if index is None:
        return None, None, ["$"]
    if not isinstance(index, Mapping):
        raise TypeError(f"index must be a dict like {{'dims': 384, 'embed': ..., 'fields': ['text']}}, got {index!r}")
    unknown = set(index) - _INDEX_KEYS
    if unknown:
        raise ValueError(f"unknown index settings {sorted(unknown)}; known: {sorted(_INDEX_KEYS)}")
    if index.get("distance_type", "cosine") != "cosine":
        raise ValueError("openkoi-memory compares vectors by cosine similarity only; drop distance_type")
    dims = index.get("dims")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        raise ValueError(f"index dims must be a positive integer, got {dims!r}")
    fields = index.get("fields") or ["$"]
    if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
        raise ValueError(f"index fields must be a list of paths such as ['text', 'tags[*]'], got {fields!r}")
    embedder = None
    if index.get("embed") is not None:
        embeddings = ensure_embeddings(index["embed"])
        embedder = LangChainEmbedder(embeddings, dims=dims)
    return embedder, dims, list(fields)


def _ttl_settings(ttl: TTLConfig | None) -> TTLConfig | None:
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise TypeError(f"ttl must be a dict like {{'default_ttl': 60, 'refresh_on_read': True}}, got {ttl!r}")
    unknown = set(ttl) - _TTL_KEYS
    if unknown:
        raise ValueError(f"unknown ttl settings {sorted(unknown)}; known: {sorted(_TTL_KEYS)}")
    _check_ttl(ttl.get("default_ttl"))
    return dict(ttl)  # type: ignore[return-value]
