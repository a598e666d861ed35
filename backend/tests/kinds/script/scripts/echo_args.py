"""Writes what it received (argv and a few variables) to $GPUDECK_CHECKPOINT_DIR/../argv.json:
shows that arguments arrive as given, never through a shell."""

import json
import os
import sys
from pathlib import Path

if os.environ.get("RANK") == "0":
    seen = {
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("GPUDECK_", "CUDA_", "G"))},
        "database_url": os.environ.get("GPUDECK_DATABASE_URL"),
    }
    out = Path(os.environ["GPUDECK_CHECKPOINT_DIR"]).parent / "argv.json"
    out.write_text(json.dumps(seen))
