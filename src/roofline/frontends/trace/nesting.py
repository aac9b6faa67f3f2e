"""Which event encloses which: each event's parent on its thread, for all events at once (numpy, no Python loop
per event).

The rule is the walk of a stack of open events per thread, in time order (start, then the longer first): before
event ``i`` is pushed, the events on top that ended by its start (within ``eps``) are popped, and the one left on
top is its parent.  An event is popped only once a later start is past its end, so every earlier event of the
thread that has not ended at ``i``'s start is still on the stack, and the top is the latest of them.  Hence:

    parent(i) = the latest earlier event j of i's thread (in walk order) with end[j] > start[i] + eps

whatever the events' nesting (partial overlaps included).  That is found for every ``i`` by binary lifting over a
sparse table of running maxima of ``end`` (level k: the largest end among 2**k consecutive events): from
``i - 1``, blocks whose largest end is within ``start[i] + eps`` are skipped, largest first, never past the
first event of the thread.  Memory: one float64 array per level, log2(events) levels, freed on return.
"""

from __future__ import annotations

import numpy as np


def parents(thread: np.ndarray, start: np.ndarray, end: np.ndarray, walk: np.ndarray, eps: float) -> np.ndarray:
    """For each event of ``walk`` (indices into the columns, in walk order), the index of its parent, -1 for none.

    ``thread``, ``start``, ``end``: per-event columns (thread code, start and end times)."""
    n = len(walk)
    out = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return out
    by_thread = np.argsort(thread[walk], kind="stable")  # each thread's events, in walk order
    seq = walk[by_thread]
    th = thread[seq]
    s = start[seq] + eps
    levels = [end[seq]]
    new = np.flatnonzero(np.r_[True, th[1:] != th[:-1]])
    first = np.repeat(new, np.diff(np.r_[new, n]))  # where each event's thread begins in seq
    width = 1
    while 2 * width <= n:
        prev = levels[-1]
        m = prev.copy()
        m[width:] = np.maximum(prev[width:], prev[:-width])  # level k: the largest end over j - 2**k + 1 .. j
        levels.append(m)
        width *= 2
    cur = np.arange(-1, n - 1, dtype=np.int64)  # the candidate: the event before, moved back past ended blocks
    for k in range(len(levels) - 1, -1, -1):
        size = 1 << k
        can = cur - size + 1 >= first
        at = np.flatnonzero(can)
        skip = at[levels[k][cur[at]] <= s[at]]
        cur[skip] -= size
    found = cur >= first
    result = np.full(n, -1, dtype=np.int64)
    result[found] = seq[cur[found]]
    out[by_thread] = result
    return out
