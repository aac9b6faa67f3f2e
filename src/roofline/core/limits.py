"""Stated limits on the size of the work a user may ask for, each with the environment variable that raises it.

``ROOFLINE_MAX_DIM`` (default 10**12) bounds any dimension: a shape's (``--input``, ONNX symbols), an LLM
run's batch, lengths and group size.  Shapes must also fit int64 in element count (:func:`check_dims`).

>>> check_dims((8, 512), "--input '8x512'")
(8, 512)
>>> max_dim()
1000000000000
"""

from __future__ import annotations

from roofline.core.errors import RooflineError, env_limit

#: largest dimension accepted in a shape (``ROOFLINE_MAX_DIM`` overrides it)
MAX_DIM = 10**12
#: most events one trace may keep (``ROOFLINE_MAX_TRACE_EVENTS``): 45 bytes each in columns, 450 MB at the limit
MAX_TRACE_EVENTS = 10**7
#: most distinct strings one trace may intern: event names, and distinct argument lists apart
#: (``ROOFLINE_MAX_TRACE_NAMES``); about 440 bytes each with its table entries and what the walk keeps per
#: distinct name (measured: 935,099 distinct names in a 200 MB trace took 410 MB above the baseline), so
#: about 115 MB at the limit.  A real trace has thousands (op and kernel names, one ProfilerStep#N per step).
MAX_TRACE_NAMES = 2**18
#: largest time (or duration) a trace event may state, in microseconds: 31,700 years (kineto's ts is
#: microseconds since the epoch, about 1.7e15 today); beyond it, or not finite, the event is a range error
MAX_TRACE_MICROSECONDS = 1e18
#: most requests one serving simulation takes (``ROOFLINE_MAX_REQUESTS``): a 10,000-request run takes about
#: 30 s on a busy 2-core machine (measured: 32.9 s, 94 MB for ``serve llama-2-7b --requests 10000 --rate 1000``),
#: so the default admits twice that and refuses the 200,000 that ran past 45 s
MAX_REQUESTS = 20_000
#: most request-simulations one ``serve`` may run: requests x simulations (``ROOFLINE_MAX_SERVE_WORK``); a
#: --sweep-rate runs up to :data:`roofline.serving.sweep.DOUBLINGS` + BISECTIONS + 1 simulations per --tp size
MAX_SERVE_WORK = 200_000
#: largest training global batch, in sequences (``ROOFLINE_MAX_GLOBAL_BATCH``): 2**24 (16.7 M sequences; GPT-3
#: trained at 1,536 and Llama 3 405B at 16 M tokens = 2,048 sequences), so 10**12 is refused in one line
MAX_GLOBAL_BATCH = 2**24
#: most local processes reading trace ranks (``ROOFLINE_MAX_JOBS``): each is a Python process of ~100 MB
MAX_JOBS = 256
#: most pipeline stages ``--layout stages=`` may list, 'NxK' counted K times (``ROOFLINE_MAX_STAGES``): 2**16, past
#: any model's layers (the largest bundled has 126), so ``stages=1x1000000000000`` is one line, not a MemoryError
MAX_STAGES = 2**16
#: deepest nesting of a trace's "Input Dims" (``ROOFLINE_MAX_NESTING``): a tensor list of lists is depth 2; 64
#: leaves room for any real argument and stays far below Python's recursion limit
MAX_NESTING = 64


def max_dim() -> int:
    """The largest dimension accepted: ``ROOFLINE_MAX_DIM`` when set, else :data:`MAX_DIM`."""
    return env_limit("ROOFLINE_MAX_DIM", MAX_DIM)


def max_trace_events() -> int:
    """The most events a trace may keep: ``ROOFLINE_MAX_TRACE_EVENTS`` when set, else :data:`MAX_TRACE_EVENTS`."""
    return env_limit("ROOFLINE_MAX_TRACE_EVENTS", MAX_TRACE_EVENTS)


def max_trace_names() -> int:
    """The most distinct names (and argument lists) a trace may intern: ``ROOFLINE_MAX_TRACE_NAMES`` when set,
    else :data:`MAX_TRACE_NAMES`."""
    return env_limit("ROOFLINE_MAX_TRACE_NAMES", MAX_TRACE_NAMES)


def max_requests() -> int:
    """The most requests one simulation takes: ``ROOFLINE_MAX_REQUESTS`` when set, else :data:`MAX_REQUESTS`."""
    return env_limit("ROOFLINE_MAX_REQUESTS", MAX_REQUESTS)


def max_serve_work() -> int:
    """The most requests x simulations one serve may run: ``ROOFLINE_MAX_SERVE_WORK``, else :data:`MAX_SERVE_WORK`."""
    return env_limit("ROOFLINE_MAX_SERVE_WORK", MAX_SERVE_WORK)


def max_global_batch() -> int:
    """The largest global batch (sequences): ``ROOFLINE_MAX_GLOBAL_BATCH`` when set, else :data:`MAX_GLOBAL_BATCH`."""
    return env_limit("ROOFLINE_MAX_GLOBAL_BATCH", MAX_GLOBAL_BATCH)


def max_jobs() -> int:
    """The most trace-reading processes: ``ROOFLINE_MAX_JOBS`` when set, else :data:`MAX_JOBS`."""
    return env_limit("ROOFLINE_MAX_JOBS", MAX_JOBS)


def max_nesting() -> int:
    """The deepest nesting read in a trace argument: ``ROOFLINE_MAX_NESTING`` when set, else :data:`MAX_NESTING`."""
    return env_limit("ROOFLINE_MAX_NESTING", MAX_NESTING)


def max_stages() -> int:
    """The most stages ``stages=`` may list: ``ROOFLINE_MAX_STAGES`` when set, else :data:`MAX_STAGES`."""
    return env_limit("ROOFLINE_MAX_STAGES", MAX_STAGES)


def check_work(what: str, work: int, top: int, env: str, unit: str = "") -> int:
    """``work`` when it is at most ``top``, else one line naming the limit and ``env``, the variable raising it.

    >>> check_work("serve", 10, 20, "ROOFLINE_MAX_SERVE_WORK")
    10
    """
    if work > top:
        raise RooflineError(f"{what}: {work:,}{unit} exceeds the limit of {top:,}{unit} (set {env} to raise it)")
    return work


def check_dims(shape: tuple[int, ...], what: str) -> tuple[int, ...]:
    """``shape`` if every dimension is <= ROOFLINE_MAX_DIM and the element count fits int64, else an error."""
    top = max_dim()
    for d in shape:
        if d > top:
            raise RooflineError(f"{what}: dimension {d} exceeds the limit of {top:,} (set ROOFLINE_MAX_DIM to "
                                "raise it)")
    n = 1
    for d in shape:
        n *= d
    if n >= 2**63:
        raise RooflineError(f"{what}: {'x'.join(map(str, shape))} has {n:.3g} elements, more than int64 can count")
    return shape


__all__ = ["MAX_DIM", "MAX_GLOBAL_BATCH", "MAX_JOBS", "MAX_NESTING", "MAX_REQUESTS", "MAX_SERVE_WORK", "MAX_STAGES",
           "MAX_TRACE_EVENTS", "MAX_TRACE_MICROSECONDS", "MAX_TRACE_NAMES", "check_dims", "check_work", "max_dim",
           "max_global_batch", "max_jobs", "max_nesting", "max_requests", "max_serve_work", "max_stages", "max_trace_events",
           "max_trace_names"]
