"""Loading a pipeline: reading a JSON or TOML file (repeated keys rejected) and validating it into a
:class:`~dpacct_shuffle.pipeline.Pipeline`, every failure one ``ValueError`` ``PATH: problem``."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dpacct_shuffle.core.json_text import MAX_JSON_DEPTH, check_json_depth, loads_strict
from dpacct_shuffle.pipeline.fields import _shown
from dpacct_shuffle.pipeline.randomizer_models import RANDOMIZER_KEYS
from dpacct_shuffle.pipeline.steps import _STEP_MODELS, Pipeline


_STEP_KEYS = frozenset(key for model in _STEP_MODELS.values() for key in model.model_fields)
_RANDOMIZER_KEYS = RANDOMIZER_KEYS


def _path(loc: tuple[Any, ...]) -> str:
    """``('steps', 2, 'step:shuffle', 'randomizer', 'randomizer:krr')`` -> ``steps[2].randomizer``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif isinstance(part, str) and not part.startswith(("step:", "randomizer:")):
            text += f".{part}" if text else part
    return text


def _untagged_message(kind: str, given: object, message: str) -> str:
    """Why a step or randomizer table matched no model: its ``type``/``name`` is missing or
    unknown; unknown keys in it are named (a misspelled ``type`` or ``name`` itself, typically)."""
    key, known = ("type", _STEP_KEYS) if kind == "step_type" else ("name", _RANDOMIZER_KEYS)
    if not isinstance(given, Mapping):
        return f"got {_shown(given)}: {message}"
    if key in given:
        return f"got {key} = {_shown(given[key])}: {message}"
    unknown = [k for k in given if k not in known]
    if unknown:
        return f"unknown key {_shown(unknown[0])} and no {key!r}: {message}"
    return f"{key!r} is missing: {message}"


def _one_line(error: ValidationError) -> str:
    """The first error of ``error`` as ``PATH: problem`` (and how many more there are)."""
    errors = error.errors(include_url=False)
    first = errors[0]
    kind, message = first["type"], first["msg"]
    if kind == "missing":
        message = "required key is missing"
    elif kind == "extra_forbidden":
        message = "unknown key"
    elif kind in ("step_type", "randomizer"):
        message = _untagged_message(kind, first["input"], message)
    elif kind not in ("number", "integer", "unknown_key", "conflict", "invalid", "empty",
                      "target"):
        message = f"{message}, got {_shown(first['input'])}"
    where = _path(tuple(first["loc"]))
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{where or 'pipeline'}: {message}{more}"


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {key!r} appears twice in one object")
        result[key] = value
    return result


def _toml_data(file: Path, text: str) -> object:
    """The parsed TOML ``text`` of ``file`` (Python >= 3.11: ``tomllib``)."""
    if sys.version_info < (3, 11):
        raise ImportError("TOML pipelines need Python >= 3.11 (tomllib); use a JSON file")
    else:
        import tomllib

        try:
            return check_json_depth(str(file), tomllib.loads(text))
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{file}: not valid TOML: {exc}") from None
        except RecursionError:
            raise ValueError(f"{file}: nests arrays/tables more than {MAX_JSON_DEPTH} levels "
                             "deep") from None


def read_pipeline_file(path: str | Path) -> dict[str, Any]:
    """The raw contents of a pipeline file: TOML (``.toml``) or JSON (any other suffix)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if file.suffix.lower() == ".toml":
        data = _toml_data(file, text)
    else:
        try:
            data = loads_strict(text, str(file), object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{file}: not valid JSON: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{file}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{file}: the top level must be an object/table")
    return data


def load_pipeline(source: str | Path | Mapping[str, Any], *, base_dir: str | Path | None = None,
                  overrides: Mapping[str, Any] | None = None) -> Pipeline:
    """Validate a pipeline given as a file path (JSON or TOML) or as a dict.

    ``base_dir`` resolves ``matrix_file`` entries (default: the pipeline file's directory, or the
    current directory for a dict). ``overrides`` replace top-level keys before validation (the
    command line's ``--delta``/``--epsilon``). Raises ``ValueError`` with one line
    ``[FILE: ]PATH: problem`` on any invalid input.
    """
    prefix = ""
    if isinstance(source, Mapping):
        data = dict(check_json_depth("pipeline", source))  # type: ignore[call-overload]
        directory = Path(base_dir) if base_dir is not None else Path(".")
    elif isinstance(source, (str, Path)):
        data = read_pipeline_file(source)
        prefix = f"{source}: "
        directory = Path(base_dir) if base_dir is not None else Path(source).parent
    else:
        raise TypeError(f"source must be a file path or a mapping, got {type(source).__name__}")
    data.update(overrides or {})
    try:
        return Pipeline.model_validate(data, context={"base_dir": directory})
    except ValidationError as exc:
        raise ValueError(prefix + _one_line(exc)) from None
