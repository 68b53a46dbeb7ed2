"""What an import says it did: per object, the stack-file entry it became or why it was left alone, and every
value the sources did not hold literally (inferred from another field, or given by an option)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Adopted", "Inferred", "LeftAlone", "Report"]


@dataclass(frozen=True)
class Adopted:
    """An object the stack declares from now on: ``obj`` (as :meth:`LiveObject.shown` names it) at ``place``."""

    obj: str
    place: str


@dataclass(frozen=True)
class LeftAlone:
    """An object in the sources the stack does not declare, and why (a Secret referenced by name, an object a
    controller writes, a MachineConfig nodefleet has no model for)."""

    obj: str
    why: str


@dataclass(frozen=True)
class Inferred:
    """A stack-file value the sources hold only indirectly: ``place`` = ``value``, because ``why``."""

    place: str
    value: str
    why: str


@dataclass
class Report:
    adopted: list[Adopted] = field(default_factory=list)
    left_alone: list[LeftAlone] = field(default_factory=list)
    inferred: list[Inferred] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"  adopted  {a.obj} -> {a.place}" for a in self.adopted]
        out += [f"  left     {a.obj}: {a.why}" for a in self.left_alone]
        out += [f"  inferred {i.place} = {i.value} ({i.why})" for i in self.inferred]
        return out
