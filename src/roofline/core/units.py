"""Parse and format quantities: FLOP/s, B/s, bytes and plain numbers.

Accepted forms (case of the prefix matters only for ``m`` vs ``M``)::

    "3.35 TB/s"   "989.4 TFLOP/s"   "80 GiB"   "1.2e12"   "100GFLOPS"
    "2.5 GB"      "512 KiB"         "10 GB/s"  "1 PFLOP/s"  "4.1G"

SI prefixes (k, M, G, T, P, E) are powers of 1000; IEC prefixes (Ki, Mi, Gi,
Ti, Pi, Ei) are powers of 1024.  Units are optional; when given they must
match the kind of quantity asked for (``parse_bandwidth("3 TFLOP/s")`` fails).

>>> parse_flops("989.4 TFLOP/s")
989400000000000.0
>>> format_bandwidth(3.35e12)
'3.35 TB/s'
"""

from __future__ import annotations

import math
import re

from roofline.core.errors import RooflineError

SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
IEC = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}

# unit spellings -> canonical kind
_UNITS = {
    "flop/s": "flops", "flops": "flops", "flop/sec": "flops",
    "b/s": "bandwidth", "byte/s": "bandwidth", "bytes/s": "bandwidth", "bps": "bandwidth",
    "b": "bytes", "byte": "bytes", "bytes": "bytes",
    "flop": "flop", "flops_count": "flop",
    "op/s": "flops", "ops": "flops", "iop/s": "flops", "tops": "flops",
    "s": "seconds", "sec": "seconds",
    "flop/b": "intensity", "flop/byte": "intensity",
}

_PATTERN = re.compile(
    r"^\s*(?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*"
    r"(?P<prefix>Ki|Mi|Gi|Ti|Pi|Ei|[kKMGTPE]|)\s*(?P<unit>[A-Za-z/]*)\s*$"
)

FORMS = {
    "flops": "a number with an optional SI prefix and FLOP/s, e.g. '989.4 TFLOP/s', '100GFLOP/s' or '1.2e12'",
    "bandwidth": "a number with an optional SI/IEC prefix and B/s, e.g. '3.35 TB/s', '10GB/s' or '2e12'",
    "bytes": "a number with an optional SI/IEC prefix and B, e.g. '80 GiB', '40 MB' or '1e9'",
    "flop": "a number with an optional SI prefix, e.g. '8.2 GFLOP', '4.1G' or '1e9'",
    "seconds": "a number of seconds, e.g. '0.5', '1e-3 s' or '2.5ms'",
    "number": "a number with an optional SI/IEC prefix, e.g. '1.2e12', '4k' or '3 Gi'",
}


def parse_quantity(text: str | float | int, kind: str = "number", *, field: str = "value") -> float:
    """Parse ``text`` as a quantity of ``kind`` (flops, bandwidth, bytes, flop, seconds, number).

    Numbers pass through.  The result is always finite (NaN, infinities and numbers beyond float
    range, e.g. '1e400 GB/s', are refused).  Raises :class:`RooflineError` naming the accepted forms.
    """
    value = _parse(text, kind, field)
    if not math.isfinite(value):
        raise RooflineError(f"{field}: {_shown(text)} is not a finite number; expected {FORMS[kind]}")
    return value


def _shown(text: object) -> str:
    if isinstance(text, int) and not isinstance(text, bool) and abs(text) >= 10**40:
        return f"an integer of {len(str(abs(text))) if abs(text) < 10**4000 else '>4000'} digits"
    s = ascii(text) if isinstance(text, str) and not text.isprintable() else repr(text)
    return s if len(s) <= 60 else s[:57] + "..."


def _parse(text: str | float | int, kind: str, field: str) -> float:
    if kind not in FORMS:
        raise ValueError(f"unknown quantity kind {kind!r}")  # a caller's bug, not input
    if isinstance(text, bool):
        raise RooflineError(f"{field}: expected {FORMS[kind]}, got {text!r}")
    if isinstance(text, (int, float)):
        try:
            return float(text)
        except OverflowError:
            return math.inf
    if not isinstance(text, str):
        raise RooflineError(f"{field}: expected {FORMS[kind]}, got {_shown(text)}")
    s = text.strip()
    if kind == "seconds":
        m = re.match(r"^\s*([-+]?[\d.eE+-]+)\s*(ms|us|µs|ns|s)?\s*$", s)
        if m:
            try:
                value = float(m.group(1))
            except ValueError:
                value = None
            if value is not None:
                factor = {"ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}.get(m.group(2) or "s", 1.0)
                return value * factor
        raise RooflineError(f"{field}: cannot parse {_shown(text)}; expected {FORMS[kind]}")
    m = _PATTERN.match(s)
    if not m:
        raise RooflineError(f"{field}: cannot parse {_shown(text)}; expected {FORMS[kind]}")
    value = float(m.group("num"))
    prefix, unit = m.group("prefix"), m.group("unit")
    # "100GFLOPS": the regex may have taken no prefix and left "GFLOPS" in the unit.
    if unit and not prefix and unit[:2] in IEC and unit[2:].lower() in _UNITS:
        prefix, unit = unit[:2], unit[2:]
    elif unit and not prefix and unit[:1] in SI and unit[1:].lower() in _UNITS:
        prefix, unit = unit[:1], unit[1:]
    scale = IEC.get(prefix) or SI.get(prefix)
    if scale is None:
        raise RooflineError(f"{field}: unknown prefix in {_shown(text)}; expected {FORMS[kind]}")
    if unit:
        unit_kind = _UNITS.get(unit.lower())
        if unit_kind is None or (kind != "number" and unit_kind != kind and not (kind == "flop" and unit_kind == "flops" and unit.lower() == "flops")):
            raise RooflineError(f"{field}: unknown or wrong unit {unit!r} in {_shown(text)}; expected {FORMS[kind]}")
    if prefix in IEC and kind in ("flops", "flop"):
        raise RooflineError(f"{field}: IEC prefix {prefix!r} makes no sense for FLOPs in {_shown(text)}; expected {FORMS[kind]}")
    return value * scale


def parse_flops(text: str | float) -> float:
    """'989.4 TFLOP/s' -> 9.894e14 (FLOP/s)."""
    return parse_quantity(text, "flops")


def parse_bandwidth(text: str | float) -> float:
    """'3.35 TB/s' -> 3.35e12 (B/s)."""
    return parse_quantity(text, "bandwidth")


def parse_bytes(text: str | float) -> float:
    """'80 GiB' -> 85899345920.0 (B)."""
    return parse_quantity(text, "bytes")


def _si(value: float, unit: str, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return f"{value} {unit}"
    if value == 0:
        return f"0 {unit}"
    exp = int(math.floor(math.log10(abs(value)) / 3))
    exp = max(-4, min(6, exp))
    prefixes = {-4: "p", -3: "n", -2: "µ", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}
    scaled = value / 1000.0**exp
    text = f"{scaled:.{digits}g}"
    if "e" in text:  # e.g. 1e+03 after rounding up
        text = f"{scaled:.0f}"
    return f"{text} {prefixes[exp]}{unit}"


def format_flops(value: float, digits: int = 4) -> str:
    """9.894e14 -> '989.4 TFLOP/s'."""
    return _si(value, "FLOP/s", digits)


def format_flop(value: float, digits: int = 4) -> str:
    """8.2e9 -> '8.2 GFLOP'."""
    return _si(value, "FLOP", digits)


def format_bandwidth(value: float, digits: int = 4) -> str:
    """3.35e12 -> '3.35 TB/s'."""
    return _si(value, "B/s", digits)


def format_bytes(value: float, digits: int = 4) -> str:
    """Decimal SI bytes: 8e10 -> '80 GB'."""
    return _si(value, "B", digits)


def format_gib(value: float, digits: int = 4) -> str:
    """Binary bytes, how memory capacities are printed (what ``nvidia-smi`` counts in: MiB):
    85520809984 -> '79.65 GiB'.

    >>> format_gib(81559 * 2**20), format_gib((81559 - 512) * 2**20)
    ('79.65 GiB', '79.15 GiB')
    """
    gib = value / 2**30
    return f"{gib:,.0f} GiB" if abs(gib) >= 10**digits else f"{gib:.{digits}g} GiB"  # 28,920 GiB, never 2.892e+04


def format_seconds(value: float, digits: int = 3) -> str:
    """1.5e-3 -> '1.5 ms'; past 100 s in minutes, past an hour in hours and minutes.

    >>> format_seconds(1.5e-3), format_seconds(150), format_seconds(8850), format_seconds(3 * 86400)
    ('1.5 ms', '2.5 min', '2 h 28 min', '72 h 0 min')
    """
    if value is not None and math.isfinite(value) and value >= 3600:
        minutes = round(value / 60)
        return f"{minutes // 60} h {minutes % 60} min"
    if value is not None and math.isfinite(value) and value >= 100:
        return f"{value / 60:.{digits - 1}g} min"
    return _si(value, "s", digits)


def format_count(value: float, digits: int = 3) -> str:
    """A count or rate (tokens/s, ratios): thousands separated from 100 up, ``digits`` significant digits
    below, so a small non-zero value never reads as 0.

    >>> format_count(12345.6), format_count(2.4321), format_count(0.00123), format_count(0)
    ('12,346', '2.43', '0.00123', '0')
    """
    if value is None or not math.isfinite(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def format_ratio(value: float) -> str:
    """A ratio such as bound/measured: two decimals from 0.1 up, two significant digits below (never '0.00'
    for a non-zero ratio).

    >>> format_ratio(0.4213), format_ratio(12.345), format_ratio(0.0012), format_ratio(0.000987), format_ratio(0)
    ('0.42', '12.35', '0.0012', '0.00099', '0.00')
    """
    if value is None or not math.isfinite(value):
        return str(value)
    if value == 0 or abs(value) >= 0.1:
        return f"{value:.2f}"
    return f"{value:.2g}"


def format_share(value: float) -> str:
    """A fraction as a percentage: whole percents from 1%, two significant digits below (never '0%').

    >>> format_share(0.456), format_share(0.0016), format_share(0)
    ('46%', '0.16%', '0%')
    """
    if value is None or not math.isfinite(value):
        return str(value)
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.0%}"
    return f"{value * 100:.2g}%"


def format_speedup(factor: float) -> str:
    """How much faster (new speed / old speed) in words.

    >>> format_speedup(7.07), format_speedup(0.61), format_speedup(1 / 480), format_speedup(1.0)
    ('7.07x faster', '0.61x as fast', '1/480 as fast', 'as fast')
    """
    if factor is None or not math.isfinite(factor) or factor <= 0:
        return f"x{factor}"
    if factor >= 1.005:
        return f"{format_count(factor)}x faster"
    if factor > 1 / 1.005:
        return "as fast"
    if factor >= 0.5:
        return f"{factor:.2g}x as fast"
    return f"1/{format_count(1 / factor)} as fast"


def scale_for(max_value: float, unit: str) -> tuple[float, str]:
    """Pick a display scale for an axis: (divisor, label) e.g. (1e12, 'TFLOP/s')."""
    for exp, p in ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k")):
        if max_value >= 10.0**exp:
            return 10.0**exp, f"{p}{unit}"
    return 1.0, unit
