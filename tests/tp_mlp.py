"""A tensor-parallel MLP on 2 ranks (torch.distributed, gloo), timed for real: run under torchrun by
tests/test_network.py.  Rank r holds columns r of the first Linear and rows r of the second; the forward is
relu(x @ W1_r) @ W2_r, then an all-reduce of the (batch x hidden) fp32 output.  Writes, from rank 0, the
median forward and all-reduce times and the all-reduce's message bytes as JSON.

Usage: torchrun --nproc-per-node 2 tp_mlp.py OUT.json
"""

import json
import statistics
import sys
import time

import torch
import torch.distributed as dist

BATCH, HIDDEN, WIDTH = 64, 1024, 4096


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    w1 = torch.randn(HIDDEN, WIDTH // world) / HIDDEN**0.5
    w2 = torch.randn(WIDTH // world, HIDDEN) / WIDTH**0.5
    x = torch.randn(BATCH, HIDDEN)
    forward, reduce = [], []
    with torch.no_grad():
        for k in range(25):
            dist.barrier()
            t0 = time.perf_counter()
            y = torch.relu(x @ w1) @ w2
            t1 = time.perf_counter()
            dist.all_reduce(y)
            t2 = time.perf_counter()
            if k >= 5:  # warm-up dropped
                forward.append(t2 - t0)
                reduce.append(t2 - t1)
    # the forward: the slowest rank's; the all-reduce: the last rank to arrive's (the others' include waiting
    # for it to finish its GEMMs, not the collective)
    fwd = torch.tensor([statistics.median(forward)], dtype=torch.float64)
    red = torch.tensor([statistics.median(reduce)], dtype=torch.float64)
    dist.all_reduce(fwd, op=dist.ReduceOp.MAX)
    dist.all_reduce(red, op=dist.ReduceOp.MIN)
    if rank == 0:
        with open(sys.argv[1], "w") as f:
            json.dump({"forward": fwd.item(), "all_reduce": red.item(), "bytes": BATCH * HIDDEN * 4,
                       "gemm_flops": 2 * 2 * BATCH * HIDDEN * WIDTH // world}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
