"""A rank that ignores SIGTERM and sleeps: only SIGKILL ends it (cancel's grace period)."""

import os
import signal
import time
from pathlib import Path

signal.signal(signal.SIGTERM, signal.SIG_IGN)
Path(os.environ["GPUDECK_CHECKPOINT_DIR"], f"started.{os.environ['RANK']}").touch()
while True:
    time.sleep(1)
