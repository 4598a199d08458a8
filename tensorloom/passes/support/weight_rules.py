"""A `weights` block's rules applied to a file's names, as check-weights reads them.

    rules = [("transformer.h.{i}.attn.c_attn.weight",
              ("h.{i}.q.weight", "h.{i}.k.weight", "h.{i}.v.weight"), True, 0),
             ("transformer.h.{i}.{l}.{p}", "h.{i}.{l}.{p}", False, None)]
    match_names(["transformer.h.0.attn.c_attn.weight", "transformer.h.0.ln_1.bias"], rules)
    # Matched(mappings=[Mapping(("transformer.h.0.attn.c_attn.weight",),
    #                           ("h.0.q.weight", "h.0.k.weight", "h.0.v.weight"), 0), ...])

`{x}` stands for one dot-free part of a name; the first rule that matches a name decides it;
a rule without a target ignores what it matches. A rule of several sources joins the file
tensors its patterns match for the same parts (`query`, `key`, `value` of one layer) into
one, along its `along` dim; a rule of several targets splits the (joined) tensor into them,
each as large along that dim as the model's tensor. The emitted script applies the same rules
with the same algorithm (backends/runtime/pretrained.py; a test runs both on one table).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

RuleTuple = tuple["str | tuple[str, ...]", "str | tuple[str, ...] | None", bool, "int | None"]


_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: the file's patterns, the model's (none: ignored), transposed, along."""

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    transposed: bool = False
    along: int | None = None

    @classmethod
    def of(cls, rule: RuleTuple | tuple[str, str | None, bool]) -> Rule:
        source, target, transposed = rule[0], rule[1], rule[2]
        along = rule[3] if len(rule) > 3 else None
        return cls(_tuple(source), _tuple(target), transposed, along)

    @property
    def several(self) -> bool:
        """It joins or splits: more than one name on a side."""
        return len(self.sources) > 1 or len(self.targets) > 1

    @property
    def dim(self) -> int:
        return self.along or 0


def _tuple(names: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if names is None or names == "":
        return ()
    return (names,) if isinstance(names, str) else tuple(names)


@dataclass(frozen=True, slots=True)
class Mapping:
    """The file tensors one rule maps to model tensors: one to one, joined, or split."""

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    rule: int


@dataclass(slots=True)
class Matched:
    """What a block's rules make of a file's names."""

    mappings: list[Mapping] = field(default_factory=list[Mapping])
    unmatched: list[str] = field(default_factory=list[str])
    # (rule, the names found, the partners a join needs that the file lacks)
    partial: list[tuple[int, list[str], list[str]]] = field(
        default_factory=list[tuple[int, list[str], list[str]]]
    )


def rule_problem(rule: Rule) -> str | None:
    """What makes a rule unusable, or None: a `{x}` that is not a name, a name twice in a
    pattern, joined patterns naming different parts, a target naming a part its pattern
    lacks, a stray brace, `along` on a rule that neither joins nor splits."""
    for source in rule.sources:
        problem = _pattern_problem(source)
        if problem is not None:
            return problem
    parts = _PLACEHOLDER.findall(rule.sources[0])
    for other in rule.sources[1:]:
        if sorted(_PLACEHOLDER.findall(other)) != sorted(parts):
            return f"the joined patterns `{rule.sources[0]}` and `{other}` name different parts"
    for text in rule.targets:
        if "{" in _PLACEHOLDER.sub("", text) or "}" in _PLACEHOLDER.sub("", text):
            return f"a stray brace in `{text}`"
        unknown = [p for p in _PLACEHOLDER.findall(text) if p not in parts]
        if unknown:
            return f"the target's `{{{unknown[0]}}}` is not in the pattern `{rule.sources[0]}`"
    if rule.along is not None and not rule.several:
        return "`along` is for a rule that joins or splits several tensors: `[...]` on a side"
    return None


def _pattern_problem(source: str) -> str | None:
    parts = _PLACEHOLDER.findall(source)
    for part in parts:
        if not part.isidentifier():
            return f"`{{{part}}}` is not a name: write `{{i}}`, `{{layer}}`, ..."
    twice = next((p for p in parts if parts.count(p) > 1), None)
    if twice is not None:
        return f"`{{{twice}}}` appears twice in the pattern"
    if "{" in _PLACEHOLDER.sub("", source) or "}" in _PLACEHOLDER.sub("", source):
        return f"a stray brace in `{source}`"
    return None


def pattern(text: str) -> re.Pattern[str]:
    """`transformer.h.{i}.ln_1.weight` as a regex with one named group per `{x}`."""
    parts = re.split(r"\{(\w+)\}", text)
    regex = "".join(
        re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^.]+)" for i, part in enumerate(parts)
    )
    return re.compile(regex + r"\Z")


def match_names(names: Sequence[str], rules: Sequence[Rule]) -> Matched:
    """Each file name given to the first rule whose pattern (any of a join's) matches it;
    a join's names grouped by the parts their patterns matched."""
    compiled = [[pattern(s) for s in rule.sources] for rule in rules]
    matched = Matched()
    groups: dict[tuple[int, tuple[tuple[str, str], ...]], dict[int, str]] = {}
    for name in names:
        found = _first_match(name, compiled)
        if found is None:
            matched.unmatched.append(name)
            continue
        index, piece, parts = found
        if rules[index].targets:
            groups.setdefault((index, parts), {})[piece] = name
    for (index, parts), pieces in groups.items():
        rule, values = rules[index], dict(parts)
        if len(pieces) < len(rule.sources):
            absent = [s.format(**values) for k, s in enumerate(rule.sources) if k not in pieces]
            matched.partial.append((index, list(pieces.values()), absent))
            continue
        sources = tuple(pieces[k] for k in range(len(rule.sources)))
        targets = tuple(t.format(**values) for t in rule.targets)
        matched.mappings.append(Mapping(sources, targets, index))
    return matched


def _first_match(
    name: str, compiled: list[list[re.Pattern[str]]]
) -> tuple[int, int, tuple[tuple[str, str], ...]] | None:
    """(rule, which of its patterns, the parts it matched) of the first rule matching."""
    for index, regexes in enumerate(compiled):
        for piece, regex in enumerate(regexes):
            match = regex.match(name)
            if match is not None:
                return index, piece, tuple(sorted(match.groupdict().items()))
    return None
