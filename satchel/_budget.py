"""Plan: the context window minus its reserves is the source budget.

Seed 001's order: reserve the system instructions, the question and any history,
the answer, and anything else the prompt must carry; what is left is for sources.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._chunk import _whole
from ._errors import BudgetError, ConfigError

__all__ = ["Budget"]


def _count(name: str, value: object, allow_none: bool = False) -> int | None:
    """``value`` as a count of tokens (a whole float or a numpy int is that int, as for pack)."""
    if value is None and allow_none:
        return None
    whole = _whole(value)
    if whole is None or whole < 0:
        kind = "a positive" if name == "context_window" else "a non-negative"  # (a window of 0: below)
        raise ConfigError(f"{name}={value!r} must be {kind} whole number of tokens")
    return whole


@dataclass(frozen=True, slots=True)
class Budget:
    """Where the tokens of one context window go.

    ``Budget(context_window=2048, system=350, question=40, history=0,
    answer=500).sources == 1158``. ``contract`` is the fixed slice for the output
    contract (seed 003) and ``other`` anything else the prompt carries (chat
    framing is counted into the reserve of the message it frames). ``cap``
    optionally limits the sources below what the window allows. ``input_limit`` is
    the most tokens the model takes as input where that is less than its window
    (gpt-5's API takes 272,000 of a 400,000-token window, the rest being for its
    output): the prompt stays within it too.
    """

    context_window: int
    system: int = 0
    question: int = 0
    history: int = 0
    answer: int = 0
    contract: int = 0
    other: int = 0
    cap: int | None = None
    input_limit: int | None = None

    def __post_init__(self) -> None:
        for name in ("context_window", "system", "question", "history", "answer", "contract", "other"):
            object.__setattr__(self, name, _count(name, getattr(self, name)))
        object.__setattr__(self, "cap", _count("source_budget", self.cap, allow_none=True))
        object.__setattr__(self, "input_limit", _count("input_limit", self.input_limit, allow_none=True))
        if self.context_window == 0:
            raise ConfigError("context_window=0 leaves no room; give the model's window in tokens")
        if self.reserved > self.context_window:
            raise BudgetError(
                f"the reserves need {self.reserved} tokens but the window holds "
                f"{self.context_window} ({self._breakdown()}); {self._fix()}, or give a larger "
                "context_window (a model with a larger window)"
            )
        if self.input_limit is not None and self.reserved - self.answer > self.input_limit:
            raise BudgetError(
                f"the reserves in the prompt need {self.reserved - self.answer} tokens but the model "
                f"takes at most {self.input_limit} input tokens ({self._breakdown(answer=False)}); "
                f"{self._fix(answer=False)}"
            )

    @property
    def reserved(self) -> int:
        """Tokens set aside before any source is admitted."""
        return self.system + self.question + self.history + self.answer + self.contract + self.other

    @property
    def sources(self) -> int:
        """The source budget: what the prompt may use after the reserves, within ``cap``."""
        left = self.prompt_limit - (self.reserved - self.answer)
        return left if self.cap is None else min(left, self.cap)

    @property
    def prompt_limit(self) -> int:
        """The most tokens the prompt itself may use: the window less the answer reserve, and
        no more than ``input_limit``."""
        limit = self.context_window - self.answer
        return limit if self.input_limit is None else min(limit, self.input_limit)

    def _fix(self, answer: bool = True) -> str:
        """What to make smaller, of the reserves that hold anything (``answer``: its reserve too)."""
        texts = [name for name in ("system", "question", "history", "contract") if getattr(self, name)]
        named = {"system": "the system text", "contract": "the output contract"}
        fixes = []
        if texts:
            words = [named.get(name, f"the {name}") for name in texts]
            fixes.append(
                "shorten "
                + (" or ".join(words) if len(words) < 3 else ", ".join(words[:-1]) + " or " + words[-1])
            )
        lower = [
            f"reserve_{name}"
            for name in ("answer", "other")
            if getattr(self, name) and (answer or name != "answer")
        ]
        if lower:
            fixes.append("lower " + " or ".join(lower))
        return ", ".join(fixes) or "lower the reserves"

    def _breakdown(self, answer: bool = True) -> str:
        """The reserves that hold anything, by name (``answer``: its reserve too)."""
        names = ("system", "question", "history", "answer", "contract", "other")
        parts = [
            f"{name} {getattr(self, name)}"
            for name in names
            if getattr(self, name) and (answer or name != "answer")
        ]
        return ", ".join(parts) or "nothing"

    def to_dict(self) -> dict[str, int | None]:
        out = {
            "context_window": self.context_window,
            "system": self.system,
            "question": self.question,
            "history": self.history,
            "answer": self.answer,
            "contract": self.contract,
            "other": self.other,
            "cap": self.cap,
            "sources": self.sources,
        }
        if self.input_limit is not None:  # (most models take their whole window as input)
            out["input_limit"] = self.input_limit
        return out
