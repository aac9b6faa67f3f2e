"""What the trace benchmarks share (bench_trace.py, bench_trace_ranks.py, bench_trace_parse.py): the repository
root, the catalog device they analyse under, and one small real CPU trace recorded here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVICE = "xeon-8480"


def record_small(path: Path, forwards: int = 4) -> None:
    """A real torch.profiler trace of a small transformer-style MLP stack on this CPU."""
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile

    class Block(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.up = nn.Linear(d, 4 * d)
            self.act = nn.GELU()
            self.down = nn.Linear(4 * d, d)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.down(self.act(self.up(self.norm(x))))

    torch.manual_seed(0)
    model = nn.Sequential(*(Block(256) for _ in range(4)), nn.LayerNorm(256), nn.Linear(256, 512)).eval()
    x = torch.randn(64, 256)
    with torch.inference_mode():
        model(x)  # warm-up, outside the trace
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
            for _ in range(forwards):
                model(x)
    prof.export_chrome_trace(str(path))


def load_line(load0: float) -> str:
    """The machine's load beside a run's figures: the 1-minute load average at the start (``load0``) and now,
    the cores, the time of day (the benchmarks are read side by side on shared machines)."""
    import os
    import time

    return (f"load average (1 min): {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end, on "
            f"{os.cpu_count()} cores; {time.strftime('%H:%M UTC', time.gmtime())}")
