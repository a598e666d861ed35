"""Dependency aliases, so route signatures read like prose."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings


def get_session(request: Request) -> Iterator[Session]:
    """A session per request. Routes that write commit explicitly (before side effects such as
    dispatching a task); anything left uncommitted is rolled back."""
    with request.app.state.sessionmaker() as session:
        try:
            yield session
        finally:
            session.rollback()


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
