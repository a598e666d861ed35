"""The bench's probe: its first statement records when the script started running."""

import time

started = time.time()

import os  # noqa: E402
from pathlib import Path  # noqa: E402

if os.environ.get("RANK") == "0":
    Path(os.environ["FIRST_LINE_FILE"]).write_text(f"{started:.6f}")
