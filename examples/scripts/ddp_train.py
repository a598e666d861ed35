"""A plain DDP training script on synthetic data: run it with torchrun, or as a GPUDeck
`script` job, unchanged.

    torchrun --nproc-per-node 2 examples/scripts/ddp_train.py --steps 200 --seed 0

It fits a small MLP to a fixed random teacher network. Each rank draws its own shard of every
global batch from a generator seeded by (seed, step), so the run is the same whatever the
launcher. It prints `final_loss <value>` from rank 0 at the end.

What GPUDeck adds, all optional (the script runs without them):
- `gpudeck.report(step=..., loss=...)`: live metrics on the job page;
- `$GPUDECK_CHECKPOINT_DIR`: checkpoints written there (as `step_<n>` directories, renamed
  into place whole) are listed and downloadable; `$GPUDECK_RESUME_DIR` is the one to resume;
- `@record`: torchelastic writes the failing rank's traceback for GPUDeck to show.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel

try:
    from gpudeck import report
except ImportError:  # plain torchrun, gpudeck not installed

    def report(step: int, total: int | None = None, **metrics: float) -> None:
        pass


D_IN, HIDDEN = 32, 64
stop_requested = False


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report-every", type=int, default=10)
    parser.add_argument("--checkpoint-every", type=int, default=0)
    parser.add_argument("--fail-rank", type=int, default=-1, help="this rank raises (a test)")
    parser.add_argument("--fail-at-step", type=int, default=10)
    parser.add_argument("--sleep-s", type=float, default=0.0, help="per step (a test)")
    return parser.parse_args()


def batch(seed: int, step: int, rank: int, world: int, size: int) -> tuple[torch.Tensor, ...]:
    """Rank `rank`'s slice of global batch `step`: the same samples for any world size."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
    x = torch.randn(size, D_IN, generator=gen)
    teacher = torch.Generator().manual_seed(seed)
    w = torch.randn(D_IN, 1, generator=teacher)
    y = torch.tanh(x @ w) + 0.1 * torch.sin(3 * x[:, :1])
    per = size // world
    return x[rank * per : (rank + 1) * per], y[rank * per : (rank + 1) * per]


def save(model: nn.Module, opt: torch.optim.Optimizer, step: int) -> None:
    """Rank 0 writes `step_<n>/` under $GPUDECK_CHECKPOINT_DIR: a temporary dir, renamed."""
    root = os.environ.get("GPUDECK_CHECKPOINT_DIR")
    if not root or dist.get_rank() != 0:
        return
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    torch.save(
        {"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, tmp / "state.pt"
    )
    os.rename(tmp, Path(root) / f"step_{step}")


def resume(model: nn.Module, opt: torch.optim.Optimizer) -> int:
    path = os.environ.get("GPUDECK_RESUME_DIR")
    if not path:
        return 0
    state = torch.load(Path(path) / "state.pt", weights_only=True)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    return int(state["step"])


def on_sigterm(*_: object) -> None:
    global stop_requested
    stop_requested = True


@record
def main() -> None:
    args = parse()
    signal.signal(signal.SIGTERM, on_sigterm)
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = (
        torch.device("cuda", int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count())
        if use_cuda
        else torch.device("cpu")
    )
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(D_IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1)).to(device)
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    start = resume(model, opt)
    if start and rank == 0:
        print(f"resumed from step {start}", flush=True)
    global_loss = torch.zeros((), device=device)
    for step in range(start + 1, args.steps + 1):
        if step == args.fail_at_step and rank == args.fail_rank:
            raise ValueError(f"rank {rank} failed on purpose at step {step}")
        x, y = (t.to(device) for t in batch(args.seed, step, rank, world, args.batch_size))
        loss = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        global_loss = loss.detach().clone()
        dist.all_reduce(global_loss)
        global_loss /= world
        if step % args.report_every == 0 or step == args.steps:
            report(step=step, total=args.steps, loss=global_loss.item())
        if args.checkpoint_every and step % args.checkpoint_every == 0:
            save(model, opt, step)
        if args.sleep_s:
            time.sleep(args.sleep_s)
        flag = torch.tensor(float(stop_requested), device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item():
            save(model, opt, step)
            break
    if rank == 0:
        print(f"final_loss {global_loss.item():.10f}", flush=True)
    # Free the process group before Python exits (see plain_ddp.py: otherwise gloo's worker
    # thread can abort the process during interpreter shutdown).
    del ddp, opt
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
