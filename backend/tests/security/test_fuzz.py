"""Schemathesis against the OpenAPI schema, on a live server, with a valid admin token: no 5xx
and no response that breaks the schema. Bounded here (`make test`); bench/fuzz.sh runs it long
(GPUDECK_FUZZ_EXAMPLES, GPUDECK_FUZZ_MAX_TIME_S)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

from harness import create_token, live_server
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings

EXAMPLES = int(os.environ.get("GPUDECK_FUZZ_EXAMPLES", "8"))
MAX_TIME_S = os.environ.get("GPUDECK_FUZZ_MAX_TIME_S")
# The coverage phase alone takes minutes (boundary values of every field): bench/fuzz.sh only.
SEED = os.environ.get("GPUDECK_FUZZ_SEED", "1")
PHASES = os.environ.get("GPUDECK_FUZZ_PHASES", "examples,fuzzing,stateful")
CHECKS = "not_a_server_error,response_schema_conformance"
# `GET /api/jobs/{id}/logs?follow=true` streams a queued job's log until the job ends, which it
# never does here (no worker): such a case is a client timeout, not a finding.
STREAMING = {"GET /api/jobs/{job_id}/logs"}


def fuzz_token(factory: sessionmaker[Session]) -> str:
    # A token id no fuzzer guesses, so DELETE /api/auth/tokens/{id} never revokes the run's own.
    with factory() as session:
        session.execute(text("ALTER SEQUENCE api_tokens_id_seq RESTART WITH 987654321"))
        session.commit()
    return create_token(factory, "admin", "fuzzer")


def test_schemathesis_finds_no_server_errors(
    settings: Settings, session_factory: sessionmaker[Session], devices: str, tmp_path: Path
) -> None:
    token = fuzz_token(session_factory)
    report = tmp_path / "report"
    with live_server(settings) as url:
        command = [str(Path(sys.executable).with_name("st")), "run", f"{url}/openapi.json"]
        command += ["--header", f"Authorization: Bearer {token}", "--checks", CHECKS]
        command += ["--max-examples", str(EXAMPLES), "--seed", SEED, "--phases", PHASES]
        command += ["--workers", "1", "--request-timeout", "5", "--suppress-health-check", "all"]
        command += ["--report", "junit", "--report-dir", str(report)]
        if MAX_TIME_S:
            command += ["--max-time", MAX_TIME_S]
        # cwd: schemathesis keeps a cache in .schemathesis/ of its working directory.
        result = subprocess.run(command, capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    summary = result.stdout[-6000:]
    print(summary)
    problems = junit_problems(report)
    assert problems == [], summary + result.stderr[-2000:]


def junit_problems(report: Path) -> list[str]:
    """Every failure, and every error other than a timed-out log stream."""
    problems = []
    for path in report.glob("junit*.xml"):
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            for child in case:
                if child.tag == "failure" or (
                    child.tag == "error" and case.get("name") not in STREAMING
                ):
                    problems.append(f"{case.get('name')}: {child.get('message')}")
    assert list(report.glob("junit*.xml")), "schemathesis wrote no report"
    return problems
