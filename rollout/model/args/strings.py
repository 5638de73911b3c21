# Owns: generating a string for a merged schema node (length bounds, every `pattern`, `format`)
# and a property name for a `patternProperties` pattern. Realistic candidates come first, then
# candidates reshaped to fit simple patterns, then samples of the patterns themselves. Lengths
# are held to Limits.max_string_length (a larger maxLength is clamped, a larger minLength or a
# pattern that cannot match that short fails fast); every candidate is charged to the budget.
from __future__ import annotations

from collections.abc import Iterator
from random import Random
from typing import Any, Final

from rollout.model.args.budget import Budget, LimitExceeded, UnsupportedSchema, over_limit
from rollout.model.args.common import Ctx, brief, count
from rollout.model.args.conform import format_ok
from rollout.model.args.hints import FORMATS, WORDS, fit, format_sample, hint_kind, realistic
from rollout.model.args.match import Patterns
from rollout.model.args.regex import Pattern
from rollout.model.args.vocabulary import Vocabulary

_PATTERN_ATTEMPTS: Final = 36
_STRETCHES: Final = (1, 3, 6, 12, 24, 48)
_URL_FORMATS: Final = ("uri", "url", "iri", "uri-reference", "iri-reference")


def generate_string(
    m: dict[str, Any], ctx: Ctx, rng: Random, patterns: Patterns, vocab: Vocabulary | None = None
) -> str:
    limits, budget, path = patterns.limits, patterns.budget, ctx.path
    lo = count(m, "minLength", path)
    declared_hi = count(m, "maxLength", path, default=None)
    if declared_hi is not None and lo > declared_hi:
        raise UnsupportedSchema(path, f"minLength {lo} is greater than maxLength {declared_hi}")
    cap = limits.max_string_length
    if lo > cap:
        raise over_limit(path, f"minLength {lo}", cap, "max_string_length")
    hi: int = cap if declared_hi is None else min(declared_hi, cap)  # clamped: still valid
    sources: list[str] = m.get("__patterns__", [])
    parsed = [patterns.get(s, path) for s in sources]
    for source, pattern in zip(sources, parsed, strict=True):
        if pattern.min_length > cap:
            what = (
                f"pattern {brief(source)}, which matches no string shorter than "
                f"{pattern.min_length} characters,"
            )
            raise over_limit(path, what, cap, "max_string_length")
        if pattern.min_length > hi:
            raise UnsupportedSchema(
                path, f"pattern {brief(source)} needs at least {pattern.min_length} characters, "
                f"more than maxLength {hi}",
            )  # fmt: skip
    fmt = m.get("format") if m.get("format") in FORMATS else None
    kind = hint_kind(ctx.hint, m.get("description"))

    def accept(s: str) -> bool:
        budget.chars(len(s), path)
        return (
            lo <= len(s) <= hi
            and all(patterns.search(src, s, path) for src in sources)
            and (fmt is None or format_ok(fmt, s))
        )

    grounded = vocab.value(kind) if vocab is not None and fmt is None else None
    if grounded is not None and accept(grounded):
        return grounded  # what the conversation says, when it fits the schema as it is
    for candidate in _candidates(kind, fmt, sources, parsed, lo, hi, rng, patterns, path):
        if accept(candidate):
            return candidate
    wanted = [f"length {lo}..{'' if declared_hi is None else declared_hi}"]
    wanted += [f"pattern {brief(s)}" for s in sources]
    wanted += [f"format {fmt!r}"] if fmt else []
    raise UnsupportedSchema(
        path, f"could not generate a string with {', '.join(wanted)} (tried candidates)"
    )


def _candidates(
    kind: str | None,
    fmt: str | None,
    sources: list[str],
    parsed: list[Pattern],
    lo: int,
    hi: int,
    rng: Random,
    patterns: Patterns,
    path: str,
) -> Iterator[str]:
    """Strings to try, in order: realistic ones (or samples of the format), then, under
    patterns, realistic ones reshaped and samples of each pattern."""
    budget = patterns.budget
    if fmt is not None:
        for _ in range(4):
            sample = format_sample(fmt, rng)
            yield sample
            if fmt in _URL_FORMATS:  # URLs stretch with path segments
                yield _fitted(sample, lo, hi, "url", rng, budget, path)
    else:
        yield _fitted(realistic(kind, rng), lo, hi, kind, rng, budget, path)
    if not sources:
        return
    yield from _reshaped(kind, lo, hi, rng, budget, path)
    for source, pattern in zip(sources, parsed, strict=True):
        yield from _pattern_samples(source, pattern, lo, rng, patterns, path)


def _fitted(
    s: str, lo: int, hi: int | None, kind: str | None, rng: Random, budget: Budget, path: str
) -> str:
    """`s` stretched or cut to a length in lo..hi (hints.fit), charged to the budget."""
    budget.chars(lo, path)  # padding builds about `lo` characters
    return fit(s, lo, hi, kind, rng)


def _reshaped(
    kind: str | None, lo: int, hi: int, rng: Random, budget: Budget, path: str
) -> Iterator[str]:
    """Realistic strings reshaped to fit simple patterns (`^[a-z_]+$`, `^[a-z-]+$`, ...), then
    plain words."""
    for _ in range(3):
        base = realistic(kind, rng)
        for variant in (base, base.replace(" ", "_"), base.replace(" ", "-"), base.lower()):
            yield variant
            yield _fitted(variant, lo, hi, kind, rng, budget, path)
    for word in rng.sample(WORDS, 6):
        yield word
        yield word.upper()


def _pattern_samples(
    source: str, pattern: Pattern, lo: int, rng: Random, patterns: Patterns, path: str
) -> Iterator[str]:
    """Samples of one pattern at growing stretches, padded where unanchored to reach `lo`; then,
    for a long minimum, samples with just enough rounds per quantifier."""
    budget, cap = patterns.budget, patterns.limits.max_string_length
    anchored_start = source.startswith(("^", "\\A"))
    anchored_end = source.endswith("$") and not source.endswith("\\$")
    for attempt in range(_PATTERN_ATTEMPTS):
        got = pattern.sample(rng, _STRETCHES[attempt % len(_STRETCHES)], budget, cap, path=path)
        if got is None:
            continue
        yield got
        if len(got) < lo:
            pad = _fitted("", lo - len(got), None, None, rng, budget, path)
            if not anchored_end:
                yield got + pad
            if not anchored_start:
                yield pad + got
    if lo > 1:
        yield from _long_minimum(pattern, lo, rng, budget, cap, path)


def _long_minimum(
    pattern: Pattern, lo: int, rng: Random, budget: Budget, cap: int, path: str
) -> Iterator[str]:
    """Samples with the fewest fixed rounds per quantifier that reach `lo` characters (found by
    bisection), and one or two rounds more."""
    least, most = 0, lo
    while least < most:
        middle = (least + most) // 2
        got = pattern.sample(rng, middle, budget, cap, exact=True, path=path)
        if got is None or len(got) >= lo:
            most = middle
        else:
            least = middle + 1
    for stretch in (least, least + 1, least + 2):
        got = pattern.sample(rng, stretch, budget, cap, exact=True, path=path)
        if got is not None:
            yield got


def pattern_sample(source: str, rng: Random, patterns: Patterns, path: str) -> str | None:
    """A non-empty string `source` matches (for a property name), or None."""
    try:
        pattern = patterns.get(source, path)
    except LimitExceeded:
        raise
    except UnsupportedSchema:
        return None
    for stretch in _STRETCHES[:3]:
        cap = patterns.limits.max_string_length
        sample = pattern.sample(rng, stretch, patterns.budget, cap, path=path)
        if sample and patterns.search(source, sample, path):
            return sample
    return None
