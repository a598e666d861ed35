"""A DDP training script that knows nothing of GPUDeck: what a researcher already has.

    torchrun --nproc-per-node 2 examples/scripts/plain_ddp.py --steps 100 --seed 0

It runs as a GPUDeck `script` job unchanged (`entrypoint: "plain_ddp.py"`, `args: ["--steps",
"100", "--seed", "0"]`): torchrun's environment is all it reads. A linear regression on
synthetic data drawn per (seed, step), each rank its slice of the global batch, so the loss
is the same for any launcher; rank 0 prints `final_loss <value>`. `ddp_train.py` beside it is
the same kind of script using what GPUDeck adds (live metrics, checkpoints, resume).
"""

from __future__ import annotations

import argparse
import gc
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

D_IN = 16


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local % torch.cuda.device_count()) if use_cuda else "cpu"
    torch.manual_seed(args.seed)
    model = DistributedDataParallel(nn.Linear(D_IN, 1).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    truth = torch.randn(D_IN, 1, generator=torch.Generator().manual_seed(args.seed))
    per = args.batch_size // world
    loss = torch.zeros((), device=device)
    for step in range(args.steps):
        gen = torch.Generator().manual_seed(args.seed * 1_000_003 + step)
        x = torch.randn(args.batch_size, D_IN, generator=gen)[rank * per : (rank + 1) * per]
        loss = nn.functional.mse_loss(model(x.to(device)), (x @ truth).to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss = loss.detach().clone()
        dist.all_reduce(loss)  # the mean over ranks: the global batch's loss
        loss /= world
    if rank == 0:
        print(f"final_loss {loss.item():.10f}", flush=True)
    # Free the process group before Python exits, not during its shutdown: DDP holds it in
    # reference cycles only the garbage collector breaks. Left to interpreter shutdown, gloo's
    # worker thread can free a finished collective (and a tensor's Python object with it) while
    # Python finalizes, and the process aborts: "terminate called without an active exception"
    # (torch 2.13 on CPU: 2 runs in 20 here). With no reference left, destroy_process_group
    # joins gloo's threads first.
    del model, opt
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
