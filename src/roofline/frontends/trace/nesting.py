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
first event of the thread.  Memory: one float64 array per level, log2(events) levels, for a chunk of
events at a time (with the earlier events still open at its end carried into the next).
"""

from __future__ import annotations

import numpy as np

CHUNK = 1 << 16  # events lifted at once (with the events still open before them): the table's memory


def parents(thread: np.ndarray, start: np.ndarray, end: np.ndarray, walk: np.ndarray, eps: float,
            chunk: int = CHUNK) -> np.ndarray:
    """For each event of ``walk`` (indices into the columns, in walk order), the index of its parent, -1 for none.

    ``thread``, ``start``, ``end``: per-event columns (thread code, start and end times).  The events are taken
    ``chunk`` at a time, each chunk with the earlier events of its thread that have not ended by the chunk's last
    start (every event that can still be a parent: the rest ended before any later start), so the table's
    memory is bounded by the chunk and the nesting depth, not the trace."""
    n = len(walk)
    out = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return out
    by_thread = np.argsort(thread[walk], kind="stable")  # each thread's events, in walk order
    seq = walk[by_thread]
    th, s, e = thread[seq], start[seq] + eps, end[seq]
    pos = np.full(n, -1, dtype=np.int64)  # each event's parent, as a position in seq
    carried = np.zeros(0, dtype=np.int64)  # positions of earlier events of the chunk's first thread still open
    for c0 in range(0, n, chunk):
        c1 = min(n, c0 + chunk)
        if c0 > 0 and th[c0 - 1] != th[c0]:
            carried = carried[:0]
        idx = np.concatenate([carried, np.arange(c0, c1, dtype=np.int64)])
        got = _lift(th[idx], s[idx], e[idx])[len(carried):]
        pos[c0:c1] = np.where(got >= 0, idx[np.maximum(got, 0)], -1)
        last = c1 - 1
        carried = idx[(th[idx] == th[last]) & (e[idx] > s[last])]
    found = pos >= 0
    result = np.full(n, -1, dtype=np.int64)
    result[found] = seq[pos[found]]
    out[by_thread] = result
    return out


def _lift(th: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """For events in walk order within their threads (``th`` grouped), each one's parent as a position in these
    arrays (-1: none): the latest earlier event of its thread with ``e > s`` (``s``: its start plus eps)."""
    n = len(th)
    levels = [e]
    new = np.flatnonzero(np.r_[True, th[1:] != th[:-1]])
    first = np.repeat(new, np.diff(np.r_[new, n]))  # where each event's thread begins
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
        at = np.flatnonzero(cur - size + 1 >= first)
        skip = at[levels[k][cur[at]] <= s[at]]
        cur[skip] -= size
    return np.where(cur >= first, cur, -1)
