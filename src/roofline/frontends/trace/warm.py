"""Imported by the forkserver the many-rank reader's worker processes are forked from (``PRELOAD`` in
:mod:`roofline.frontends.workers`): it runs :func:`~roofline.frontends.trace.ranks.warm` once, so every worker
forked after it starts with torch imported and its first meta replay done, and with the objects made so far frozen
(``gc.freeze``, the use the Python documentation gives for it: no copy on write of pages a collection would touch).
Nothing imports it otherwise.

The forkserver exits once the command is gone (its pipe from the command closes).  It holds no file or result to
flush, and the interpreter's teardown of torch and what the replay imported takes about a second (measured here:
``python -c "import torch, torch._dynamo"`` spends 0.8 s after its last line); the server inherits the command's
stdout and stderr, so a caller reading them to their end would wait that second.  So its exit skips the
teardown: an exit handler registered after the imports (handlers run last-registered first, so it runs first)
ends the process with ``os._exit(0)``."""

from __future__ import annotations

import atexit
import gc
import os
import sys

from roofline.frontends.trace.ranks import warm

try:
    warm()
except Exception:  # noqa: BLE001  (no torch, a torch without meta kernels: each worker then pays it, or says why)
    pass

def _is_forkserver() -> bool:
    """True only in multiprocessing's forkserver, which Python starts as ``python -c 'from multiprocessing.forkserver
    import main; main(...)'`` (CPython ``Lib/multiprocessing/forkserver.py``, ``ensure_running``).  Any other process
    that imports this module (pytest's ``--doctest-modules`` collection does) keeps its own exit status: an
    ``os._exit(0)`` there turned a failing test run's exit 1 into 0."""
    return sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules


if _is_forkserver():
    # every object made so far (torch's modules, distributed's, the replay's caches: ~300k) is moved out of the
    # collector's reach: a worker forked from here then never walks them, and a walk writes each object's header,
    # copying on write the pages they lie on (a Dask worker's first rank took 2.0 s instead of 1.1 s without it)
    gc.freeze()
    atexit.register(os._exit, 0)
