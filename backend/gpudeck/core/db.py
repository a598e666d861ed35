"""Engine and session factory. The request dependency or task wrapper owns each transaction."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.abc import PQGen
from sqlalchemy import Engine, create_engine, event, exc
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

if TYPE_CHECKING:
    from gpudeck.core.config import Settings

log = logging.getLogger(__name__)
RV = TypeVar("RV")


class Base(DeclarativeBase):
    pass


@dataclass(frozen=True, kw_only=True)
class DbTimeouts:
    """Bounds on every wait for Postgres, so an unreachable or paused server is an error in
    seconds rather than a hang (the API turns it into a 503).

    `statement_ms` is enforced by the server; a paused server enforces nothing, so every
    round trip also has a client-side deadline (`statement_ms` plus a margin), and a pooled
    connection is pinged with a short deadline before use."""

    connect_s: int = 2  # libpq's (and psycopg's) minimum
    # An API request answers within 2 s, a 503 if the database does not: a query that arrives
    # as Postgres pauses would otherwise wait the whole statement timeout. Every API query is a
    # point lookup or a short write; long work runs in workers, which use no such bound.
    statement_ms: int = 1500
    deadline_margin_s: float = 0.5
    ping_s: float = 1.5  # under 2 s, yet well above a loaded machine's slowest answer
    # A connection back in the pool for less than this is not pinged: it answered a moment
    # ago (HikariCP skips its alive check within 500 ms the same way). A busy API then pays
    # no extra round trip a request; a server restart takes longer than this, so connections
    # idle across it are still pinged, and one in use as the server died fails once (a 503)
    # and has the pool replace every connection.
    ping_idle_s: float = 1.0
    pool_s: float = 2.0


API_TIMEOUTS = DbTimeouts()


class DatabaseTimeout(pg_errors.OperationalError):
    """The server did not answer in time; the connection was closed (its protocol state is
    unknown), so the pool discards it."""


class _BoundedConnection(psycopg.Connection[Any]):
    """A psycopg connection whose every wait for the server has a deadline."""

    wait_deadline_s: float | None = None

    def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        try:
            return super().wait(
                gen, interval, timeout if timeout is not None else self.wait_deadline_s
            )
        except pg_errors._WaitTimeout:
            self.pgconn.finish()
            raise DatabaseTimeout(
                f"no answer from the database within {timeout or self.wait_deadline_s} s"
            ) from None


def _bounded_ping(connection: _BoundedConnection, ping_s: float) -> None:
    """What pool_pre_ping does, with a deadline. A dead socket (server restarted) is a
    DisconnectionError, so the pool reconnects; a server that does not answer is an error at
    once, rather than a second wait on connect."""
    deadline_s = connection.wait_deadline_s
    connection.wait_deadline_s = ping_s
    try:
        connection.autocommit = True  # no transaction left open by the ping
        connection.execute("SELECT 1")
        connection.autocommit = False
    except DatabaseTimeout:
        raise
    except psycopg.Error as error:
        raise exc.DisconnectionError(str(error)) from error
    finally:
        connection.wait_deadline_s = deadline_s


def _install_timeouts(engine: Engine, timeouts: DbTimeouts) -> None:
    deadline_s = timeouts.statement_ms / 1000 + timeouts.deadline_margin_s

    @event.listens_for(engine, "do_connect")
    def connect(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        connection = _BoundedConnection.connect(*cargs, **cparams)
        connection.wait_deadline_s = deadline_s
        return connection

    @event.listens_for(engine, "checkin")
    def returned(dbapi_connection: Any, record: Any) -> None:
        record.info["returned_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def ping(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        returned_at = record.info.get("returned_at")
        if returned_at is None or time.monotonic() - returned_at >= timeouts.ping_idle_s:
            _bounded_ping(dbapi_connection, timeouts.ping_s)


def make_engine(
    url: str,
    *,
    pool_size: int = 20,
    timeouts: DbTimeouts | None = None,
    idle_in_transaction_s: float | None = None,
) -> Engine:
    """`timeouts` bounds every wait (the API passes API_TIMEOUTS); without it, only the
    pre-ping: an embedded Postgres restarted under a long-lived process must not surface as an
    error on the first use after it.

    `idle_in_transaction_s`: Postgres ends a session of this engine that sits inside a
    transaction doing nothing for longer (Settings.idle_in_transaction_s, a lease), and with it
    the row locks it held. A process frozen mid-transaction (SIGSTOP, a hung machine) otherwise
    keeps them for as long as it stays frozen: a worker stopped inside its heartbeat held its
    job's row, the reaper's SKIP LOCKED passed over it and the job never read lost, and every
    other node's heartbeat for that job waited on the lock."""
    options = []
    if timeouts is not None:
        options.append(f"-c statement_timeout={timeouts.statement_ms}")
    if idle_in_transaction_s is not None:
        options.append(
            f"-c idle_in_transaction_session_timeout={round(idle_in_transaction_s * 1000)}"
        )
    connect_args: dict[str, Any] = {"options": " ".join(options)} if options else {}
    if timeouts is None:
        return create_engine(
            url, pool_size=pool_size, max_overflow=20, pool_pre_ping=True, connect_args=connect_args
        )
    engine = create_engine(
        url,
        pool_size=pool_size,
        max_overflow=20,
        pool_timeout=timeouts.pool_s,
        connect_args={"connect_timeout": timeouts.connect_s, **connect_args},
    )
    _install_timeouts(engine, timeouts)
    return engine


def service_engine(
    settings: Settings, *, pool_size: int, timeouts: DbTimeouts | None = None
) -> Engine:
    """The engine of a long-lived GPUDeck process (API, worker, scheduler, sampler): its
    settings' database, a session idle inside a transaction for longer than a lease ended by
    the server (make_engine's `idle_in_transaction_s`)."""
    return make_engine(
        settings.sqlalchemy_url,
        pool_size=pool_size,
        timeouts=timeouts,
        idle_in_transaction_s=settings.idle_in_transaction_s,
    )


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any exception."""
    with factory() as session, session.begin():
        yield session
