"""Per-op analysis results as CSV (and as a pandas DataFrame when pandas is installed).

An analysis with a forecast (:mod:`roofline.engine.forecast`) gains ``forecast_seconds`` (one run),
``forecast_verdict`` and ``forecast_efficiency`` beside the bound's columns.

Text cells that start like a formula (``=``, ``+``, ``-``, ``@``, tab, CR) get a leading ``'``
(:func:`roofline.core.text.for_csv`); numbers are written as numbers, a negative one included.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.core.text import for_csv
from roofline.words.summary import noisy_ops
from roofline.work.workload import COLUMNS

if TYPE_CHECKING:
    import pandas as pd

    from roofline.engine.analysis import Analysis


def result_columns(a: Analysis) -> dict[str, Any]:
    """Workload columns plus every per-op result, each a list aligned with the ops."""
    n = len(a.time)
    cols: dict[str, Any] = {c: a.workload.column(c).tolist() for c in COLUMNS}
    cols.update({
        "intensity": a.intensity.tolist(),
        "ceiling": [a.ceiling_label(i) for i in range(n)],
        "ceiling_fallback": [a.fallback(i) for i in range(n)],
        "memory_level": [a.level_label(i) for i in range(n)],
        "peak_flops": a.peak_flops.tolist(),
        "bandwidth": a.bandwidth.tolist(),
        "ridge_intensity": a.ridge_intensity.tolist(),
        "attainable_flops": a.attainable_flops.tolist(),
        "bound": a.bound.tolist(),
        "time": a.time.tolist(),
        "total_time": a.total_op_time.tolist(),
        "share": a.share.tolist(),
        "achieved_flops": a.achieved_flops.tolist(),
        "achieved_bandwidth": a.achieved_bandwidth.tolist(),
        "efficiency": a.efficiency.tolist(),
        "above_roof": a.above_roof.tolist(),
    })
    if a.workload.has_measurements:  # the op's spread over its profiled runs is above the stated limit
        cols["measured_noisy"] = noisy_ops(a).tolist()
    f = a.forecast
    if f is not None:  # beside the bound, never in its place: seconds of one run, like "time"
        cols.update({
            "forecast_seconds": f.time.tolist(),
            "forecast_verdict": f.verdict.tolist(),
            "forecast_efficiency": f.efficiency.tolist(),
        })
    return cols


def to_csv(a: Analysis) -> str:
    cols = result_columns(a)
    buf = io.StringIO()
    # RFC 4180 line ends: a CR or LF inside a name is then quoted (with "\n" alone, a bare CR is not)
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(cols)
    order = a.order()
    values = [np.asarray(v, dtype=object)[order] for v in cols.values()]
    for row in zip(*values, strict=True):
        # text cells a spreadsheet would run as a formula get a leading "'" (names come from files); numbers never
        w.writerow(["" if isinstance(v, float) and v != v else repr(v) if isinstance(v, float) else for_csv(v)
                    for v in row])
    return buf.getvalue()


def save_csv(a: Analysis, path: str | Path) -> None:
    from roofline.core.fileio import write_text_atomic

    write_text_atomic(path, to_csv(a))


def to_dataframe(a: Analysis) -> pd.DataFrame:
    """A pandas DataFrame of per-op results, sorted by time (needs pandas)."""
    from roofline.core.errors import require

    require("pandas", "all")  # MissingExtraError naming the extra when pandas is missing
    import pandas as pd

    return pd.DataFrame(result_columns(a)).iloc[a.order()].reset_index(drop=True)
