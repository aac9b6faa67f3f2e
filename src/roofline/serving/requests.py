"""The requests a simulation serves: lengths fixed or drawn, Poisson or closed-loop arrivals, or a trace file.

``--isl 1024`` is fixed; ``--isl 512:2048:uniform`` draws integers uniformly from 512..2048 (both included);
``--isl 1024:0.5:lognormal`` a log-normal of median 1024 and sigma 0.5 (rounded, at least 1);
``--isl 48,109,152,266,1021:quantiles`` an empirical law given by its quantiles at equal steps of probability
(here the 0, 25, 50, 75 and 100th percentiles): a uniform u picks a point of the piecewise-linear quantile
function, rounded (a data set's lengths summarised by, e.g., its 101 percentiles).  Arrivals:
``rate`` requests/s as a Poisson process (exponential gaps), or a closed loop.  Every draw comes from one
``numpy.random.default_rng(seed)``: the same seed, the same requests.

A trace (CSV with a header, or JSON Lines) holds ``arrival`` (seconds, non-decreasing), ``input`` and
``output`` (integer tokens > 0) per request, checked field by field.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from roofline.core.errors import RooflineError
from roofline.core.fileio import shown
from roofline.core.limits import max_dim, max_requests

DISTRIBUTIONS = ("uniform", "lognormal", "quantiles")
#: Longest request length the simulator holds: it counts tokens in int32 and adds a request's input and output
#: lengths, so each must stay below 2**30 for the sum to fit (2**31 - 1).
INT32_LENGTH = 2**30


def max_length() -> int:
    """The longest ``--isl``/``--osl`` accepted: ``ROOFLINE_MAX_DIM`` (default 10**12) or 2**30, the smaller."""
    return min(max_dim(), INT32_LENGTH)


def _check_top(value: float, option: str, text: str) -> None:
    top = max_length()
    if value > top:
        raise RooflineError(f"{option} {text}: length {value:.6g} exceeds the limit of {top:,} tokens (the "
                            "simulator counts a request's tokens in int32; ROOFLINE_MAX_DIM can lower it)")


@dataclass(frozen=True)
class Lengths:
    """A token-length law: fixed ``a``, uniform integers ``a..b``, log-normal (median ``a``, sigma ``b``), or
    ``quantiles``: the values at probabilities 0, 1/k, ..., 1 (k + 1 of them, non-decreasing; ``a`` and ``b``
    their ends), interpolated linearly between them (:meth:`from_quantiles`)."""

    law: str
    a: float
    b: float = 0.0
    quantiles: tuple[float, ...] = ()

    @classmethod
    def from_quantiles(cls, values: object, option: str = "--isl", text: str | None = None) -> Lengths:
        """The empirical law of these quantiles (two at least, non-decreasing, each >= 1); else one line
        (naming ``text``, the option's value as given, when there is one)."""
        try:
            if isinstance(values, (str, bytes)):
                raise TypeError  # a string is not a sequence of numbers (its characters would be read one by one)
            q = tuple(float(v) for v in values)  # type: ignore[attr-defined]
        except (TypeError, ValueError, OverflowError):
            q = ()
        label = text if text is not None else shown(values)
        if len(q) < 2 or not all(math.isfinite(v) and v >= 1 for v in q) or any(q[i + 1] < q[i] for i in range(len(q) - 1)):
            raise RooflineError(f"{option} {label}: quantiles must be two or more non-decreasing token counts >= 1")
        _check_top(q[-1], option, label)
        return cls("quantiles", q[0], q[-1], q)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.law == "quantiles":
            q = np.asarray(self.quantiles, dtype=float)
            u = rng.random(n) * (len(q) - 1)  # position on the quantile grid: uniform in probability
            return np.rint(np.interp(u, np.arange(len(q)), q)).astype(np.int32)
        if self.law == "fixed":
            return np.full(n, int(self.a), dtype=np.int32)
        if self.law == "uniform":
            return rng.integers(int(self.a), int(self.b) + 1, size=n).astype(np.int32)
        return np.clip(np.rint(rng.lognormal(math.log(self.a), self.b, size=n)), 1, max_length()).astype(np.int32)

    def check(self, option: str) -> Lengths:
        """This law if its lengths are >= 1 and within :func:`max_length` (a law built by hand), else one line."""
        label = shown(f"{self.law} {self.a:g}, {self.b:g}")
        if self.law == "quantiles":
            return Lengths.from_quantiles(self.quantiles, option)
        if not (math.isfinite(self.a) and math.isfinite(self.b) and self.a >= 1):
            raise RooflineError(f"{option} {label}: lengths must be finite token counts >= 1")
        _check_top(self.a if self.law == "lognormal" else max(self.a, self.b), option, label)
        return self

    def describe(self) -> str:
        """The law as ``--isl``/``--osl`` takes it (``1024``, ``512:2048:uniform``, ``1024:0.5:lognormal``,
        ``10,20,40:quantiles``): parsing it gives this law back."""
        if self.law == "fixed":
            return f"{int(self.a)}"
        if self.law == "uniform":
            return f"{int(self.a)}:{int(self.b)}:uniform"
        if self.law == "quantiles":
            return ",".join(f"{q:.17g}" for q in self.quantiles) + ":quantiles"
        return f"{self.a:.17g}:{self.b:.17g}:lognormal"

    @property
    def top(self) -> int:
        """Largest length drawn in practice (log-normal: its 1 - 1e-7 quantile, at most the limit draws are
        clipped to)."""
        if self.law == "lognormal":
            return min(int(math.ceil(self.a * math.exp(5.3 * self.b))), max_length())
        return int(math.ceil(max(self.a, self.b)))


def parse_lengths(text: str | int, option: str) -> Lengths:
    """'1024', '512:2048:uniform', '1024:0.5:lognormal' or 'Q0,Q1,...,Qk:quantiles' -> :class:`Lengths`;
    anything else one line."""
    raw = str(text).strip()
    label = shown(raw)
    parts = raw.split(":")
    if len(parts) == 2 and parts[1] == "quantiles":
        try:
            values = [float(v) for v in parts[0].split(",")]
        except ValueError:
            values = []
        return Lengths.from_quantiles(values, option, label)
    law: Lengths | None = None
    try:
        if len(parts) == 1:
            a = int(parts[0])
            if a > 0:
                law = Lengths("fixed", a)
        elif len(parts) == 3 and parts[2] == "uniform":
            a, b = int(parts[0]), int(parts[1])
            if 0 < a <= b:
                law = Lengths("uniform", a, b)
        elif len(parts) == 3 and parts[2] == "lognormal":
            med, sigma = float(parts[0]), float(parts[1])
            if med >= 1 and 0 < sigma <= 3:
                law = Lengths("lognormal", med, sigma)
    except ValueError:
        pass
    if law is not None:
        # the longest length stated (a log-normal: its median; draws beyond the limit are clipped to it)
        _check_top(law.a if law.law != "uniform" else law.b, option, label)
        return law
    raise RooflineError(f"{option} {label}: give tokens > 0 (1024), LO:HI:uniform with 0 < LO <= HI, "
                        "MEDIAN:SIGMA:lognormal with 0 < SIGMA <= 3, or Q0,Q1,...:quantiles")


def check_count(n: int, option: str = "--requests") -> int:
    top = max_requests()
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise RooflineError(f"{option} must be an integer >= 1, got {n!r}")
    if n > top:
        raise RooflineError(f"{option} {n:,} exceeds the limit of {top:,} (set ROOFLINE_MAX_REQUESTS to raise it)")
    return int(n)


def poisson_arrivals(rng: np.random.Generator, rate: float, n: int) -> np.ndarray:
    """Arrival times (s) of a Poisson process of ``rate`` requests/s, the first at its first gap."""
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
        raise RooflineError(f"--rate must be a number of requests/s > 0, got {rate!r}")
    return np.cumsum(rng.exponential(1.0 / rate, size=n))


def read_trace(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(arrival, input, output) columns of a CSV or JSONL trace, checked field by field (one line each).

    Read by the guarded reader (:func:`roofline.core.fileio.read_bytes`: regular files only, the input size
    limit); a compressed or binary file, a CSV field past the csv module's limit, JSON nested too deeply or a
    number too long are each one line naming the file and the line."""
    from roofline.core import arguments as arg
    from roofline.core.fileio import read_bytes
    from roofline.core.text import shown_path

    arg.path(path, "read_trace", "path")
    where = f"trace {shown_path(path)!r}"
    data = read_bytes(path)
    if data[:2] == b"\x1f\x8b":
        raise RooflineError(f"{where}: a gzip file, not CSV or JSON Lines text (decompress it first)")
    if b"\x00" in data[:1 << 16]:
        raise RooflineError(f"{where}: a binary file (NUL bytes), not CSV or JSON Lines text")
    text = data.decode("utf-8", errors="replace")
    del data
    if Path(path).suffix.lower() in (".jsonl", ".ndjson", ".json"):
        records = _jsonl_records(text, where)
    else:
        records = _csv_records(text, where)
    if not records:
        raise RooflineError(f"{where}: no requests")
    check_count(len(records), f"{where}: requests")
    cols = np.zeros((3, len(records)))
    prev = -math.inf
    for j, (line, rec) in enumerate(records):
        for k, name in enumerate(("arrival", "input", "output")):
            cols[k, j] = _field(rec, name, where, line)
        if cols[0, j] < prev:
            raise RooflineError(f"{where} line {line}: arrival {cols[0, j]:g} is before the previous "
                                f"request's {prev:g} (arrivals must be in order)")
        prev = cols[0, j]
    return cols[0], cols[1].astype(np.int32), cols[2].astype(np.int32)


def _jsonl_records(text: str, where: str) -> list[tuple[int, dict[str, object]]]:
    from roofline.core.fileio import parse_json

    records: list[tuple[int, dict[str, object]]] = []
    top = max_requests()
    for i, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            obj = parse_json(raw, f"{where} line {i}")
            if not isinstance(obj, dict):
                raise RooflineError(f"{where} line {i}: expected an object with arrival, input, output")
            records.append((i, obj))
            if len(records) > top:
                break  # check_count names the limit
    return records


def _csv_records(text: str, where: str) -> list[tuple[int, dict[str, object]]]:
    reader = csv.DictReader(text.splitlines())
    records: list[tuple[int, dict[str, object]]] = []
    top = max_requests()
    try:
        for i, row in enumerate(reader, 2):
            records.append((i, dict(row)))
            if len(records) > top:
                break  # check_count names the limit
    except csv.Error as exc:
        raise RooflineError(f"{where} line {reader.line_num}: not CSV ({exc})") from None
    return records


def _field(rec: dict[str, object], name: str, where: str, line: int) -> float:
    if name not in rec or rec[name] in (None, ""):
        raise RooflineError(f"{where} line {line}: missing field {name!r}")
    raw = rec[name]
    try:
        v = float(raw) if not isinstance(raw, (bool, dict, list)) else math.nan  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer past a float (400 digits)
        v = math.nan
    if name == "arrival":
        if not (math.isfinite(v) and v >= 0):
            raise RooflineError(f"{where} line {line}: arrival {shown(raw)} is not a time in seconds >= 0")
        return v
    if not (math.isfinite(v) and v.is_integer() and v >= 1 and v <= 2**31 - 1):
        raise RooflineError(f"{where} line {line}: {name} {shown(raw)} is not an integer token count >= 1")
    return v


@dataclass(frozen=True)
class Traffic:
    """The requests a run serves, as ``roofline serve`` takes them: ``requests`` of lengths ``isl`` / ``osl``
    (:func:`parse_lengths` forms, or a :class:`Lengths`) arriving as a Poisson process of ``rate`` requests/s or
    from a closed loop of ``concurrency`` clients, drawn with ``seed``; or a ``trace`` file holding them all.

    >>> Traffic(rate=0)
    Traceback (most recent call last):
    ...
    roofline.core.errors.RooflineError: Traffic: rate must be a finite number of requests per second > 0, got int 0
    """

    isl: str | int | Lengths = 1024
    osl: str | int | Lengths = 256
    rate: float | None = None
    concurrency: int | None = None
    requests: int = 1000
    seed: int = 0
    trace: str | None = None

    def __post_init__(self) -> None:
        from roofline.core import arguments as arg

        if self.rate is not None and not arg.number(self.rate, "Traffic", "rate", minimum=None) > 0:
            raise arg.value_error("Traffic", "rate", "a finite number of requests per second > 0", self.rate)
        for name in ("isl", "osl"):  # a length law checked where it is given, named as the caller named it
            law = getattr(self, name)
            said = arg.option_for("Traffic", name) or f"Traffic: {name}"
            if isinstance(law, Lengths):
                law.check(said)
            elif isinstance(law, bool) or not isinstance(law, (str, int)):
                raise arg.type_error("Traffic", name, "a length law (1024, '512:2048:uniform', ...) or a Lengths", law)
            else:
                parse_lengths(law, said)
        arg.optional_int(self.concurrency, "Traffic", "concurrency")
        arg.positive_int(self.requests, "Traffic", "requests")
        arg.positive_int(self.seed, "Traffic", "seed", minimum=0)
        if self.trace is not None:
            arg.path(self.trace, "Traffic", "trace")


@dataclass(frozen=True)
class Requests:
    """The requests drawn (or read): arrival times (s) and lengths per request, in arrival order."""

    arrival: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    concurrency: int | None
    text: str
    #: the length laws drawn from, as --isl / --osl take them; a trace: its file
    isl_law: str = ""
    osl_law: str = ""
    #: the Poisson rate offered (requests/s; None: a closed loop or a trace)
    rate: float | None = None


def make_requests(t: Traffic) -> Requests:
    """The requests of ``t``: a trace, or ``t.requests`` drawn lengths with Poisson ``rate`` or a closed loop."""
    if t.trace is not None:
        if t.rate is not None or t.concurrency is not None:
            raise RooflineError("--trace holds the arrivals: drop --rate and --concurrency")
        a, i, o = read_trace(t.trace)
        return Requests(a, i, o, None, f"trace {t.trace} ({len(i)} requests)", f"trace {t.trace}", f"trace {t.trace}")
    n = check_count(t.requests)
    if (t.rate is None) == (t.concurrency is None):
        raise RooflineError("give --rate R (Poisson arrivals) or --concurrency C (closed loop), or --trace FILE")
    li, lo = (x.check(opt) if isinstance(x, Lengths) else parse_lengths(x, opt)
              for x, opt in ((t.isl, "--isl"), (t.osl, "--osl")))
    rng = np.random.default_rng(t.seed)
    i, o = li.draw(rng, n), lo.draw(rng, n)
    if t.concurrency is not None:
        return Requests(np.zeros(n), i, o, int(t.concurrency), f"{n} requests, closed loop of {t.concurrency}",
                        li.describe(), lo.describe())
    rate = float(t.rate)  # type: ignore[arg-type]
    return Requests(poisson_arrivals(rng, rate, n), i, o, None, f"{n} requests, Poisson {rate:g} req/s (seed "
                    f"{t.seed})", li.describe(), lo.describe(), rate)
