"""Record one torch.profiler trace per rank of a 2-process gloo run (tests/test_trace.py runs this).

Each rank runs a Linear layer, rank 1 three more on 256 rows of 1024 (3 x 2 x 256 x 1024 x 1024 = 1.6 GFLOP,
tens of ms even on a fast core, against 0.26 MFLOP for rank 0's own Linear), then an all_reduce and an
all_gather of the 32 x 64 fp32 result.  Rank 1 is the slowest by a margin no scheduler hiccup closes: both
Linear layers are called once before profiling, so first-call set-up (thread pools, kernel selection),
which once made rank 0's lone Linear take 9.6 ms on a loaded machine, stays out of the traces; so does the
profiler's own first start (a profile started and stopped once before the collective that lines the ranks up):
it once took rank 0 1.3 s, and rank 1, done with its Linear layers, waited for rank 0 in the all-reduce.
Usage: python trace_ranks.py OUT_DIR

Teardown is ordered so that no rank's C++ threads outlive what they talk to (issue 25: 1 run in 4 on a
loaded 2-vCPU machine, rank 1 died with "terminate called without an active exception"):
- the rendezvous is a FileStore in OUT_DIR, not a TCPStore served by rank 0's thread: rank 0 exiting first
  can no longer pull the store out from under rank 1's teardown;
- every rank has exported its trace (the slow part) before any rank tears down (a barrier);
- the profiler and every tensor that went through a collective are released first, so
  destroy_process_group really destroys the gloo group and joins its worker threads while the interpreter
  is alive, rather than leaving them to interpreter finalisation;
- a last barrier on the store means no rank exits while another still holds a connection to it.
"""

import gc
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile


def run(rank: int, world: int, out: str) -> None:
    store = dist.FileStore(os.path.join(out, "rendezvous"), world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 64)
    big = torch.nn.Linear(1024, 1024)
    x = torch.randn(32, 64)
    with torch.no_grad():  # first calls outside the profiled region
        lin(x), big(torch.randn(256, 1024))
    with profile(activities=[ProfilerActivity.CPU]):  # the profiler's first start (over a second on a loaded
        pass  # machine) paid here: otherwise a rank whose start is slower comes last to the first collective
    dist.all_reduce(torch.ones(1))  # gloo's lazy set-up happens outside the profiled region
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
        with torch.no_grad():
            y = lin(x)
            if rank == 1:
                z = torch.randn(256, 1024)
                for _ in range(3):
                    z = big(z)
            dist.all_reduce(y)
            gathered = torch.empty(world * 32, 64)
            dist.all_gather_into_tensor(gathered, y)
    prof.export_chrome_trace(os.path.join(out, f"rank{rank}.json"))
    dist.barrier()  # every trace is written before anyone tears down
    del prof, y, gathered
    gc.collect()
    dist.destroy_process_group()
    store.add("done", 1)  # the store outlives the group: wait until every rank has destroyed its own
    while store.add("done", 0) < world:
        time.sleep(0.01)
    del store


if __name__ == "__main__":
    import warnings

    import torch.multiprocessing as mp

    warnings.filterwarnings("ignore")
    mp.spawn(run, args=(2, sys.argv[1]), nprocs=2)
