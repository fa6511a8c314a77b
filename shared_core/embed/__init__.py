"""Embedders: the protocol, the static default, the hashing one, HTTP services (OpenAI-compatible, Ollama) and local models,
each buildable from one string (:func:`embedder_from_name`)."""

from __future__ import annotations

from .base import (
    Embedder,
    EmbedderProfile,
    EmbeddingError,
    EmbeddingServiceError,
    as_matrix,
    as_vector,
    check_dims,
    check_embedder,
    profile_of,
)
from .hashes import EMBEDDING_TEXT_VERSION, content_hash, fnv1a_64
from .hashing import HashingEmbedder
from .http import RetryPolicy
from .local import FastEmbedEmbedder, Model2VecEmbedder
from .names import EMBEDDER_FORMS, embedder_from_name
from .precomputed import PrecomputedVectors
from .remote import OllamaEmbedder, OpenAIEmbedder
from .sentence import SentenceTransformerEmbedder
from .static import StaticEmbedder

__all__ = [
    "Embedder",
    "EmbedderProfile",
    "EmbeddingError",
    "EmbeddingServiceError",
    "HashingEmbedder",
    "OpenAIEmbedder",
    "OllamaEmbedder",
    "FastEmbedEmbedder",
    "Model2VecEmbedder",
    "RetryPolicy",
    "EMBEDDER_FORMS",
    "PrecomputedVectors",
    "SentenceTransformerEmbedder",
    "StaticEmbedder",
    "EMBEDDING_TEXT_VERSION",
    "content_hash",
    "fnv1a_64",
    "as_matrix",
    "as_vector",
    "check_dims",
    "check_embedder",
    "profile_of",
    "embedder_from_name",
]

