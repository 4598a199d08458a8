"""A `weights` block's rules applied to a file's names, as check-weights reads them.

    rules = [("transformer.h.{i}.{l}.{p}", "h.{i}.{l}.{p}", False)]
    map_names(["transformer.h.0.ln_1.weight"], rules)
    # {"transformer.h.0.ln_1.weight": ("h.0.ln_1.weight", False, 0)}

`{x}` stands for one dot-free part of a name; the first rule that matches a name decides it;
a rule without a target ignores what it matches. The emitted script applies the same rules
with the same algorithm (backends/runtime/pretrained.py; a test runs both on one table).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Rule = tuple[str, str | None, bool]


_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def rule_problem(source: str, target: str | None) -> str | None:
    """What makes a rule unusable, or None: a `{x}` that is not a name, a name twice in the
    pattern, a target naming a part its pattern lacks, a stray brace."""
    parts = _PLACEHOLDER.findall(source)
    for part in parts:
        if not part.isidentifier():
            return f"`{{{part}}}` is not a name: write `{{i}}`, `{{layer}}`, ..."
    twice = next((p for p in parts if parts.count(p) > 1), None)
    if twice is not None:
        return f"`{{{twice}}}` appears twice in the pattern"
    for text in (source, target or ""):
        if "{" in _PLACEHOLDER.sub("", text) or "}" in _PLACEHOLDER.sub("", text):
            return f"a stray brace in `{text}`"
    unknown = [p for p in _PLACEHOLDER.findall(target or "") if p not in parts]
    if unknown:
        return f"the target's `{{{unknown[0]}}}` is not in the pattern `{source}`"
    return None


def pattern(text: str) -> re.Pattern[str]:
    """`transformer.h.{i}.ln_1.weight` as a regex with one named group per `{x}`."""
    parts = re.split(r"\{(\w+)\}", text)
    regex = "".join(
        re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^.]+)" for i, part in enumerate(parts)
    )
    return re.compile(regex + r"\Z")


def map_names(names: Sequence[str], rules: Sequence[Rule]) -> dict[str, tuple[str, bool, int]]:
    """file name -> (model name, transposed, index of the rule) for each name a rule maps."""
    compiled = [(pattern(source), target, transposed) for source, target, transposed in rules]
    mapped: dict[str, tuple[str, bool, int]] = {}
    for name in names:
        for index, (regex, target, transposed) in enumerate(compiled):
            match = regex.match(name)
            if match is not None:
                if target is not None:
                    mapped[name] = (target.format(**match.groupdict()), transposed, index)
                break
    return mapped


def unmatched_names(names: Sequence[str], rules: Sequence[Rule]) -> list[str]:
    """The names no rule matches (neither mapped nor ignored)."""
    compiled = [pattern(source) for source, _, _ in rules]
    return [n for n in names if not any(regex.match(n) for regex in compiled)]
