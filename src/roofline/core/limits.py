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
#: most deployments one ``plan --serve`` search may price (``ROOFLINE_MAX_DEPLOYMENTS``): a search prices about
#: 1,000 a second on a 2-core machine (benchmarks/bench_serve_search.py), so 20 s at the limit; 8 H100s have ~700
MAX_DEPLOYMENTS = 20_000
#: most pipeline stages ``--layout stages=`` may list, 'NxK' counted K times (``ROOFLINE_MAX_STAGES``): 2**16, past
#: any model's layers (the largest bundled has 126), so ``stages=1x1000000000000`` is one line, not a MemoryError
MAX_STAGES = 2**16
#: deepest nesting of a trace's "Input Dims" (``ROOFLINE_MAX_NESTING``): a tensor list of lists is depth 2; 64
#: leaves room for any real argument and stays far below Python's recursion limit
MAX_NESTING = 64
#: most distinct recorded calls one trace file rebuilds on meta tensors to cost them (``ROOFLINE_MAX_TRACE_CALLS``);
#: calls costed in closed form instead (:mod:`roofline.frontends.trace.shapes`) have CLOSED_FORM_CALLS times that
#: allowance, apart (each takes about that share of a rebuild's time).  Past either the calls left are not placed,
#: and the trace's warnings say how many.  Measured here (benchmarks/bench_trace_shapes.py): ~300 us a meta rebuild, ~30 us a closed-form one, so
#: the limit is about 9 s of rebuilding, and a 250,000-shape trace of closed-form ops is placed whole
MAX_TRACE_CALLS = 30_000
CLOSED_FORM_CALLS = 9


#: every stated limit, in one table: environment variable -> (default, what it bounds).  The limits of this module
#: are read here; those of a lower-level reader (the input size) or of one file format (an LLM config's sizes, an
#: ONNX graph's) are read where that format is parsed, and listed here so that the table is whole
#: (tests/hostile/test_legality.py checks it against the code and docs/legality.md).
LIMITS: dict[str, tuple[int, str]] = {
    "ROOFLINE_MAX_INPUT_BYTES": (1 << 30, "bytes read from one input file (a gzip trace: bytes it decompresses to)"),
    "ROOFLINE_MAX_DIM": (MAX_DIM, "any dimension: a shape's, an LLM run's batch and lengths"),
    "ROOFLINE_MAX_TRACE_EVENTS": (MAX_TRACE_EVENTS, "events one trace keeps"),
    "ROOFLINE_MAX_TRACE_NAMES": (MAX_TRACE_NAMES, "distinct names and argument lists one trace interns"),
    "ROOFLINE_MAX_TRACE_DEPTH": (100_000, "nesting of a trace's ops on one thread"),
    "ROOFLINE_MAX_NESTING": (MAX_NESTING, "nesting of a trace argument (Input Dims)"),
    "ROOFLINE_MAX_REQUESTS": (MAX_REQUESTS, "requests one serving simulation takes (--requests, a --trace file)"),
    "ROOFLINE_MAX_SERVE_WORK": (MAX_SERVE_WORK, "requests x simulations of one serve (--sweep-rate, several --tp)"),
    "ROOFLINE_MAX_GLOBAL_BATCH": (MAX_GLOBAL_BATCH, "sequences in one training step (--global-batch)"),
    "ROOFLINE_MAX_JOBS": (MAX_JOBS, "local processes reading trace ranks (--jobs)"),
    "ROOFLINE_MAX_STAGES": (MAX_STAGES, "pipeline stages --layout stages= lists"),
    "ROOFLINE_MAX_DEPLOYMENTS": (MAX_DEPLOYMENTS, "deployments one plan --serve search prices"),
    "ROOFLINE_MAX_TRACE_CALLS": (MAX_TRACE_CALLS, "distinct recorded calls one trace rebuilds on meta tensors (closed-form calls: 9 times as many, apart)"),
    "ROOFLINE_MAX_SWEEP_POINTS": (100_000, "points of an llm --sweep"),
    "ROOFLINE_MAX_LAYERS": (10_000, "an LLM config's layers"),
    "ROOFLINE_MAX_HIDDEN": (10**6, "an LLM config's widths (hidden, intermediate, head_dim, ranks)"),
    "ROOFLINE_MAX_VOCAB": (10**7, "an LLM config's vocabulary"),
    "ROOFLINE_MAX_HEADS": (100_000, "an LLM config's attention and KV heads"),
    "ROOFLINE_MAX_EXPERTS": (100_000, "an LLM config's experts and experts per token"),
    "ROOFLINE_MAX_POSITIONS": (10**8, "an LLM config's positions and sliding window"),
    "ROOFLINE_ONNX_MAX_DEPTH": (8, "ONNX Loop/Scan/If subgraphs nested"),
    "ROOFLINE_ONNX_MAX_NODES": (1_000_000, "ONNX nodes walked in all, subgraphs expanded"),
}


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


def max_trace_calls() -> int:
    """The most meta-tensor rebuilds one trace may take: ``ROOFLINE_MAX_TRACE_CALLS``, else :data:`MAX_TRACE_CALLS`."""
    return env_limit("ROOFLINE_MAX_TRACE_CALLS", MAX_TRACE_CALLS)


def max_stages() -> int:
    """The most stages ``stages=`` may list: ``ROOFLINE_MAX_STAGES`` when set, else :data:`MAX_STAGES`."""
    return env_limit("ROOFLINE_MAX_STAGES", MAX_STAGES)


def max_deployments() -> int:
    """The most deployments one search prices: ``ROOFLINE_MAX_DEPLOYMENTS`` when set, else :data:`MAX_DEPLOYMENTS`."""
    return env_limit("ROOFLINE_MAX_DEPLOYMENTS", MAX_DEPLOYMENTS)


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


__all__ = ["LIMITS", "MAX_DIM", "MAX_GLOBAL_BATCH", "MAX_JOBS", "MAX_NESTING", "MAX_REQUESTS", "MAX_SERVE_WORK", "MAX_STAGES",
           "MAX_TRACE_EVENTS", "MAX_TRACE_MICROSECONDS", "MAX_TRACE_NAMES", "check_dims", "check_work", "max_dim",
           "max_global_batch", "max_jobs", "max_nesting", "max_requests", "max_serve_work", "max_stages", "max_trace_events",
           "max_trace_names"]
