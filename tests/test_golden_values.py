"""Every value recorded in ``tests/data/golden_values.json`` is reproduced to the last bit.

The records pin the numbers of the core, the catalog (upper and lower ends), the closed forms and
the lemmas; see ``tests/data/make_golden_values.py`` for how and when the file is regenerated.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_golden_values  # noqa: E402

RECORDS = json.loads((DATA / "golden_values.json").read_text(encoding="utf-8"))


def test_the_file_records_the_generators_calls() -> None:
    assert [[label, call] for label, call, _ in RECORDS] == [
        list(pair) for pair in make_golden_values.calls()]
    assert len(RECORDS) >= 250


@pytest.mark.parametrize("label, call, value", RECORDS, ids=[call for _, call, _ in RECORDS])
def test_value_is_reproduced_bit_for_bit(label: str, call: str, value: object) -> None:
    assert make_golden_values.evaluate(call) == value, label
