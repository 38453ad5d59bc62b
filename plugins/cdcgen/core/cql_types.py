"""A CQL type as ``system_schema`` and the driver spell it, parsed (pure).

``frozen<map<text, frozen<address>>>`` becomes a tree of names and arguments with the
``frozen`` wrapper folded into a flag: what replication compares between a source and a
sink table and walks to build its value converters. A user type is a bare name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cdcgen.core.errors import CqlTypeError


@dataclass(frozen=True)
class ParsedType:
    """A CQL type as ``system_schema`` spells it: ``frozen<map<text, int>>``."""

    name: str
    args: tuple[ParsedType, ...] = ()
    frozen: bool = False

    @classmethod
    def parse(cls, text: str) -> ParsedType:
        tokens = [t for t in re.split(r"\s*([<>,])\s*", text.strip()) if t]
        try:
            parsed, rest = cls._parse(tokens)
        except CqlTypeError as exc:
            raise CqlTypeError(f"cannot read the CQL type {text!r}: {exc}") from None
        if rest:
            raise CqlTypeError(f"cannot read the CQL type {text!r}")
        return parsed

    @classmethod
    def _parse(cls, tokens: list[str]) -> tuple[ParsedType, list[str]]:
        if not tokens or tokens[0] in "<>,":
            raise CqlTypeError(f"cannot read a CQL type from {''.join(tokens)!r}")
        name, rest = tokens[0].strip('"'), tokens[1:]
        if not rest or rest[0] != "<":
            return cls(name), rest
        args = []
        rest = rest[1:]
        while True:
            arg, rest = cls._parse(rest)
            args.append(arg)
            if rest and rest[0] == ",":
                rest = rest[1:]
            elif rest and rest[0] == ">":
                rest = rest[1:]
                break
            else:
                raise CqlTypeError(f"cannot read a CQL type near {''.join(rest)!r}")
        if name == "frozen":
            return cls(args[0].name, args[0].args, frozen=True), rest
        return cls(name, tuple(args)), rest
