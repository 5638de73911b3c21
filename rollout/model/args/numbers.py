# Owns: generating a number for a merged schema node: inside the (exclusive) bounds, a multiple
# of every `multipleOf` (exactly, in fractions, then re-checked in floating point as validators
# check it), near the typical values of the property's name. A fixed number of candidates is
# tried, each charged a step and costing a fixed handful of exact operations: multiples of the
# step are built inside the bounds from integer multipliers (no check needed), and only the
# typical values and the free draws are checked against the bounds.
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from random import Random
from typing import Any

import attrs

from rollout.model.args.budget import Budget, UnsupportedSchema
from rollout.model.args.common import Ctx, brief, is_number
from rollout.model.args.conform import in_float_bounds, is_multiple
from rollout.model.args.hints import integer_like, number_hint


def generate_number(
    m: dict[str, Any], ctx: Ctx, rng: Random, budget: Budget, *, integer: bool
) -> int | float:
    if not integer and integer_like(ctx.hint):
        # `yield_time_ms`, `max_results`, `line`: whole numbers, as a model writes them and as
        # clients that read them into unsigned integers require, even under `type: number`.
        try:
            return _generate(m, ctx, rng, budget, integer=True)
        except UnsupportedSchema:
            pass
    return _generate(m, ctx, rng, budget, integer=integer)


def _generate(
    m: dict[str, Any], ctx: Ctx, rng: Random, budget: Budget, *, integer: bool
) -> int | float:
    what = "integer" if integer else "number"
    bounds = _Bounds.read(m, ctx.path)
    if bounds.empty():
        raise UnsupportedSchema(ctx.path, f"no {what} satisfies {bounds.describe()}")
    multiples: list[int | float] = m.get("__multiples__", [])
    step = _step(multiples, budget, ctx.path, integer=integer)
    nice, w_lo, w_hi = _window(ctx.hint, bounds)
    rounding = False
    # A fixed number of candidates, whatever the bounds.
    for v in _candidates(bounds, step, nice, w_lo, w_hi, rng, minimal=ctx.minimal):
        budget.spend(1, ctx.path)
        if v is None:  # outside the bounds or not a multiple of the step
            continue
        out = _json_number(v, integer)
        if out is None:
            continue
        if in_float_bounds(out, m) and all(is_multiple(out, d) for d in multiples):
            return out
        rounding = True
    detail = f" that is a multiple of {_fmt_frac(step)}" if step is not None else ""
    if rounding:
        detail += " (in floating point, as validators check multipleOf)"
    raise UnsupportedSchema(
        ctx.path, f"no {what} satisfies {bounds.describe() or 'the bounds'}{detail}".rstrip()
    )


@attrs.frozen
class _Bounds:
    """A number's bounds, exactly: each side None when unbounded, with whether it is open."""

    low: Fraction | None
    low_open: bool
    high: Fraction | None
    high_open: bool

    @classmethod
    def read(cls, m: Mapping[str, Any], path: str) -> _Bounds:
        low, low_open = _tightest(m, "minimum", "exclusiveMinimum", path, lower=True)
        high, high_open = _tightest(m, "maximum", "exclusiveMaximum", path, lower=False)
        return cls(low, low_open, high, high_open)

    def empty(self) -> bool:
        """Whether no number at all lies within the bounds."""
        if self.low is None or self.high is None:
            return False
        return self.low > self.high or (self.low == self.high and (self.low_open or self.high_open))

    def admits(self, v: Fraction) -> bool:
        low, high = self.low, self.high
        if low is not None and (v < low or (self.low_open and v == low)):
            return False
        return not (high is not None and (v > high or (self.high_open and v == high)))

    def admitted(self, v: Fraction) -> Fraction | None:
        """`v` when the bounds admit it, else None."""
        return v if self.admits(v) else None

    def step_range(self, step: Fraction) -> tuple[int | None, int | None]:
        """The range of k for which k * step lies within the bounds (None: unbounded)."""
        k_lo = k_hi = None
        if self.low is not None:
            k_lo = math.ceil(self.low / step)
            if self.low_open and k_lo * step == self.low:
                k_lo += 1
        if self.high is not None:
            k_hi = math.floor(self.high / step)
            if self.high_open and k_hi * step == self.high:
                k_hi -= 1
        return k_lo, k_hi

    def describe(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {_fmt_frac(self.low)}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {_fmt_frac(self.high)}")
        return " and ".join(parts)


def _step(
    multiples: list[int | float], budget: Budget, path: str, *, integer: bool
) -> Fraction | None:
    """What every candidate must be a multiple of: the lcm of the `multipleOf`s (exactly) and,
    for an integer, of 1; None when there is neither."""
    step: Fraction | None = None
    for mult in multiples:  # charged by size: an lcm of many multipleOf grows long
        step = _frac_decimal(mult) if step is None else _lcm(step, _frac_decimal(mult))
        budget.spend(1 + (step.numerator.bit_length() + step.denominator.bit_length()) // 64, path)
    if integer:
        step = Fraction(1) if step is None else _lcm(step, Fraction(1))
    return step


def _window(hint: str, bounds: _Bounds) -> tuple[tuple[int | float, ...], Fraction, Fraction]:
    """The typical values of the property's name, and the range candidates are drawn from: the
    name's natural range within the bounds, or next to the bound(s) when it misses them."""
    nice, nat_lo, nat_hi = number_hint(hint)
    low, high = bounds.low, bounds.high
    w_lo, w_hi = Fraction(nat_lo), Fraction(nat_hi)
    if low is not None:
        w_lo = max(w_lo, low)
    if high is not None:
        w_hi = min(w_hi, high)
    if w_lo > w_hi:  # the natural range misses the bounds: stay near the bound(s)
        span = max(Fraction(nat_hi - nat_lo), Fraction(10))
        w_lo = low if low is not None else (high - span if high is not None else w_lo)
        w_hi = high if high is not None else w_lo + span
    return nice, w_lo, w_hi


def _candidates(
    bounds: _Bounds,
    step: Fraction | None,
    nice: tuple[int | float, ...],
    w_lo: Fraction,
    w_hi: Fraction,
    rng: Random,
    *,
    minimal: bool,
) -> Iterator[Fraction | int | None]:
    """Numbers to try, in order: the typical values (most of the time), then draws from the
    window and the edges, as multiples of `step` when there is one. Each is within the bounds
    and a multiple of `step`, or None where a tried value is not."""
    if nice and not minimal and rng.random() < 0.75:
        shuffled = list(nice)
        rng.shuffle(shuffled)
        for x in shuffled:
            v = Fraction(x)
            yield v if bounds.admits(v) and (step is None or v % step == 0) else None
    if step is not None:
        yield from _step_candidates(bounds, step, w_lo, w_hi, rng)
    else:
        yield from _free_candidates(bounds, w_lo, w_hi, rng)


def _step_candidates(
    bounds: _Bounds, step: Fraction, w_lo: Fraction, w_hi: Fraction, rng: Random
) -> Iterator[Fraction | int]:
    """Multiples of `step` (positive, as `multipleOf` is): drawn from the window, the integral
    ones, then the edges. Every multiplier is within `bounds.step_range`, so every candidate is
    within the bounds without a check."""
    k_lo, k_hi = bounds.step_range(step)
    if k_lo is not None and k_hi is not None and k_lo > k_hi:
        return
    wk_lo, wk_hi = math.ceil(w_lo / step), math.floor(w_hi / step)
    wk_hi = max(wk_hi, wk_lo)
    if k_lo is not None:
        wk_lo = max(wk_lo, k_lo)
        wk_hi = max(wk_hi, wk_lo)
    if k_hi is not None:
        wk_hi = min(wk_hi, k_hi)
        wk_lo = min(wk_lo, wk_hi)
    num, den = step.numerator, step.denominator
    for _ in range(12):
        yield _multiple(rng.randint(wk_lo, wk_hi), num, den)
    # Integral values pass float `multipleOf` checks that 0.1-style steps can fail. In lowest
    # terms, k * num / den is integral exactly when den divides k: only those k are visited.
    first_k = -(-wk_lo // den) * den
    for k in range(first_k, min(wk_hi, wk_lo + 200) + 1, den):
        yield k // den * num
    for edge_k in (k_lo, k_hi, wk_lo, wk_hi):
        if edge_k is not None:
            yield _multiple(edge_k, num, den)


def _multiple(k: int, num: int, den: int) -> Fraction | int:
    """k times the step num/den: an int when the step is integral (no Fraction to build)."""
    return k * num if den == 1 else Fraction(k * num, den)


def _free_candidates(
    bounds: _Bounds, w_lo: Fraction, w_hi: Fraction, rng: Random
) -> Iterator[Fraction | None]:
    """Numbers without a step: drawn from the window (two decimals), the middle, the edges;
    None where one is outside the bounds."""
    low, high = bounds.low, bounds.high
    f_lo, f_hi = float(w_lo), float(w_hi)  # once, not per draw
    for _ in range(12):
        yield bounds.admitted(Fraction(round(rng.uniform(f_lo, f_hi), 2)))
    if low is not None and high is not None:
        yield bounds.admitted(Fraction((float(low) + float(high)) / 2))
    for edge, toward in ((low, math.inf), (high, -math.inf)):
        if edge is not None:
            yield bounds.admitted(edge)
            yield bounds.admitted(Fraction(math.nextafter(float(edge), toward)))


def _tightest(
    m: Mapping[str, Any], inclusive: str, exclusive: str, path: str, *, lower: bool
) -> tuple[Fraction | None, bool]:
    """The tighter of an inclusive and an exclusive bound, exactly, with whether it is open."""
    best: Fraction | None = None
    is_open = False
    for key, open_ in ((inclusive, False), (exclusive, True)):
        if key not in m:
            continue
        raw = m[key]
        if not is_number(raw) or not (isinstance(raw, int) or math.isfinite(raw)):
            raise UnsupportedSchema(path, f"{key} must be a finite number, got {brief(raw)}")
        value = Fraction(raw)
        tighter = best is None or (value > best if lower else value < best)
        if tighter or (value == best and open_):
            best, is_open = value, open_
    return best, is_open


def _frac_decimal(x: float) -> Fraction:
    """`0.1` as 1/10 (its decimal spelling), not as the nearest binary fraction."""
    return Fraction(x) if isinstance(x, int) else Fraction(repr(x))


def _lcm(a: Fraction, b: Fraction) -> Fraction:
    return Fraction(math.lcm(a.numerator, b.numerator), math.gcd(a.denominator, b.denominator))


def _json_number(v: Fraction | int, integer: bool) -> int | float | None:
    """`v` as JSON data: an int where exact and within 64 bits (what JSON encoders such as
    orjson write), else a float (integral floats are JSON Schema integers); None past floats.
    Worked in `v`'s integer numerator and denominator: the float is their correctly rounded
    quotient, as `float(Fraction)` computes it."""
    num, den = v.numerator, v.denominator
    if den == 1 and abs(num) < 2**63 and (integer or abs(num) < 2**53):
        return num
    try:
        return num / den
    except OverflowError:
        return None


def _fmt_frac(v: Fraction | None) -> str:
    if v is None:
        return "?"
    if v.numerator.bit_length() > 256 or v.denominator.bit_length() > 256:
        return f"~{float(v):g}" if abs(v) < 2**1000 else "<a number too long to show>"
    return str(v.numerator) if v.denominator == 1 else repr(float(v))
