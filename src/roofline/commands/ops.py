"""roofline ops: every op a frontend costs, the formula of each and what it counts.

The built-in rows are the frontends' op tables (``roofline.frontends.torch_ops.OPS``,
``roofline.frontends.onnx.OPS``, registered with :mod:`roofline.work.costs` when this command imports the frontends,
read through :func:`roofline.work.costs.builtin_ops`); formulas
registered with :func:`roofline.work.costs.register_op` in this process are listed too,
marked ``(user)``, in place of the built-in row they replace.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from roofline.commands._common import EXAMPLE_HELP
from roofline.core.errors import RooflineError

#: The help text's example: a formula for a custom op, registered from Python.
EXAMPLE = '''\
cost formulas: give a custom op (or a built-in one, with override=True) a formula of your own:

  import torch
  from roofline import from_torch
  from roofline.work import costs

  @torch.library.custom_op("mylib::fused_mlp", mutates_args=())
  def fused_mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
      return torch.relu(x @ w1) @ w2

  @fused_mlp.register_fake
  def _(x, w1, w2):
      return x.new_empty(x.shape[0], w2.shape[1])

  def fused_mlp_cost(inputs, outputs):
      """two matmuls and a relu; the hidden activation stays on chip"""
      x, w1, w2 = inputs                      # costs.T: shape, itemsize (bytes per element)
      m, k = x.shape
      h, n = w1.shape[1], w2.shape[1]
      flops = 2 * m * k * h + m * h + 2 * m * h * n
      return costs.Cost("matmul", flops, *costs.traffic(inputs, outputs))

  costs.register_op("torch", "mylib.fused_mlp", fused_mlp_cost)
  workload = from_torch(model, x)             # mylib.fused_mlp costed, not unsupported
  costs.register_op("torch", "aten.relu", my_relu_cost, override=True)  # replace a built-in
  costs.unregister_op("torch", "aten.relu")   # the built-in formula again

Weight bytes (inputs that are parameters) are added by roofline.  Op names: torch's
overload packet ('aten.mm', 'mylib.fused_mlp'); ONNX node op types ('Gemm', 'com.me.FusedMLP').'''


def register(sub: argparse._SubParsersAction) -> None:
    from roofline.work.costs import FRONTENDS

    p = sub.add_parser("ops", help="list the ops each frontend costs, with their formulas", formatter_class=EXAMPLE_HELP,
                       description="List every op a frontend has a cost formula for: the formula "
                                   "(roofline.work.costs) and what it counts.  Formulas registered with "
                                   "roofline.work.costs.register_op in this process are marked (user).",
                       epilog="examples:\n  roofline ops\n  roofline ops --frontend torch\n"
                              "  roofline ops --frontend onnx --json\n\n" + EXAMPLE)
    p.add_argument("--frontend", choices=FRONTENDS, default=None, help="only this frontend (default: all)")
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    p.set_defaults(func=run)


@dataclass(frozen=True)
class Row:
    """One op of ``roofline ops``."""

    frontend: str
    op: str
    formula: str
    counts: str
    user: bool = False


def rows(frontend: str) -> list[Row]:
    """A frontend's ops: its table in order, a user formula in place of the row it replaces, then other user ops."""
    from roofline.work import costs

    try:
        _import_table(frontend)
        table = costs.builtin_ops(frontend)
    except ImportError as exc:
        raise RooflineError(f"the {frontend} frontend's op table is not available: {exc}") from exc
    user = {op: fn for (fe, op), fn in costs.USER_FORMULAS.items() if fe == frontend}
    out = []
    for op, rule in table.items():
        fn = user.pop(op, None)
        if fn is None:
            out.append(Row(frontend, op, rule.formula, rule.description))
        else:
            out.append(_user_row(frontend, op, fn, replaces=rule.formula))
    out.extend(_user_row(frontend, op, fn) for op, fn in sorted(user.items()))
    return out


def _import_table(frontend: str) -> None:
    """Import ``frontend``'s op table, which registers it with :mod:`roofline.work.costs` (costs imports no frontend)."""
    if frontend == "torch":
        import roofline.frontends.torch_ops  # noqa: F401
    else:
        import roofline.frontends.onnx.ops  # noqa: F401


def _user_row(frontend: str, op: str, fn: object, replaces: str = "") -> Row:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    doc = (getattr(fn, "__doc__", None) or "").strip()
    counts = doc.splitlines()[0] if doc else ""
    if replaces:
        counts = f"{counts} (replaces {replaces})" if counts else f"replaces {replaces}"
    return Row(frontend, op, str(name), counts, user=True)


def run(args: argparse.Namespace) -> int:
    from roofline.work.costs import FRONTENDS

    found = [r for fe in ([args.frontend] if args.frontend else FRONTENDS) for r in rows(fe)]
    if args.json:
        print(json.dumps([{"frontend": r.frontend, "op": r.op, "formula": r.formula, "counts": r.counts,
                           "user": r.user} for r in found], indent=1))
        return 0
    from roofline.core.text import display
    from roofline.render.fit import Column, table_lines

    # user formulas' names and docstrings are data: control characters made visible
    cells = [{"frontend": r.frontend, "op": display(r.op), "formula": display(r.formula) + (" (user)" if r.user else ""),
              "counts": display(r.counts)} for r in found]
    columns = [Column("frontend", kind="label", priority=1), Column("op", kind="name", keep=True),
               Column("formula", kind="name", priority=2, min_width=16), Column("counts", kind="wrap", keep=True,
                                                                               min_width=40)]
    title = f"{len(found)} ops with a cost formula ('(user)': registered with roofline.work.costs.register_op)"
    print("\n".join(table_lines(columns, cells, title=title, indent=0,
                                 more="roofline ops --json has every row whole")))
    return 0
