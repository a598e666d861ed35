"""Give a request's database connection back in the thread that used it.

FastAPI runs a sync endpoint in a worker thread, then needs *another* worker thread to
serialise its return value, and only then runs dependency teardown. Under load that is a
deadlock: every thread waits for a pooled connection while every connection belongs to a
finished endpoint waiting for a thread (bench/reservation.py hung at 200 clients). Closing the
endpoint's Session in the endpoint's own thread, as it returns, breaks the cycle: a connection
is never held by a request that is not running. Endpoints therefore return plain values or
Pydantic models, never ORM objects that lazy-load later.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session


def _closing_sessions(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(endpoint, "_closes_sessions", False):  # routers are shared by every app made
        return endpoint

    @functools.wraps(endpoint)
    def wrapper(**kwargs: Any) -> Any:
        try:
            return endpoint(**kwargs)
        finally:
            for value in kwargs.values():
                if isinstance(value, Session):
                    value.close()

    wrapper._closes_sessions = True  # type: ignore[attr-defined]
    return wrapper


def release_sessions_in_endpoint_thread(router: APIRouter) -> APIRouter:
    """Wrap the router's sync endpoints; call before the router is included in an app."""
    for route in router.routes:
        if isinstance(route, APIRoute) and not inspect.iscoroutinefunction(route.endpoint):
            # Both: including a router rebuilds its routes from `endpoint`.
            route.endpoint = _closing_sessions(route.endpoint)
            route.dependant.call = route.endpoint
    return router
