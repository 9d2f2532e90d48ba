"""Evidence roles (seed 003): decisive, supporting, background.

A role comes from the chunk (``role=``) or, when absent, from a
:class:`RoleRule` applied to the ranked list. Roles decide admission order, the
per-item cap (``role_caps``) and placement (the ``edge-anchored`` order). With
``role_caps=None`` (the default) roles are only reported: packing is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ._chunk import ROLES, Chunk, plain
from ._errors import ConfigError

__all__ = [
    "DEFAULT_ROLE_CAPS",
    "EVIDENCE_POLICY",
    "RoleRule",
    "assign_roles",
    "check_role_caps",
    "resolve_cap",
]

#: Decisive items verbatim; supporting items at most a quarter of the source budget
#: each; background uncapped, admitted after both: it gets whatever remains (seed 003:
#: "Background gets whatever remains, and often deserves nothing": with role caps,
#: admission takes the roles in that order, and the distractor filter, min_score_ratio,
#: leaves out what deserves nothing).
DEFAULT_ROLE_CAPS: Mapping[str, int | float | None] = {
    "decisive": None,
    "supporting": 0.25,
    "background": None,
}


#: Seed 003's whole policy as pack() options: strip boilerplate, cap by role, the decisive item first,
#: compress only what overflows. ``satchel.pack(chunks, q, **satchel.EVIDENCE_POLICY)``.
EVIDENCE_POLICY: Mapping[str, object] = {
    "strip_boilerplate": True,
    "role_caps": DEFAULT_ROLE_CAPS,
    "compress": True,
    # step 6: "Anchor the decisive item at an edge, place supporting material in the middle"
    # (in relevance order a chunk tagged decisive that ranked third went third)
    "order": "edge-anchored",
}


@dataclass(frozen=True, slots=True)
class RoleRule:
    """The rule for candidates without a role.

    The best-ranked candidate is decisive, and so is each next one whose score
    is within ``decisive_gap`` (relative) of the best score, up to
    ``max_decisive`` (counting those the user made decisive, ``role="decisive"``;
    with one of those, only the score gap makes another). The next ``supporting``
    candidates are supporting; the rest are background. Without scores only ranks
    count. Packing applies it to the candidates left after the first dedupe pass and
    the distractor filter (seed 003: deduplicate, admit, then assign roles), so a
    copy never takes a role's place.
    """

    max_decisive: int = 1
    decisive_gap: float = 0.02
    supporting: int = 4

    def __post_init__(self) -> None:
        for name in ("max_decisive", "supporting"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"RoleRule({name}={value!r}) must be a whole number")
        gap = self.decisive_gap
        if isinstance(gap, bool) or not isinstance(gap, (int, float)):
            raise ConfigError(f"RoleRule(decisive_gap={gap!r}) must be a number in [0, 1)")
        if self.max_decisive < 1 or self.supporting < 0:
            raise ConfigError(
                f"RoleRule(max_decisive={self.max_decisive}, supporting={self.supporting}): need "
                "max_decisive >= 1 and supporting >= 0"
            )
        if not 0 <= self.decisive_gap < 1:
            raise ConfigError(f"RoleRule(decisive_gap={self.decisive_gap}) must be in [0, 1)")


def assign_roles(ranked: Sequence[Chunk], rule: RoleRule) -> list[str]:
    """The role of each ranked candidate: its own, or the rule's by rank and score gap."""
    roles: list[str] = []
    best = ranked[0].score if ranked else None
    # Decisive roles the user gave fill max_decisive first (the best untagged candidate was
    # made decisive beside one, whatever its score).
    given = sum(1 for chunk in ranked if chunk.role == "decisive")
    decisive = 0
    unassigned_seen = 0
    for chunk in ranked:
        if chunk.role is not None:
            roles.append(chunk.role)
            continue
        unassigned_seen += 1
        near_top = (
            best is not None
            and chunk.score is not None
            and best > 0
            and chunk.score >= best * (1 - rule.decisive_gap)
        )
        if given + decisive < rule.max_decisive and ((unassigned_seen == 1 and not given) or near_top):
            roles.append("decisive")
            decisive += 1
        elif unassigned_seen <= decisive + rule.supporting:
            roles.append("supporting")
        else:
            roles.append("background")
    return roles


def check_role_caps(caps: Mapping[str, int | float | None] | None) -> Mapping[str, int | float | None] | None:
    if caps is None:
        return None
    if not isinstance(caps, Mapping):
        raise ConfigError(f"role_caps={caps!r} must be a dict such as {dict(DEFAULT_ROLE_CAPS)}")
    unknown = set(caps) - set(ROLES)
    if unknown:
        raise ConfigError(f"role_caps names unknown role(s) {sorted(unknown)}; roles are {', '.join(ROLES)}")
    out: dict[str, int | float | None] = dict.fromkeys(ROLES)  # a role left out is not capped
    for role, cap in caps.items():
        cap = plain(cap)  # (numpy's numbers as Python's)
        if cap is None:
            pass
        elif isinstance(cap, bool) or not isinstance(cap, (int, float)) or not cap >= 0:  # (NaN too)
            raise ConfigError(
                f"role_caps[{role!r}]={cap!r} must be None (no cap), whole tokens, or a share of the "
                "source budget between 0 and 1"
            )
        elif isinstance(cap, float) and cap > 1:
            raise ConfigError(
                f"role_caps[{role!r}]={cap} is a share above 1 (a number with a decimal point is a "
                f"share of the source budget); give whole tokens without one ({int(cap)}) or a share "
                "such as 0.25"
            )
        out[role] = cap
    return out


def resolve_cap(cap: int | float | None, source_budget: int) -> int | None:
    """A cap in tokens: ints as given, floats as a share of the source budget."""
    if cap is None:
        return None
    if isinstance(cap, float):
        try:
            return int(cap * source_budget)
        except OverflowError:  # (a budget past a float's range: the share, exactly)
            return int(Fraction(cap) * source_budget)
    return cap
