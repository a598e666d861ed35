"""Imported only by the launcher's forkserver (last in its preload list), never elsewhere.

- Moves the forkserver into a process group of its own, so a signal aimed at the worker's
  group (Ctrl-C, `gpudeck run` stopping its parts) does not kill it while ranks still run: it
  reports their exit codes, and the worker stops them itself (final checkpoint first). It still
  exits when the worker does (its multiprocessing lifeline closes).
- Dies with the worker, even by SIGKILL (PR_SET_PDEATHSIG): multiprocessing's own lifeline is
  only read between forks, and a forkserver busy importing or forking would outlive it. Ranks do
  not inherit this (the kernel clears it on fork): they watch the worker's lifeline pipe instead,
  since their parent is this forkserver, not the worker.
- Imports each registered kind's train module once, so forks find them ready. The registry's
  cache is then cleared: a rank builds it again in its own environment (sys.path and
  GPUDECK_KIND_MODULES as the worker set them), cheaply, since the modules are loaded.
"""

from __future__ import annotations

import contextlib
import os

from gpudeck.core.linux import die_with_parent
from gpudeck.engine import kinds
from gpudeck.engine.launch import FORKSERVER_PARENT_ENV

die_with_parent()
# The worker may have died before that: then this process was reparented and must go now.
if os.getppid() != int(os.environ.get(FORKSERVER_PARENT_ENV, os.getppid())):
    os._exit(1)
os.setpgid(0, 0)
for _kind in kinds.registry().values():
    with contextlib.suppress(Exception):  # a broken kind fails in its own job, not here
        _kind.resolve_train()
kinds.registry.cache_clear()
