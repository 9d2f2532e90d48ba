"""Faster construction of Satchel's frozen records (chunks, manifest entries, sources).

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, to
get past its own ``__setattr__``, which raises. That costs about four times a plain
attribute store, and pack builds a chunk and a manifest entry for every candidate:
a few percent of a pack over thousands of candidates. :func:`maker` builds the same
objects from an unfrozen twin instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["maker"]


def maker(cls: type[T]) -> Callable[..., T]:
    """A function that builds instances of the frozen slots dataclass ``cls``, as ``cls(...)`` does.

    It fills an unfrozen twin (the same fields, defaults, slots and ``__post_init__``)
    with plain attribute stores, then gives the object its frozen class. CPython allows
    that ``__class__`` assignment because both classes have the same slots and base;
    what comes out is an ordinary instance of ``cls``: equal, hashable and frozen.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__name__} is not a frozen slots dataclass")
    specs: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # (checked above)
        if not f.init or f.kw_only:
            raise TypeError(
                f"{cls.__name__}.{f.name} is not a plain init field; build it with {cls.__name__}()"
            )
        if f.default is not dataclasses.MISSING:
            specs.append((f.name, f.type, dataclasses.field(default=f.default)))
        elif f.default_factory is not dataclasses.MISSING:
            specs.append((f.name, f.type, dataclasses.field(default_factory=f.default_factory)))
        else:
            specs.append((f.name, f.type))
    post_init = getattr(cls, "__post_init__", None)
    namespace = {} if post_init is None else {"__post_init__": post_init}
    twin = dataclasses.make_dataclass(f"_Unfrozen{cls.__name__}", specs, slots=True, namespace=namespace)
    if vars(twin)["__slots__"] != vars(cls)["__slots__"]:
        raise TypeError(f"{cls.__name__}'s slots differ from its fields")

    def make(*args: Any, **kwargs: Any) -> T:
        made = twin(*args, **kwargs)
        made.__class__ = cls
        return made  # type: ignore[no-any-return]

    make.__doc__ = f"Build a {cls.__name__} (see satchel._records.maker)."
    return make
