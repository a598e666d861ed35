"""Engine and session factory. The request dependency or task wrapper owns each transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker


class Base(DeclarativeBase):
    pass


def make_engine(url: str, *, pool_size: int = 20) -> Engine:
    # pool_pre_ping: an embedded Postgres restarted under a long-lived API must not
    # surface as a 500 on the first request after it.
    return create_engine(url, pool_size=pool_size, max_overflow=20, pool_pre_ping=True)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any exception."""
    with factory() as session, session.begin():
        yield session
