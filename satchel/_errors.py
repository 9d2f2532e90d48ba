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
