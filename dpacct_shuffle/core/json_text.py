"""Strict JSON text for every decoder of the package (randomizers, events, matrix and pipeline
files, saved states): a ValueError naming what was read for invalid JSON, for NaN and the
infinities (not JSON, and never a valid parameter), and for nesting deeper than
``MAX_JSON_DEPTH`` levels (the decoders walk the structure recursively; Python's own parser
raises RecursionError from about a thousand levels)."""

from __future__ import annotations

import json
from typing import Any, Callable

#: deepest nesting of lists/objects accepted (the package's own forms use fewer than 20 levels)
MAX_JSON_DEPTH = 100


def _reject_constant(name: str) -> Callable[[str], Any]:
    def reject(constant: str) -> Any:
        raise ValueError(f"{name} must not contain {constant} (NaN and infinities are not JSON "
                         "numbers)")
    return reject


def json_depth(data: object) -> int:
    """Nesting depth of parsed JSON (a scalar is 0, ``[]`` is 1), without recursion; tuples
    count as lists (the Python forms handed to the ``*_from_dict`` decoders and saved states)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, (list, tuple)):
            children = list(item)
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_json_depth(name: str, data: object) -> object:
    """``data`` unchanged, or ValueError if it nests deeper than ``MAX_JSON_DEPTH``."""
    if json_depth(data) > MAX_JSON_DEPTH:
        raise ValueError(f"{name} nests lists/objects more than {MAX_JSON_DEPTH} levels deep")
    return data


def loads_strict(text: object, name: str, **options: Any) -> Any:
    """``json.loads(text)`` with the checks of the module docstring; ``options`` are passed on
    (e.g. ``object_pairs_hook``). Errors: TypeError if ``text`` is not str/bytes, ValueError
    (json.JSONDecodeError is one) naming ``name`` otherwise."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"{name} must be JSON text (str or bytes), got {type(text).__name__}")
    try:
        data = json.loads(text, parse_constant=_reject_constant(name), **options)
    except RecursionError:
        raise ValueError(f"{name} nests lists/objects more than {MAX_JSON_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:  # the same type, with what was read named
        raise json.JSONDecodeError(f"{name} is not valid JSON: {exc.msg}", exc.doc, exc.pos) from None
    return check_json_depth(name, data)


__all__ = ["MAX_JSON_DEPTH", "check_json_depth", "json_depth", "loads_strict"]
