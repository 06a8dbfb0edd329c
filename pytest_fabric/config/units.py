"""Quantities as people write them: ``200 Gb/s``, ``25 GB/s``, ``2 us``, ``8 GiB``, ``90% line``.

Values are kept exact (:class:`~decimal.Decimal`) in a base unit per dimension
(bit/s for bandwidth, bytes for sizes, seconds for time), and the text the user
wrote is kept for messages.  Bits and bytes are told apart by the case of the
``b``: ``Gb/s`` is gigabits, ``GB/s`` gigabytes; a unit that is neither (``200 Gb``,
a size where a rate is needed) is an error, never a guess.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation, localcontext
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

__all__ = [
    "Dimension",
    "Quantity",
    "QuantityError",
    "QuantityField",
    "parse_quantity",
    "bandwidth",
    "infiniband_data_rate",
]


class QuantityError(ValueError):
    """Text that is not a quantity we understand; the message lists what is accepted."""


class Dimension(str, enum.Enum):
    BANDWIDTH = "bandwidth"  # base unit: bit/s
    SIZE = "size"  # base unit: byte
    TIME = "time"  # base unit: second
    LINE_SHARE = "line_share"  # a fraction of the port rate the link reports
    PERCENT = "percent"  # a plain fraction (10% -> 0.1)
    COUNT = "count"  # dimensionless: IOPS, MTU, counters


_SI = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}

# unit text (exact spelling) -> (dimension, factor to the base unit)
_UNITS: dict[str, tuple[Dimension, Decimal]] = {}


def _register_units() -> None:
    for prefix, factor in _SI.items():
        bits = Decimal(factor)
        for spelling in ("b/s", "bps", "bit/s", "bits/s", "bits/sec", "bit/sec", "bit", "bits"):
            if spelling in ("bit", "bits"):
                continue  # a bare bit count is a size in bits, which no check asks for
            _UNITS[f"{prefix}{spelling}"] = (Dimension.BANDWIDTH, bits)
        _UNITS[f"{prefix}B/s"] = (Dimension.BANDWIDTH, bits * 8)
        _UNITS[f"{prefix}Bps"] = (Dimension.BANDWIDTH, bits * 8)
        _UNITS[f"{prefix}B"] = (Dimension.SIZE, bits)
    for prefix, factor in _IEC.items():
        _UNITS[f"{prefix}B"] = (Dimension.SIZE, Decimal(factor))
        _UNITS[f"{prefix}B/s"] = (Dimension.BANDWIDTH, Decimal(factor) * 8)
        _UNITS[f"{prefix}b/s"] = (Dimension.BANDWIDTH, Decimal(factor))
    _UNITS["bytes"] = (Dimension.SIZE, Decimal(1))
    times: dict[str, Decimal] = {
        "ns": Decimal("1e-9"),
        "us": Decimal("1e-6"),
        "µs": Decimal("1e-6"),
        "usec": Decimal("1e-6"),
        "ms": Decimal("1e-3"),
        "msec": Decimal("1e-3"),
        "s": Decimal(1),
        "sec": Decimal(1),
        "min": Decimal(60),
    }
    for spelling, seconds in times.items():
        _UNITS[spelling] = (Dimension.TIME, seconds)


_register_units()

# The unit a dimension is shown in when no other is asked for.
_DISPLAY = {
    Dimension.BANDWIDTH: "Gb/s",
    Dimension.SIZE: "GiB",
    Dimension.TIME: "us",
}

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_QUANTITY_RE = re.compile(rf"^\s*(?P<number>{_NUMBER})\s*(?P<unit>[^\s\d].*?)?\s*$")
_LINE_RE = re.compile(r"^%\s*(?:of\s+)?line(?:\s+rate)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Quantity:
    """An exact value in the base unit of its dimension, with the text it came from."""

    value: Decimal
    dimension: Dimension
    # Equality is by value: '25 GB/s' == '200 Gb/s'; the spelling is only for messages.
    text: str = field(default="", compare=False)

    def to(self, unit: str) -> Decimal:
        """This quantity in ``unit`` (``"Gb/s"``, ``"GB/s"``, ``"us"``, ``"MiB"``)."""
        if self.dimension in (Dimension.LINE_SHARE, Dimension.PERCENT):
            if unit == "%":
                return self.value * 100
            raise QuantityError(f"{self} is a share, not a {unit} value")
        if self.dimension is Dimension.COUNT:
            if unit in ("", "count"):
                return self.value
            raise QuantityError(f"{self} has no unit; cannot express it in {unit}")
        try:
            dimension, factor = _UNITS[unit]
        except KeyError:
            raise QuantityError(f"unknown unit {unit!r}") from None
        if dimension is not self.dimension:
            raise QuantityError(f"{self} is a {self.dimension.value}, not a {dimension.value}")
        with localcontext() as context:  # enough digits that the division is exact when it can be
            context.prec = max(28, len(self.value.as_tuple().digits) + 20)
            return self.value / factor

    def of(self, line: Quantity) -> Quantity:
        """Resolve a ``90% line`` share against the rate the port reports."""
        if self.dimension is not Dimension.LINE_SHARE:
            return self
        value = self.value * line.value
        return Quantity(value, line.dimension, f"{format_value(value, line.dimension)} ({self.text} of {line})")

    @property
    def is_line_share(self) -> bool:
        return self.dimension is Dimension.LINE_SHARE

    def display(self, unit: str | None = None) -> str:
        """A short, readable form: ``191.3 Gb/s``, ``1.52 us``, ``90% line``."""
        if unit is not None:
            return f"{_fmt(self.to(unit))} {unit}"
        return format_value(self.value, self.dimension)

    def __str__(self) -> str:
        return self.text or self.display()

    def __float__(self) -> float:
        return float(self.value)

    def __lt__(self, other: Quantity) -> bool:
        return self._comparable(other) < other.value

    def __le__(self, other: Quantity) -> bool:
        return self._comparable(other) <= other.value

    def __gt__(self, other: Quantity) -> bool:
        return self._comparable(other) > other.value

    def __ge__(self, other: Quantity) -> bool:
        return self._comparable(other) >= other.value

    def _comparable(self, other: Quantity) -> Decimal:
        if self.dimension is not other.dimension:
            raise QuantityError(f"cannot compare {self} ({self.dimension.value}) with {other} ({other.dimension.value})")
        return self.value


def _fmt(value: Decimal) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    magnitude = abs(value)
    if magnitude < Decimal("0.001"):
        return f"{float(value):.3g}"  # a bit error ratio: three decimals would show it as 0
    digits = 1 if magnitude >= 100 else 2 if magnitude >= 1 else 3
    return f"{float(value):.{digits}f}".rstrip("0").rstrip(".")


def format_value(value: Decimal, dimension: Dimension) -> str:
    """Format a base-unit value in the unit people read for its dimension."""
    if dimension is Dimension.LINE_SHARE:
        return f"{_fmt(value * 100)}% line"
    if dimension is Dimension.PERCENT:
        return f"{_fmt(value * 100)}%"
    if dimension is Dimension.COUNT:
        return _fmt(value)
    if dimension is Dimension.TIME:
        for unit, factor in (("s", 1), ("ms", Decimal("1e-3")), ("us", Decimal("1e-6"))):
            if abs(value) >= factor:
                return f"{_fmt(value / Decimal(factor))} {unit}"
        return f"{_fmt(value / Decimal('1e-9'))} ns"
    if dimension is Dimension.SIZE:
        for unit in ("TiB", "GiB", "MiB", "KiB"):
            factor = _UNITS[unit][1]
            if abs(value) >= factor:
                return f"{_fmt(value / factor)} {unit}"
        return f"{_fmt(value)} B"
    for unit in ("Tb/s", "Gb/s", "Mb/s", "kb/s"):
        factor = _UNITS[unit][1]
        if abs(value) >= factor:
            return f"{_fmt(value / factor)} {unit}"
    return f"{_fmt(value)} b/s"


def parse_quantity(text: Any, *, dimension: Dimension | None = None) -> Quantity:
    """Parse ``text`` into a :class:`Quantity`.

    ``dimension``, when given, is what the caller needs; anything else is an error
    that says what was read and what was expected.  Bare numbers are counts.
    """
    if isinstance(text, Quantity):
        quantity = text
    else:
        quantity = _parse(text)
    if dimension is not None and quantity.dimension is not dimension:
        if dimension is Dimension.BANDWIDTH and quantity.dimension is Dimension.LINE_SHARE:
            return quantity
        written = quantity.text or str(quantity) if isinstance(text, Quantity) else text
        raise QuantityError(
            f"{written!r} is a {quantity.dimension.value.replace('_', ' ')}; expected a "
            f"{dimension.value.replace('_', ' ')} such as {_EXAMPLES[dimension]}"
        )
    return quantity


_EXAMPLES = {
    Dimension.BANDWIDTH: "'200 Gb/s', '25 GB/s' or '90% line'",
    Dimension.SIZE: "'8 MiB' or '4 GiB'",
    Dimension.TIME: "'2 us', '100 ms' or '10 s'",
    Dimension.COUNT: "'4096' or '50000'",
    Dimension.PERCENT: "'10%'",
    Dimension.LINE_SHARE: "'90% line'",
}


def _parse(text: Any) -> Quantity:
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, (int, Decimal)):
        return Quantity(Decimal(text), Dimension.COUNT, str(text))
    if isinstance(text, float):
        return Quantity(Decimal(repr(text)), Dimension.COUNT, repr(text))
    if not isinstance(text, str):
        raise QuantityError(f"{text!r} is not a quantity; write a number with its unit, e.g. '200 Gb/s'")
    match = _QUANTITY_RE.match(text)
    if not match:
        raise QuantityError(f"{text!r} is not a quantity; write a number with its unit, e.g. '200 Gb/s'")
    try:
        number = Decimal(match.group("number"))
    except InvalidOperation:  # pragma: no cover - the regex admits only valid numbers
        raise QuantityError(f"{text!r}: bad number") from None
    unit = (match.group("unit") or "").strip()
    if not unit:
        return Quantity(number, Dimension.COUNT, text.strip())
    if unit.startswith("%"):
        rest = unit[1:].strip()
        if not rest:
            return Quantity(number / 100, Dimension.PERCENT, text.strip())
        if _LINE_RE.match(unit):
            return Quantity(number / 100, Dimension.LINE_SHARE, f"{_fmt(number)}% line")
        raise QuantityError(f"{text!r}: after '%' only 'line' may follow (e.g. '90% line')")
    normalized = unit.replace("ps", "/s") if unit.endswith("ps") and "/" not in unit else unit
    normalized = normalized.replace("/sec", "/s")
    for candidate in (unit, normalized):
        if candidate in _UNITS:
            dimension, factor = _UNITS[candidate]
            try:
                with localcontext() as context:  # every digit written is kept: no rounding
                    context.prec = len(number.as_tuple().digits) + 20
                    return Quantity(number * factor, dimension, text.strip())
            except ArithmeticError:  # an exponent beyond what Decimal holds (1e9999999 Gb/s)
                raise QuantityError(f"{text!r}: the number is out of range") from None
    hint = ""
    if unit in ("Gb", "Mb", "Tb", "Kb", "kb"):
        hint = f" ('{unit}' is an amount of bits; for a rate write '{unit}/s')"
    raise QuantityError(
        f"{text!r}: unknown unit {unit!r}{hint}. Rates: b/s Mb/s Gb/s (bits), B/s MB/s GB/s (bytes); "
        "sizes: B KB MB GB KiB MiB GiB; times: ns us ms s; shares: '90% line'"
    )


# What a '90% line' share of an InfiniBand link is taken of: the data rate, not the rate the port
# reports.  The kernel (and ibstat) report lanes x the speed's nominal rate: SDR 2.5, DDR 5, QDR 10,
# FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s per lane.  SDR/DDR/QDR signal at that
# rate with 8b/10b (80% is data: QDR 4X reports 40 for 32 Gb/s of data); FDR signals 14.0625 Gb/s
# with 64b/66b (4X reports 56 for 54.55); FDR10 (10.3125 Gb/s, 64b/66b), EDR (25.78125, 64b/66b)
# and HDR/NDR/XDR (PAM4 with FEC) report their data rate already.  Source: IBTA Architecture
# Specification Vol. 2, as tabulated in Wikipedia "InfiniBand" (Performance) and infiniband.jp.
_IB_DATA_SHARE: dict[str, Decimal] = {
    "SDR": Decimal("0.8"),
    "DDR": Decimal("0.8"),
    "QDR": Decimal("0.8"),
    "FDR10": Decimal(1),
    "FDR": Decimal("14.0625") * 64 / 66 / 14,
    "EDR": Decimal(1),
    "HDR": Decimal(1),
    "NDR": Decimal(1),
    "XDR": Decimal(1),
}
_IB_CODING = {"SDR": "8b/10b", "DDR": "8b/10b", "QDR": "8b/10b", "FDR": "64b/66b"}
_IB_SPEED = re.compile(r"\b(?:(?P<lanes>\d+)X\s+)?(?P<speed>SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)\b", re.IGNORECASE)


def infiniband_data_rate(reported: Quantity, speed: str | None) -> Quantity | None:
    """The data rate behind an InfiniBand port's reported rate, or None when ``speed`` names no IB speed.

    ``speed`` is how sysfs or ibstat name the link (``200 Gb/sec (4X HDR)``,
    ``4X QDR``, ``FDR``).  ``40 Gb/s`` of ``4X QDR`` is ``32 Gb/s`` of data;
    ``56 Gb/s`` of ``4X FDR`` is ``54.55 Gb/s``; EDR and faster report their
    data rate already.  The speed must be named: 40 Gb/s is QDR (32 of data)
    or FDR10 (40 of data), and the rate alone cannot tell which.
    """
    match = _IB_SPEED.search(speed or "")
    if match is None or reported.dimension is not Dimension.BANDWIDTH:
        return None
    name = match.group("speed").upper()
    value = reported.value * _IB_DATA_SHARE[name]
    lanes = f"{match.group('lanes')}X " if match.group("lanes") else ""
    coding = _IB_CODING.get(name)
    how = f"{lanes}{name} {reported.display('Gb/s')}"
    if value == reported.value:
        text = f"{format_value(value, Dimension.BANDWIDTH)} ({how} is its data rate)"
    else:
        text = f"{format_value(value, Dimension.BANDWIDTH)} (data rate of {how}, {coding})"
    return Quantity(value, Dimension.BANDWIDTH, text)


def bandwidth(value: float | Decimal | str, unit: str) -> Quantity:
    """A bandwidth from a number a tool printed and the unit it printed it in."""
    number = Decimal(str(value))
    dimension, factor = _UNITS[unit]
    if dimension is not Dimension.BANDWIDTH:
        raise QuantityError(f"{unit} is not a bandwidth unit")
    return Quantity(number * factor, dimension, f"{_fmt(number)} {unit}")


def _validate(value: Any) -> Quantity:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


QuantityField = Annotated[
    Quantity,
    BeforeValidator(_validate),
    PlainSerializer(lambda q: str(q), return_type=str),
    WithJsonSchema({"type": "string", "examples": ["200 Gb/s", "25 GB/s", "2 us", "90% line"]}),
]
"""A pydantic field type: accepts quantity text (or a bare number) and keeps it exact."""
