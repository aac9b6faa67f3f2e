import math

import pytest

from roofline.core.errors import RooflineError
from roofline.core.units import (
    format_bandwidth,
    format_bytes,
    format_flops,
    format_seconds,
    parse_bandwidth,
    parse_bytes,
    parse_flops,
    parse_quantity,
)


@pytest.mark.parametrize("text, expected", [
    ("3.35 TB/s", 3.35e12),        # SI tera = 1e12
    ("10GB/s", 10e9),
    ("2 GiB/s", 2 * 2**30),        # IEC gibi = 2^30
    ("1.2e12", 1.2e12),            # plain number
    (5e9, 5e9),
])
def test_parse_bandwidth(text, expected):
    assert parse_bandwidth(text) == pytest.approx(expected)


@pytest.mark.parametrize("text, expected", [
    ("989.4 TFLOP/s", 989.4e12),
    ("100GFLOP/s", 100e9),
    ("100 GFLOPS", 100e9),
    ("1 PFLOP/s", 1e15),
    ("624 TOPS", 624e12),
])
def test_parse_flops(text, expected):
    assert parse_flops(text) == pytest.approx(expected)


def test_parse_bytes_iec_and_si():
    assert parse_bytes("80 GiB") == 80 * 2**30
    assert parse_bytes("80 GB") == 80e9
    assert parse_bytes("512 KiB") == 512 * 1024


def test_seconds():
    assert parse_quantity("2.5ms", "seconds") == pytest.approx(2.5e-3)
    assert parse_quantity("1e-3 s", "seconds") == pytest.approx(1e-3)


@pytest.mark.parametrize("bad, kind", [("fast", "flops"), ("3 TB/s", "flops"), ("10 GFLOP/s", "bandwidth"),
                                        ("1.2.3", "number"), ("12 parsecs", "bytes"), ("3 KiFLOP/s", "flops")])
def test_bad_strings_name_the_accepted_forms(bad, kind):
    with pytest.raises(RooflineError) as e:
        parse_quantity(bad, kind)
    assert "expected" in str(e.value) and "e.g." in str(e.value)


def test_format_round_trips():
    assert format_flops(989.4e12) == "989.4 TFLOP/s"
    assert format_bandwidth(3.35e12) == "3.35 TB/s"
    assert format_bytes(80e9) == "80 GB"
    assert format_seconds(1.5e-3) == "1.5 ms"
    assert parse_flops(format_flops(123.4e9)) == pytest.approx(123.4e9)
    assert math.isclose(parse_bandwidth(format_bandwidth(2.039e12)), 2.039e12)


@pytest.mark.parametrize("bad", ["1e400 GB/s", "1e308 EB/s", 10**400, float("nan"), float("inf"), -math.inf, [1], None])
def test_non_finite_and_non_numbers_are_refused(bad):
    # '1e400 GB/s' overflows float() to inf; a 401-digit int overflows float(): both refused, one line
    with pytest.raises(RooflineError) as e:
        parse_quantity(bad, "bandwidth", field="memory[0].bandwidth")
    assert "memory[0].bandwidth" in str(e.value) and "\n" not in str(e.value)


def test_large_finite_quantities_pass():
    assert parse_quantity("1e300 B/s", "bandwidth") == 1e300
    assert parse_quantity(10**300, "number") == 1e300
