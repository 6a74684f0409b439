"""Every value recorded in ``tests/data/golden_values.json`` is reproduced to the last bit.

The records pin the numbers of the core, the catalog (upper and lower ends), the closed forms and
the lemmas; see ``tests/data/make_golden_values.py`` for how and when the file is regenerated.

The last bits also depend on the platform: the C library's ``exp``/``log`` and the SIMD loops numpy
picks for the processor round differently, and bisections and sums carry those differences a few
units in the last place further. On the platform the file was recorded on
(``golden_values_platform.json``) every value must be identical; elsewhere each must agree to a
relative 1e-12, far below any change of the mathematics (the smallest value a change of a bound
has moved so far moved by 1e-4 relative).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_golden_values  # noqa: E402

RECORDS = json.loads((DATA / "golden_values.json").read_text(encoding="utf-8"))
RECORDED_PLATFORM = json.loads((DATA / "golden_values_platform.json").read_text(encoding="utf-8"))
SAME_PLATFORM = make_golden_values.platform_fingerprint() == RECORDED_PLATFORM
CROSS_PLATFORM_RTOL = 1e-12


def test_the_file_records_the_generators_calls() -> None:
    assert [[label, call] for label, call, _ in RECORDS] == [
        list(pair) for pair in make_golden_values.calls()]
    assert len(RECORDS) >= 250


def _agree(found: str, recorded: str) -> bool:
    if SAME_PLATFORM:
        return found == recorded
    a, b = float.fromhex(found), float.fromhex(recorded)
    return a == b or math.isclose(a, b, rel_tol=CROSS_PLATFORM_RTOL, abs_tol=0.0)


@pytest.mark.parametrize("label, call, value", RECORDS, ids=[call for _, call, _ in RECORDS])
def test_value_is_reproduced_bit_for_bit(label: str, call: str, value: object) -> None:
    found = make_golden_values.evaluate(call)
    if isinstance(value, list):
        assert isinstance(found, list) and len(found) == len(value), label
        assert all(_agree(f, v) for f, v in zip(found, value)), (label, found, value)
    else:
        assert isinstance(found, str) and _agree(found, value), (label, found, value)

