"""Who is asking: the principal the security middleware put on the request."""

from __future__ import annotations

from fastapi.requests import HTTPConnection

from gpudeck.core.security import Principal
from gpudeck.services.errors import Forbidden, NotAuthenticated


def current_principal(connection: HTTPConnection) -> Principal:
    principal = connection.scope.get("state", {}).get("principal")
    if not isinstance(principal, Principal):
        # Only reachable on a public route that asks for a user: a programming error, refused.
        raise NotAuthenticated
    return principal


def admin_principal(connection: HTTPConnection) -> Principal:
    principal = current_principal(connection)
    if not principal.is_admin:
        raise Forbidden("this needs an admin")
    return principal
