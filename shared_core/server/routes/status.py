"""Maintenance (status, run now) and health."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, FastAPI, Request

from ..auth import Principal
from ..schemas import HealthOut, MaintenanceOut
from .access import principal_of, require_unrestricted

if TYPE_CHECKING:
    from ...store import MemoryStore
    from ..scheduler import MaintenanceScheduler

__all__ = ["server_routes", "server_version"]


def server_routes(app: FastAPI, store: MemoryStore, scheduler: MaintenanceScheduler | None) -> None:
    from ..scheduler import MaintenanceScheduler

    status_source = scheduler or MaintenanceScheduler(store, enabled=False)

    @app.get("/api/maintenance", tags=["maintenance"], response_model=MaintenanceOut,
             summary="The maintenance schedule and its last runs")
    def maintenance_status(request: Request) -> MaintenanceOut:
        details = principal_of(request).unrestricted  # step summaries count rows of every namespace
        return MaintenanceOut(**status_source.status(details=details))

    @app.post("/api/maintenance/run", tags=["maintenance"], response_model=MaintenanceOut,
              summary="Run maintenance now (a token for every namespace only)")
    def run_maintenance(principal: Annotated[Principal, Depends(require_unrestricted)]) -> MaintenanceOut:
        status_source.check(force=True)
        return MaintenanceOut(**status_source.status())

    @app.get("/api/health", tags=["server"], response_model=HealthOut, summary="Is the server up; who am I")
    def health(request: Request) -> HealthOut:
        principal = principal_of(request)
        return HealthOut(status="ok", version=server_version(), principal=principal.name,
                         namespaces=list(principal.namespaces))


def server_version() -> str:
    """The library's version, as the API reports it."""
    from ... import __version__

    return __version__
