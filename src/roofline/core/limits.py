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


__all__ = ["MAX_DIM", "MAX_TRACE_EVENTS", "MAX_TRACE_MICROSECONDS", "MAX_TRACE_NAMES", "check_dims", "max_dim",
           "max_trace_events", "max_trace_names"]
