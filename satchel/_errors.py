"""Every error Satchel raises, under one root.

    PackError                  the root: ``except satchel.PackError`` catches all of them
    ├── InputError             a candidate, question or history message is malformed
    ├── ConfigError            an option is out of range or names something unknown
    │   └── UnknownModelError  a model name the registry does not know
    ├── TokenizerError         a tokenizer could not be loaded or failed to count
    ├── BudgetError            the window cannot hold what must go in it
    └── ModelError             a model client failed (bad key, unknown model, prompt too long)

Each message names the bad value and says how to fix it. ``InputError`` and
``ConfigError`` are also ``ValueError`` so code written against plain Python
conventions keeps working.
"""

from __future__ import annotations

__all__ = [
    "BudgetError",
    "ConfigError",
    "InputError",
    "ModelError",
    "PackError",
    "TokenizerError",
    "UnknownModelError",
]


class PackError(Exception):
    """Root of every error Satchel raises."""


class InputError(PackError, ValueError):
    """A candidate, the question or a history message is malformed."""


class ConfigError(PackError, ValueError):
    """An option is out of range or names something Satchel does not know."""


class UnknownModelError(ConfigError):
    """The model name is not in the registry and no window or tokenizer was given."""


class TokenizerError(PackError):
    """A tokenizer could not be loaded, or it failed on a text."""


class BudgetError(PackError):
    """The context window cannot hold what must go into it."""


class ModelError(PackError):
    """A model client failed: unreachable server, bad key, unknown model, prompt too long."""


class CallerCode:
    """``with CallerCode("order 'mine'", "on 3 sources", "fix the order function"):`` runs a
    caller's function (an order, a compressor, a counting function): an exception it
    raises (other than a PackError) becomes ``error`` (a ConfigError unless given)
    saying what failed, on what, and the fix, with the original kept as its cause."""

    __slots__ = ("error", "fix", "on", "what")

    def __init__(self, what: str, on: str, fix: str, error: type[PackError] | None = None) -> None:
        self.what, self.on, self.fix = what, on, fix
        self.error = ConfigError if error is None else error

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, PackError) or not isinstance(exc, Exception):
            return  # (Ctrl-C and the like go through as they are)
        raise self.error(f"{self.what} failed {self.on} ({type(exc).__name__}: {exc}); {self.fix}") from exc
