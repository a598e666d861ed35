"""One scheduling pass, as a pure function: the cluster and the queue in, decisions out.

No database, no clock, no I/O: `services.queue.passes` reads the state and applies the decisions,
the
trace replay in bench/scheduler.py drives the same function with a simulated clock, and the
property tests call it directly. The rules (docs/scheduler.md):

- Order: priority (higher first), then fair share (less recent usage first), then age.
- Gang placement: all of a job's devices at once or none, on one node or several. Explicit
  devices wait for exactly those (on any nodes); a count takes any free devices of its node
  whose free memory holds its estimate; a count spread over nodes takes the same number on
  each of the fewest nodes it allows that have them (best fit: the nodes with the fewest
  free devices that suffice). A device with a process GPUDeck did not start, or on a node
  that stopped reporting (offline), is busy.
- EASY backfill: the first job that cannot start gets a reservation (the earliest time its
  devices are free, from the time limits of the jobs holding them); a job further down starts
  now only if it cannot delay that reservation (it ends before it, or uses other devices).
- Quotas: a user's jobs never hold more than `max_devices` devices at once.
- Dependencies: a job waits until all it depends on succeeded; if one failed, was cancelled,
  lost or timed out, the job is cancelled with that reason.
- Preemption: a job that cannot start now may stop running `preemptible` jobs of lower
  priority (whole jobs, fewest first) when their devices let it start: on its node, its named
  devices, or, for a count spread over nodes, a placement by its own rule; it then waits for
  them to stop with a final checkpoint (they are queued again, to resume). A shared device
  comes free only when every job sharing it is such a victim; a job that shares by memory
  stops sharing jobs until its reservation fits (share_preempt.py).

The pass is a pipeline of named steps (decide.py: gate -> try_start -> try_preempt ->
reserve_ahead), each in a module of its own concern: model (the values), state (the devices
as the pass sees them), choose (which free devices), sharing (best fit by memory), backfill
(EASY), preempt and share_preempt (victims).
"""

from gpudeck.services.queue.plan.choose import choose_spread
from gpudeck.services.queue.plan.decide import plan
from gpudeck.services.queue.plan.model import (
    FAILED_DEPENDENCY,
    NEVER,
    Dev,
    Holding,
    Info,
    Key,
    Plan,
    Policy,
    Quota,
    Start,
    Waiting,
    dependency_state,
    order_key,
)

__all__ = [
    "FAILED_DEPENDENCY",
    "NEVER",
    "Dev",
    "Holding",
    "Info",
    "Key",
    "Plan",
    "Policy",
    "Quota",
    "Start",
    "Waiting",
    "choose_spread",
    "dependency_state",
    "order_key",
    "plan",
]
