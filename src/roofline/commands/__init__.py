"""The subcommands, in the order ``roofline --help`` lists them.

Each module exposes ``register(subparsers)``; adding a command adds one import and one entry here (the
CLI imports this table, so every command module is a static import the layers contract can see).
"""

from __future__ import annotations

from types import ModuleType

from roofline.commands import (
    analyze,
    bench,
    calibrate,
    compare,
    demo,
    device,
    devices,
    hf,
    llm,
    onnx,
    ops,
    plan,
    plot,
    report,
    serve,
    torch,
    trace,
)

#: every subcommand module, in ``roofline --help`` order
COMMANDS: tuple[ModuleType, ...] = (demo, devices, device, plot, analyze, llm, plan, serve, torch, hf, onnx, trace, ops,
                                    bench, calibrate, compare, report)
