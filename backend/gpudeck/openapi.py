"""Print the OpenAPI schema (no server, no database): `python -m gpudeck.openapi`."""

from __future__ import annotations

import json
import sys

from gpudeck.core.config import Settings
from gpudeck.main import create_app


def openapi_json() -> str:
    app = create_app(
        Settings(database_url="postgresql://unused/unused", redis_url="redis://unused")
    )
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(openapi_json())
