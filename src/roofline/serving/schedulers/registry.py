"""The registry of scheduler policies, by name (as vidur's ``replica_scheduler`` registry and
``torch.utils.flop_counter``'s formulas are): :func:`register` fills it, :func:`get` reads it.

Kept apart from the package ``__init__`` so that a policy module can register itself without importing its
parent package (tests/test_architecture.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from roofline.core.errors import RooflineError
from roofline.core.fileio import shown

if TYPE_CHECKING:
    from roofline.serving.schedulers.base import Scheduler

S = TypeVar("S", bound="type[Scheduler]")

#: name -> policy class, in registration order
REGISTRY: dict[str, type[Scheduler]] = {}


def register(name: str) -> Callable[[S], S]:
    """Class decorator: ``@register("chunked")`` files the policy under ``name`` (sets ``cls.name``); a name
    registered twice is an error, as a duplicate formula is."""

    def add(cls: S) -> S:
        if name in REGISTRY:
            raise ValueError(f"scheduler {name!r} is registered twice ({REGISTRY[name].__name__}, {cls.__name__})")
        cls.name = name
        REGISTRY[name] = cls
        return cls

    return add


def names() -> tuple[str, ...]:
    """The registered policy names, sorted."""
    return tuple(sorted(REGISTRY))


def get(name: str) -> type[Scheduler]:
    """The policy class registered as ``name``; an unknown name (or not a string) is one line listing the names."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise RooflineError(f"unknown scheduler {shown(name)}; known: {', '.join(names())}")
    return REGISTRY[name]
