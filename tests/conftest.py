"""Tests never read or write the user's bench cache: each gets an empty one unless it sets its own."""

import pytest


@pytest.fixture(autouse=True)
def _private_bench_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path_factory.mktemp("roofline-cache")))
