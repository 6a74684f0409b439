"""Randomizers from text and files: ``NAME:key=value,...`` specs and matrix files.

Used by the command line (``--randomizer``, ``--param``, ``--matrix``) and by pipeline files
(:mod:`dpacct_shuffle.pipeline`); the names, kinds and error messages of the parameters are those
of the one randomizer schema, :mod:`dpacct_shuffle.randomizers.schema`:

* :func:`build_randomizer` — the named randomizer ``NAME`` (a catalog entry, an alias such as
  ``oue`` of :data:`~dpacct_shuffle.randomizers.catalog.ALIASES`, or ``approximate_ldp``,
  ``gaussian``, ``gaussian_vector``) called with keyword parameters; ``NAME`` may carry its own
  as ``"krr:domain_size=10,epsilon0=1"``. The names ``epsilon0`` and ``domain`` also reach the usual spellings of the entry
  (:data:`PARAMETER_ALIASES`); ``delta0=…`` among the parameters of a pure entry gives
  :func:`~dpacct_shuffle.randomizers.approximate.approximate` of it (the entry leaking with
  probability δ0). :func:`describe_spec` stops before building, at the checked description.
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
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog import CATALOG
from dpacct_shuffle.randomizers.matrix import from_matrix
from dpacct_shuffle.randomizers.schema import (APPROXIMATE_FACTORIES, LEAK_PARAMETER,
                                              PARAMETER_ALIASES, RandomizerDescription,
                                              entry_schema, matrix_rows, parse_scalar,
                                              spellings)

def catalog_names() -> list[str]:
    """Names of the catalog factories (``CATALOG``, e.g. ``krr``), sorted."""
    return sorted(CATALOG)


def catalog_factory(name: str) -> Callable[..., Randomizer]:
    """The factory of the named randomizer ``name`` (or an alias such as ``oue``,
    :data:`~dpacct_shuffle.randomizers.catalog.ALIASES`)."""
    return entry_schema(name).factory


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
        factory = entry_schema(name).factory
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
    """The keyword of ``accepted`` that ``given`` names (itself, or another name of its
    :data:`PARAMETER_ALIASES` group)."""
    for candidate in spellings(given):
        if candidate in accepted:
            return candidate
    return None


def resolve_keywords(name: str, params: Mapping[str, object], *, lenient: bool = False,
                     complete: bool = True) -> dict[str, object]:
    """``params`` by the canonical keywords of entry ``name``, each checked
    (:meth:`~dpacct_shuffle.randomizers.schema.EntrySchema.arguments`)."""
    return dict(entry_schema(name).arguments(params, lenient=lenient, complete=complete))


def parse_assignment(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` -> (``NAME``, :func:`parse_scalar` of ``VALUE``)."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise ValueError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), parse_scalar(value)


def split_spec(spec: str) -> tuple[str, dict[str, object]]:
    """``"krr:domain_size=10,epsilon0=1"`` -> (``"krr"``, {...}); a bare name has no parameters."""
    name, _, rest = spec.partition(":")
    params: dict[str, object] = {}
    for item in rest.split(","):
        if not item.strip():
            continue
        try:
            key, value = parse_assignment(item)
        except ValueError as exc:
            raise ValueError(f"randomizer {spec!r}: {exc} (form NAME:key=value,...)") from None
        if key in params:
            raise ValueError(f"randomizer {spec!r}: parameter {key!r} is given twice")
        params[key] = value
    return name.strip(), params


def describe_spec(spec: str, params: Mapping[str, object] | None = None, *,
                  lenient: bool = False) -> RandomizerDescription:
    """The :class:`~dpacct_shuffle.randomizers.schema.RandomizerDescription` of ``spec``
    (``NAME`` or ``NAME:key=value,...``) with ``params``.

    Parameters written into ``spec`` must be parameters of the entry even when ``lenient``.
    ``lenient``: ``params`` are options shared by several entries — names the entry does not take
    are skipped, and a parameter written into ``spec`` takes precedence over ``params``. Otherwise
    a parameter given both ways is a ValueError (one of the two values would be ignored).
    """
    base, own = split_spec(spec)
    entry = entry_schema(base)
    written = entry.arguments(own, complete=False)
    shared = entry.arguments(params or {}, lenient=lenient, complete=False)
    repeated = [name for name in written if name in shared]
    if repeated and not lenient:
        raise ValueError(f"randomizer {spec!r} sets {', '.join(repeated)}, which the other "
                         "parameters also give: give each setting once")
    return entry.describe({**shared, **written})


def build_randomizer(spec: str, params: Mapping[str, object] | None = None, *,
                     lenient: bool = False) -> Randomizer:
    """Catalog entry ``spec`` (``NAME`` or ``NAME:key=value,...``) built with ``params``
    (:func:`describe_spec`)."""
    return describe_spec(spec, params, lenient=lenient).build()


def randomizer_factory(spec: str, params: Mapping[str, object] | None = None, *,
                       lenient: bool = False) -> Callable[[float], Randomizer]:
    """ε0 ↦ :func:`build_randomizer` of ``spec`` with ``params`` and that ε0 (for sweeps and
    calibration); the names are checked once up front, at ε0 = 1. ValueError if the entry has no
    ε0 or ``spec`` fixes it (the function would not depend on its argument)."""
    name, own = split_spec(spec)
    entry = entry_schema(name)
    varied = entry.parameter("epsilon0")
    if varied is None:
        raise ValueError(f"randomizer {entry.name!r} has no parameter epsilon0 to vary "
                         f"(its parameters: {', '.join(entry.keywords)})")
    if varied.name in entry.arguments(own, complete=False):
        raise ValueError(f"randomizer {spec!r} fixes {varied.name}: leave it out of the spec to "
                         "vary it")
    base = {k: v for k, v in (params or {}).items() if k != "epsilon0"}
    build_randomizer(spec, {**base, "epsilon0": 1.0}, lenient=lenient)

    def make(epsilon0: float) -> Randomizer:
        return build_randomizer(spec, {**base, "epsilon0": epsilon0}, lenient=lenient)

    return make


def read_matrix(path: str | Path) -> list[list[float]]:
    """Randomizer matrix (rows = inputs, columns = outputs) from a CSV or JSON file.

    CSV: one row per input, comma- or whitespace-separated numbers; blank lines and lines starting
    with ``#`` are skipped. JSON: a list of rows, or an object with a ``"matrix"`` list of rows.
    The form is checked by :func:`~dpacct_shuffle.randomizers.schema.matrix_rows` (as in the JSON
    form and pipeline files), row sums and signs by :func:`~dpacct_shuffle.randomizers.from_matrix`.
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
    else:
        lines = [line for line in text.splitlines()
                 if line.strip() and not line.lstrip().startswith("#")]
        data = [[parse_scalar(cell) for field in record for cell in field.split()]
                for record in csv.reader(io.StringIO("\n".join(lines)))]
    try:
        return matrix_rows(data)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"matrix file {str(file)!r}: {exc}") from None


def matrix_file_randomizer(path: str | Path) -> Randomizer:
    """:func:`~dpacct_shuffle.randomizers.from_matrix` of the matrix in file ``path``
    (:func:`read_matrix`), named after the file's stem."""
    return from_matrix(read_matrix(path), name=Path(path).stem)


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
    "describe_spec",
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
