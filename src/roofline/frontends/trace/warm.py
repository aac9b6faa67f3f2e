"""Imported by the forkserver the many-rank reader's worker processes are forked from (``PRELOAD`` in
:mod:`roofline.frontends.trace.ranks`): it runs :func:`~roofline.frontends.trace.ranks.warm` once, so every worker
forked after it starts with torch imported and its first meta replay done.  Nothing imports it otherwise."""

from __future__ import annotations

from roofline.frontends.trace.ranks import warm

warm()
