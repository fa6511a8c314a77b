"""Who is asking, and for which namespace: the dependencies every route uses.

A token limited to namespaces gets 403 for any other namespace, before anything is looked up, so a
403 never tells whether something exists there.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request, status

from ...memories import DEFAULT_NAMESPACE, check_namespace
from ..asgi import PRINCIPAL_KEY
from ..auth import Principal

__all__ = ["Namespace", "principal_of", "resolve_namespace", "require_unrestricted", "not_found"]

_NAMESPACE_HELP = ("Whose memory: a user, an agent, a project (e.g. 'user:alice'). Default: the token's only "
                   "namespace if it is limited to one, else 'default'.")


def principal_of(request: Request) -> Principal:
    principal = request.scope.get("state", {}).get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):  # only if the app runs without its auth middleware
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "no credentials")
    return principal


def resolve_namespace(
    request: Request,
    namespace: Annotated[str | None, Query(max_length=500, description=_NAMESPACE_HELP)] = None,
) -> str:
    principal = principal_of(request)
    chosen = namespace if namespace is not None else (principal.default_namespace or DEFAULT_NAMESPACE)
    try:
        check_namespace(chosen)
        chosen.encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "namespace must be a non-empty string such as "
                            "'user:alice' (no NUL characters)") from None
    if not principal.allows(chosen):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this token may not use that namespace")
    return chosen


def require_unrestricted(request: Request) -> Principal:
    principal = principal_of(request)
    if not principal.unrestricted:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this needs a token for every namespace ('*')")
    return principal


Namespace = Annotated[str, Depends(resolve_namespace)]


def not_found(what: str, ident: str, namespace: str) -> HTTPException:
    return HTTPException(status.HTTP_404_NOT_FOUND, f"no {what} with id {ident!r} in namespace {namespace!r}")
