"""Helpers shared by the LlamaIndex adapter tests (and their subprocesses)."""

from __future__ import annotations

from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_openkoi import OpenKoiEmbedding
from shared_core import HashingEmbedder

__all__ = ["HashEmbedding", "sample_nodes", "source"]


def HashEmbedding(embed_dim: int = 64) -> OpenKoiEmbedding:  # noqa: N802 - reads like the class it was
    """A LlamaIndex embedding model with real (spelling-level) similarity and no network."""
    return OpenKoiEmbedding(HashingEmbedder(dims=embed_dim))


def source(doc_id: str) -> dict:
    return {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc_id)}


def sample_nodes() -> list[TextNode]:
    """Five nodes from three documents, with 4-d embeddings whose geometry tests can rely on."""
    return [
        TextNode(id_="n1", text="The lighthouse keeper logged every storm", embedding=[1.0, 0.0, 0.0, 0.0],
                 metadata={"author": "Ana", "theme": "sea", "rating": 4.5, "year": 1999,
                           "tags": ["storm", "sea"], "note": "", "file.name": "keeper.txt"},
                 relationships=source("doc-a")),
        TextNode(id_="n2", text="Storm clouds gathered over the harbour", embedding=[0.8, 0.6, 0.0, 0.0],
                 metadata={"author": "Ben", "theme": "sea", "rating": 3, "year": 2005, "tags": ["storm"],
                           "file.name": "harbour.txt"},
                 relationships=source("doc-a")),
        TextNode(id_="n3", text="A recipe for apple pie with cinnamon", embedding=[0.0, 0.0, 1.0, 0.0],
                 metadata={"author": "Cleo", "theme": "food", "rating": 5, "year": 2020,
                           "tags": ["baking", "apple"], "note": None, "public": True},
                 relationships=source("doc-b")),
        TextNode(id_="n4", text="Bread dough rises overnight in the fridge", embedding=[0.0, 0.0, 0.6, 0.8],
                 metadata={"author": "ana maria", "theme": "food", "rating": 2, "tags": [], "public": False},
                 relationships=source("doc-b")),
        TextNode(id_="n5", text="Mountain trails close after the first snow", embedding=[0.0, 1.0, 0.0, 0.0],
                 metadata={"author": "Dev", "theme": "travel", "rating": 4, "year": 2015},
                 relationships=source("doc-c")),
    ]
