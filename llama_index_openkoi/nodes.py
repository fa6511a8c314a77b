"""LlamaIndex nodes as openkoi memories, and back.

A node becomes a memory of kind ``node``: its text is the memory's text (keyword-indexed),
its embedding the memory's vector, and everything else (metadata, relationships,
templates) is serialised with LlamaIndex's own ``node_to_metadata_dict`` into the
memory's metadata, which also carries ``ref_doc_id``/``doc_id``/``document_id`` so they
can be filtered on. ``metadata_dict_to_node`` rebuilds the node. Memory ids are
``<namespace>/<node id>`` (ids are unique across a file's namespaces, node ids need only
be unique within a store); ``owner_id`` keeps the plain node id.

Other memories (facts, document chunks from the knowledge base, ...) read as ``TextNode``s
with the memory id as node id; a document chunk's ``ref_doc_id`` is its document's id.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from shared_core import Hit, Memory, NewMemory
from shared_core.clock import to_iso

__all__ = ["NODE_KIND", "SOURCE", "memory_id", "node_to_memory", "memory_to_node", "hit_to_node"]

NODE_KIND = "node"
SOURCE = "llamaindex"  # the source column is keyword-indexed: one token nobody searches for
SCORE_KEYS = ("score_parts", "memory_id", "memory_kind", "memory_namespace")
# where a knowledge-base chunk sits in its document, and when a memory was made: not for the LLM
_BOOKKEEPING = ("document_id", "chunk_index", "start", "end", "created_at")


def memory_id(namespace: str, node_id: str) -> str:
    return f"{namespace}/{node_id}"


def node_to_memory(node: BaseNode, namespace: str) -> NewMemory:
    """The memory a node is stored as (its embedding, if any, as the vector)."""
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            f"node {node.node_id!r} has no text; OpenKoiVectorStore keeps text nodes (their text is "
            "keyword-indexed), so drop empty nodes before adding them"
        )
    metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=False)
    return NewMemory(
        text=text,
        id=memory_id(namespace, node.node_id),
        kind=NODE_KIND,
        namespace=namespace,
        source=SOURCE,
        metadata=metadata,
        owner_id=node.node_id,
        vector=node.embedding,
    )


def memory_to_node(memory: Memory) -> BaseNode:
    """The node a memory holds; memories that never were nodes become ``TextNode``s."""
    if "_node_content" in memory.metadata:
        return metadata_dict_to_node(memory.metadata, text=memory.text)
    metadata: dict[str, Any] = dict(memory.metadata)
    if memory.tags:
        metadata.setdefault("tags", list(memory.tags))
    if memory.category:
        metadata.setdefault("category", memory.category)
    if memory.created_at:
        metadata.setdefault("created_at", to_iso(memory.created_at))
    document = metadata.get("document_id")  # a knowledge-base chunk names its document
    relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=document)} if isinstance(document, str) else {}
    hidden = [key for key in _BOOKKEEPING if key in metadata]
    return TextNode(id_=memory.id, text=memory.text, metadata=metadata, relationships=relationships,
                    excluded_llm_metadata_keys=hidden, excluded_embed_metadata_keys=list(hidden))


def hit_to_node(hit: Hit) -> BaseNode:
    """The node of a search hit, with the score parts and memory identity in its metadata.

    Those keys are excluded from what the LLM and the embedder see.
    """
    node = memory_to_node(hit.memory)
    node.metadata["score_parts"] = hit.parts.to_dict()
    node.metadata["memory_id"] = hit.memory.id
    node.metadata["memory_kind"] = hit.memory.kind
    node.metadata["memory_namespace"] = hit.memory.namespace
    for keys in (node.excluded_llm_metadata_keys, node.excluded_embed_metadata_keys):
        keys.extend(k for k in SCORE_KEYS if k not in keys)
    return node
