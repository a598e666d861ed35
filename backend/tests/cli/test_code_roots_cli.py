"""`gpudeck submit script` on a server with no code root: the refusal says which setting to
set, not only that none is set."""

from __future__ import annotations

import json

from cli_harness import Cli


def test_no_code_root_names_the_setting_that_configures_one(cli: Cli) -> None:
    config = json.dumps({"entrypoint": "train.py"})
    submitted = cli("submit", "script", "--config", config, "--count", "1")
    assert submitted.returncode == 1
    assert "422 config.entrypoint: no code root is configured on this server" in submitted.stderr
    assert "GPUDECK_SCRIPT_CODE_ROOTS (comma-separated directories" in submitted.stderr
