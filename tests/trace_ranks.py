"""Record one torch.profiler trace per rank of a 2-process gloo run (tests/test_trace.py runs this).

Each rank runs a Linear layer, rank 1 three more on 64 rows of 512 (far the slowest: rank 0 waits for it
in the collectives), then an all_reduce and an all_gather of the 32 x 64 fp32 result.
Usage: python trace_ranks.py OUT_DIR
"""

import os
import socket
import sys

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile


def run(rank: int, world: int, out: str, port: int) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 64)
    big = torch.nn.Linear(512, 512)
    x = torch.randn(32, 64)
    dist.all_reduce(torch.ones(1))  # gloo's lazy set-up happens outside the profiled region
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
        with torch.no_grad():
            y = lin(x)
            if rank == 1:
                z = torch.randn(64, 512)
                for _ in range(3):
                    z = big(z)
            dist.all_reduce(y)
            dist.all_gather_into_tensor(torch.empty(world * 32, 64), y)
    prof.export_chrome_trace(os.path.join(out, f"rank{rank}.json"))
    dist.destroy_process_group()


if __name__ == "__main__":
    import warnings

    import torch.multiprocessing as mp

    warnings.filterwarnings("ignore")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    mp.spawn(run, args=(2, sys.argv[1], free), nprocs=2)
