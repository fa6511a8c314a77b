"""JSON over HTTP for the embedding services, with retries: the standard library only.

A request that meets a rate limit (429), a server error (5xx) or a connection that fails or
times out is tried again after a wait that doubles each time (or the server's ``Retry-After``);
any other HTTP error is final at once. ``sleep`` is injectable so that tests never wait.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .base import EmbeddingServiceError

__all__ = ["RetryPolicy", "JsonClient", "HttpError"]

_RETRIED_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry: ``attempts`` tries in all, waits of ``initial_delay`` seconds
    doubling up to ``max_delay`` (a server's ``Retry-After`` is honoured up to ``max_retry_after``)."""

    attempts: int = 6
    initial_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if self.initial_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("retry delays must not be negative")

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """The wait before retry number ``retry`` (0 for the first)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return min(self.initial_delay * (2.0**retry), self.max_delay)


@dataclass
class HttpError:
    """An HTTP error answer: its status and the message the server gave (if any)."""

    status: int
    message: str


class JsonClient:
    """POSTs JSON and reads JSON back, retrying what may pass."""

    def __init__(
        self,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.sleep = sleep

    def post(self, url: str, body: Mapping[str, Any], *, describe: str, hint: str = "",
             on_error: Callable[[HttpError], EmbeddingServiceError] | None = None) -> Any:
        """The decoded JSON answer to ``body`` POSTed at ``url``; :class:`EmbeddingServiceError` after
        the last try, or at once for an answer no retry would change (a refused key, a bad request).

        ``describe``: what the errors call the service (``"the OpenAI API at https://..."``); ``hint``:
        what an unreachable service's error tells the user to do; ``on_error``: turns an HTTP error
        answer into the exception to raise (so each service can name its own key or command).
        """
        data = json.dumps(body).encode("utf-8")
        problem = ""
        retry_after: float | None = None
        for attempt in range(self.retry.attempts):
            if attempt:
                self.sleep(self.retry.delay(attempt - 1, retry_after))
                retry_after = None
            request = urllib.request.Request(url, data=data, headers=self.headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:
                error = HttpError(exc.code, _error_message(exc))
                exc.close()
                if exc.code not in _RETRIED_STATUSES:
                    raise (on_error(error) if on_error else _generic(describe, error)) from None
                retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
                problem = f"HTTP {error.status}" + (f": {error.message}" if error.message else "")
                continue
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", None) or exc
                problem = f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__
                continue
            try:
                return json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise EmbeddingServiceError(
                    f"{describe} answered with something that is not JSON ({raw[:200]!r}); check that the URL "
                    "points at the embedding API"
                ) from None
        tries = f"{self.retry.attempts} tries" if self.retry.attempts > 1 else "1 try"
        if problem.startswith("HTTP "):  # it answered, with errors
            raise EmbeddingServiceError(f"{describe} kept failing after {tries} ({problem}); try again later, "
                                        "or see the service's status or log")
        raise EmbeddingServiceError(f"{describe} did not answer after {tries} ({problem}); "
                                    + (hint or "check that it is running and reachable, then try again"))


def _generic(describe: str, error: HttpError) -> EmbeddingServiceError:
    detail = f": {error.message}" if error.message else ""
    return EmbeddingServiceError(f"{describe} refused the request (HTTP {error.status}{detail})")


def _error_message(exc: urllib.error.HTTPError) -> str:
    """The message in an error answer: OpenAI's ``{"error": {"message"}}``, Ollama's ``{"error"}``, or its text."""
    try:
        raw = exc.read(4096)
    except (OSError, http.client.HTTPException):
        return str(exc.reason or "")
    try:
        payload = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return raw.decode("utf-8", "replace").strip()[:300]
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    return str(error if error is not None else payload)[:300]


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the HTTP-date form is not used by these APIs: ignored)."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None
