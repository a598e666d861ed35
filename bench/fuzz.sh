#!/usr/bin/env bash
# A long schemathesis run against every operation in the OpenAPI schema, on a live GPUDeck with a
# valid admin token: fails on any 5xx or any response that breaks the schema.
# The bounded run of the same test is part of `make test`; results go in docs/security.md.
#
#   bench/fuzz.sh                      # 200 examples per operation, seed 1
#   EXAMPLES=1000 SEED=7 bench/fuzz.sh
#   MAX_TIME_S=1800 bench/fuzz.sh      # repeat fuzzing until the time budget is spent
set -euo pipefail
cd "$(dirname "$0")/../backend"
BIN=${BIN:-../.venv/bin}
export GPUDECK_FUZZ_EXAMPLES=${EXAMPLES:-200}
export GPUDECK_FUZZ_SEED=${SEED:-1}
export GPUDECK_FUZZ_PHASES=${PHASES:-examples,coverage,fuzzing,stateful}
if [[ -n "${MAX_TIME_S:-}" ]]; then export GPUDECK_FUZZ_MAX_TIME_S=$MAX_TIME_S; fi
started=$(date +%s)
"$BIN/pytest" -q -s -p no:randomly --timeout=0 tests/security/test_fuzz.py
echo "fuzz: ${GPUDECK_FUZZ_EXAMPLES} examples/operation, seed ${GPUDECK_FUZZ_SEED}," \
     "$(( $(date +%s) - started )) s"
