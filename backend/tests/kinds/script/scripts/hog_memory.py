"""One rank takes host memory until it is stopped: a test of the job's host memory limit.

--hog-rank R     the rank that allocates (the others wait)
--children N     allocate in N child processes (as DataLoader workers do), each under
                 its own per-process share, so only the job's total can stop them
"""

import argparse
import multiprocessing
import os
import time

MIB = 1024**2


def take(step_mib: int, most_mib: int) -> None:
    held = []
    while len(held) * step_mib < most_mib:
        held.append(b"\x01" * (step_mib * MIB))  # filled: resident, not only reserved
        time.sleep(0.01)
    time.sleep(3600)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hog-rank", type=int, default=1)
    parser.add_argument("--children", type=int, default=0)
    parser.add_argument("--step-mib", type=int, default=16)
    parser.add_argument("--most-mib", type=int, default=1 << 20)
    args = parser.parse_args()
    print(f"rank {os.environ['RANK']} started", flush=True)
    if int(os.environ["RANK"]) != args.hog_rank:
        time.sleep(3600)
    if args.children:
        context = multiprocessing.get_context("fork")
        workers = [
            context.Process(target=take, args=(args.step_mib, args.most_mib))
            for _ in range(args.children)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    take(args.step_mib, args.most_mib)


if __name__ == "__main__":
    main()
