"""What a process's first submit would pay once, paid at start (api/warm_up.py): every kind's
code imported, and the statements every request starts with (the token lookup, a token's
last-use update) and the reads of the submit path (placement, quota, the queue pass)
compiled into the engine's statement cache by running them. Nothing is found or written
(no token matches, no row has id 0); the caller rolls the session back."""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from gpudeck.core.security import new_token
from gpudeck.engine.kinds import registry
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.accounts import users
from gpudeck.services.errors import DomainError
from gpudeck.services.queue import passes, snapshot
from gpudeck.services.submit import placement_request

log = logging.getLogger(__name__)


def import_kind_code() -> None:
    """Resolve each kind's code references now (a kind's check_inputs module may take tens of
    milliseconds to import); a broken one is left for its first use to report."""
    for kind in registry().values():
        for resolve in (
            kind.resolve_estimate,
            kind.resolve_check_inputs,
            kind.resolve_max_batch,
            kind.resolve_expectations,
            kind.resolve_follow_up,
        ):
            try:
                resolve()
            except Exception:
                log.warning("kind %r: %s failed at warm-up", kind.name, resolve.__name__)


def token_path(session: Session) -> None:
    """A request's token lookup, of a token nobody holds, and its last-use update, of none."""
    users.authenticate(session, new_token())
    users.record_use(session, 0, datetime.now(UTC))


def read_submit_path(session: Session, half_life_s: float) -> None:
    """The submit path's reads, for one device of any node (nothing is written)."""
    kinds = list(registry())
    if not kinds:
        return
    with contextlib.suppress(DomainError):  # no node yet, say: the reads ran all the same
        placement_request.resolve(session, JobCreate(kind=kinds[0], count=1))
    snapshot.quota_of(session, "")
    passes.compute_plan(session, None, half_life_s=half_life_s)
