"""Randomizers from text and files: ``NAME:key=value,...`` specs and matrix files.

Used by the command line (``--randomizer``, ``--param``, ``--matrix``) and by pipeline files
(:mod:`dpacct_shuffle.pipeline`), so both read a randomizer the same way:

* :func:`build_randomizer` — the catalog entry ``NAME`` (or an alias of :data:`ALIASES`, e.g.
  ``oue``) called with keyword parameters; ``NAME`` may carry its own as
  ``"krr:domain_size=10,epsilon0=1"``. The names ``epsilon0`` and ``domain`` also reach the
  usual spellings of the entry (:data:`PARAMETER_ALIASES`).
* ``delta0=…`` among the parameters of a pure entry gives
  :func:`~dpacct_shuffle.randomizers.approximate.approximate` of it (the entry leaking with
  probability δ0); ``approximate_ldp``, ``gaussian`` and ``gaussian_vector`` (not catalog entries:
  they are not pure ε0-LDP) are built the same way (:data:`APPROXIMATE_FACTORIES`).
* :func:`read_matrix` — a row-stochastic matrix (rows = inputs, columns = outputs) from a CSV or
  JSON file, for :func:`~dpacct_shuffle.randomizers.from_matrix`; :func:`matrix_file_randomizer`
  analyses it.
* :func:`catalog_entries` — each catalog entry's signature and one-line summary.

Every bad input raises ``ValueError`` (or ``TypeError`` for a wrong type) naming the parameter and
what is allowed there (for an unknown parameter: the keywords the entry takes).
"""

from __future__ import annotations

import csv
import inspect
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dpacct_shuffle.core.json_text import loads_strict
from dpacct_shuffle.randomizers.approximate import approximate, approximate_ldp
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog import ALIASES, CATALOG
from dpacct_shuffle.randomizers.gaussian import gaussian, gaussian_vector
from dpacct_shuffle.randomizers.matrix import from_matrix

#: Randomizers with a spec name that are not pure ε0-LDP catalog entries.
APPROXIMATE_FACTORIES: dict[str, Callable[..., Randomizer]] = {
    "approximate_ldp": approximate_ldp,
    "gaussian": gaussian,
    "gaussian_vector": gaussian_vector,
}
#: The parameter that turns a pure entry into one leaking with that probability.
LEAK_PARAMETER = "delta0"

#: Short parameter names and the factory keywords they stand for, tried in this order.
PARAMETER_ALIASES: dict[str, tuple[str, ...]] = {
    "epsilon0": ("epsilon0", "eps0", "epsilon_0"),
    "domain": ("domain_size", "domain", "d", "k", "num_values"),
}


def catalog_names() -> list[str]:
    """Names of the catalog factories (``CATALOG``, e.g. ``krr``), sorted."""
    return sorted(CATALOG)


def catalog_factory(name: str) -> Callable[..., Randomizer]:
    """The catalog factory called ``name`` or one of its :data:`ALIASES` (e.g. ``oue``)."""
    canonical = ALIASES.get(name, name)
    if canonical in APPROXIMATE_FACTORIES:
        return APPROXIMATE_FACTORIES[canonical]
    if canonical not in CATALOG:
        raise ValueError(f"unknown randomizer {name!r}; available: {', '.join(catalog_names())} "
                         f"(aliases: {', '.join(sorted(ALIASES))}; or give a matrix)")
    return CATALOG[canonical]


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog factory as listed to users.

    Attributes:
      name: the factory's name in ``CATALOG``.
      parameters: its parameters as written in its signature (``"epsilon0: float"``, …).
      summary: the first paragraph of its docstring on one line.
    """

    name: str
    parameters: tuple[str, ...]
    summary: str


def catalog_entries() -> list[CatalogEntry]:
    """Every catalog entry (sorted by name) with its signature and summary."""
    entries = []
    for name in catalog_names():
        factory = CATALOG[name]
        first_paragraph = (inspect.getdoc(factory) or "").split("\n\n")[0]
        entries.append(CatalogEntry(
            name, tuple(str(p) for p in inspect.signature(factory).parameters.values()),
            " ".join(first_paragraph.split())))
    return entries


def factory_keywords(factory: Callable[..., Randomizer]) -> list[str]:
    """The keyword parameters ``factory`` accepts, in signature order."""
    return [p.name for p in inspect.signature(factory).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def required_keywords(factory: Callable[..., Randomizer]) -> list[str]:
    """The keyword parameters of ``factory`` without a default."""
    return [p.name for p in inspect.signature(factory).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def canonical_keyword(given: str, accepted: list[str]) -> str | None:
    """The keyword of ``accepted`` that ``given`` names (itself, or via :data:`PARAMETER_ALIASES`)."""
    if given in accepted:
        return given
    for alias in PARAMETER_ALIASES.get(given, ()):
        if alias in accepted:
            return alias
    return None


def resolve_keywords(name: str, params: Mapping[str, object], *, lenient: bool = False,
                     complete: bool = True) -> dict[str, object]:
    """Map parameter names (including :data:`PARAMETER_ALIASES`) onto the keywords of entry ``name``.

    ``lenient``: parameters the entry does not take are skipped instead of rejected (options shared
    by several entries). ``complete``: require every parameter without a default.
    """
    factory = catalog_factory(name)
    accepted = factory_keywords(factory)
    keywords: dict[str, object] = {}
    for given, value in params.items():
        target = canonical_keyword(given, accepted)
        if target is None:
            if lenient:
                continue
            raise ValueError(f"randomizer {name!r} has no parameter {given!r}; allowed: "
                             f"{', '.join(accepted)}")
        keywords[target] = value
    missing = [key for key in required_keywords(factory) if key not in keywords]
    if missing and complete:
        raise ValueError(f"randomizer {name!r} needs parameter(s) {', '.join(missing)}")
    return keywords


def parse_scalar(text: str) -> object:
    """A parameter value from text: ``true``/``false``, an int, a float, else the string itself."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def parse_assignment(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` -> (``NAME``, :func:`parse_scalar` of ``VALUE``)."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise ValueError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), parse_scalar(value)


def split_spec(spec: str) -> tuple[str, dict[str, object]]:
    """``"krr:domain_size=10,epsilon0=1"`` -> (``"krr"``, {...}); a bare name has no parameters."""
    name, _, rest = spec.partition(":")
    try:
        params = dict(parse_assignment(item) for item in rest.split(",") if item.strip())
    except ValueError as exc:
        raise ValueError(f"randomizer {spec!r}: {exc} (form NAME:key=value,...)") from None
    return name.strip(), params


def build_randomizer(spec: str, params: Mapping[str, object] | None = None, *,
                     lenient: bool = False) -> Randomizer:
    """Catalog entry ``spec`` (``NAME`` or ``NAME:key=value,...``) built with ``params``.

    Parameters written into ``spec`` take precedence over ``params`` and must be keywords of the
    entry even when ``lenient`` (which only skips unknown names in ``params``).
    """
    base, own = split_spec(spec)
    merged = {**(params or {}), **own}
    leak = None
    if LEAK_PARAMETER not in factory_keywords(catalog_factory(base)):
        own.pop(LEAK_PARAMETER, None)
        leak = merged.pop(LEAK_PARAMETER, None)
    resolve_keywords(base, own, complete=False)
    keywords = resolve_keywords(base, merged, lenient=lenient)
    randomizer = catalog_factory(base)(**keywords)
    return randomizer if leak is None else approximate(randomizer, leak)  # type: ignore[arg-type]


def randomizer_factory(spec: str, params: Mapping[str, object] | None = None, *,
                       lenient: bool = False) -> Callable[[float], Randomizer]:
    """ε0 ↦ :func:`build_randomizer` of ``spec`` with ``params`` and that ε0 (for sweeps and
    calibration); the names are checked once up front, at ε0 = 1."""
    base = {k: v for k, v in (params or {}).items() if k != "epsilon0"}
    build_randomizer(spec, {**base, "epsilon0": 1.0}, lenient=lenient)

    def make(epsilon0: float) -> Randomizer:
        return build_randomizer(spec, {**base, "epsilon0": epsilon0}, lenient=lenient)

    return make


def read_matrix(path: str | Path) -> list[list[float]]:
    """Randomizer matrix (rows = inputs, columns = outputs) from a CSV or JSON file.

    CSV: one row per input, comma- or whitespace-separated numbers; blank lines and lines starting
    with ``#`` are skipped. JSON: a list of rows, or an object with a ``"matrix"`` list of rows.
    Row sums and signs are checked by :func:`~dpacct_shuffle.randomizers.from_matrix`.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"matrix file {str(file)!r} is not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start})") from None
    if file.suffix.lower() == ".json" or text.lstrip().startswith(("[", "{")):
        try:
            data = loads_strict(text, f"matrix file {str(file)!r}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"matrix file {str(file)!r} is not valid JSON: {exc}") from None
        if isinstance(data, dict):
            if "matrix" not in data:
                raise ValueError(f"matrix file {str(file)!r}: JSON object needs a 'matrix' key")
            data = data["matrix"]
        if not isinstance(data, list) or not all(isinstance(row, list) for row in data):
            raise ValueError(f"matrix file {str(file)!r}: expected a list of rows of numbers")
        rows = [[_matrix_entry(value, file) for value in row] for row in data]
    else:
        lines = [line for line in text.splitlines()
                 if line.strip() and not line.lstrip().startswith("#")]
        rows = [[_matrix_entry(cell, file) for field in record for cell in field.split()]
                for record in csv.reader(io.StringIO("\n".join(lines)))]
    if not rows:
        raise ValueError(f"matrix file {str(file)!r} contains no rows")
    return rows


def matrix_file_randomizer(path: str | Path) -> Randomizer:
    """:func:`~dpacct_shuffle.randomizers.from_matrix` of the matrix in file ``path``
    (:func:`read_matrix`), named after the file's stem."""
    return from_matrix(read_matrix(path), name=Path(path).stem)


def _matrix_entry(value: object, file: Path) -> float:
    if isinstance(value, bool):
        raise ValueError(f"matrix file {str(file)!r}: entries must be numbers, got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"matrix file {str(file)!r}: entries must be numbers, got {value!r}") from None


__all__ = [
    "APPROXIMATE_FACTORIES",
    "LEAK_PARAMETER",
    "PARAMETER_ALIASES",
    "CatalogEntry",
    "build_randomizer",
    "canonical_keyword",
    "catalog_entries",
    "catalog_factory",
    "catalog_names",
    "factory_keywords",
    "parse_assignment",
    "matrix_file_randomizer",
    "parse_scalar",
    "read_matrix",
    "randomizer_factory",
    "required_keywords",
    "resolve_keywords",
    "split_spec",
]
