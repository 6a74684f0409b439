"""The one schema of named randomizers: what every front-end (``NAME:key=value`` spec strings,
the JSON form, pipeline files, the command line's ``--randomizer``/``--epsilon0``/``--domain``/
``--param``) converts its input into, validated in one place with one wording.

* :class:`EntrySchema` — a named randomizer (a catalog entry, or ``approximate_ldp``,
  ``gaussian``, ``gaussian_vector``) and its parameters, read from the factory's signature: one
  :class:`ParameterSchema` per keyword (its kind from the type hint: ``float`` → real, ``int`` →
  integer, ``bool`` → boolean, ``X | None`` → also ``None``; required when it has no default), plus
  ``delta0`` for the pure ε0-LDP catalog entries (the entry leaking with probability δ0,
  :func:`~dpacct_shuffle.randomizers.approximate.approximate`).
* :func:`describe` — name and parameters (any spelling of :data:`PARAMETER_ALIASES`: ``domain``,
  ``d``, ``k``, ``num_values`` for ``domain_size``; ``eps0``, ``epsilon_0`` for ``epsilon0``) →
  :class:`RandomizerDescription`: the entry's canonical name and its checked keyword arguments.
  :meth:`RandomizerDescription.build` calls the factory, whose own checks state each parameter's
  allowed range (``epsilon0 must be in [1e-06, 500.0], got -1.0``) — the one place of each range.

Every problem is one ``ValueError`` (``TypeError`` for a value of the wrong kind) whose message
names the parameter and what is allowed:

* unknown name: ``unknown randomizer 'krrr'; available: ... (aliases: oue; or give a matrix)``;
* unknown parameter: ``randomizer 'krr' has no parameter 'foo' (allowed: epsilon0, domain_size,
  delta0)``;
* missing parameter: ``randomizer 'krr' needs parameter(s) domain_size``;
* one parameter given twice (two spellings): ``randomizer 'krr': parameters 'domain' and
  'domain_size' both give domain_size``;
* wrong kind: ``domain_size must be an integer, got 2.5``, ``epsilon0 must be a finite real
  number, got 'abc'``, ``sampled_bits must be true or false, got 1``.

Text (spec strings, ``--param``) becomes a value with :func:`parse_scalar` before these checks, so
``"krr:epsilon0=abc"`` and ``{"epsilon0": "abc"}`` fail with the same message.

A randomizer given as a matrix (the JSON form, a matrix file, a pipeline file) has its form
checked by :func:`matrix_rows` (``matrix[0][1] must be a finite real number, got 'x'``) before
:func:`~dpacct_shuffle.randomizers.from_matrix` checks its rows.
"""

from __future__ import annotations

import inspect
import math
import numbers
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Union, cast, get_args, get_origin, get_type_hints

from dpacct_shuffle.randomizers.approximate import approximate, approximate_ldp
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog import ALIASES, CATALOG
from dpacct_shuffle.randomizers.gaussian import gaussian, gaussian_vector

#: Named randomizers that are not pure ε0-LDP catalog entries (no ``delta0`` of their own).
APPROXIMATE_FACTORIES: dict[str, Callable[..., Randomizer]] = {
    "approximate_ldp": approximate_ldp,
    "gaussian": gaussian,
    "gaussian_vector": gaussian_vector,
}
#: The parameter that turns a pure entry into one leaking with that probability.
LEAK_PARAMETER = "delta0"
#: Short parameter names and the factory keywords they stand for, tried in this order; any name
#: of a group reaches the entry's keyword of that group (:func:`spellings`).
PARAMETER_ALIASES: dict[str, tuple[str, ...]] = {
    "epsilon0": ("epsilon0", "eps0", "epsilon_0"),
    "domain": ("domain_size", "domain", "d", "k", "num_values"),
}

ParameterKind = Literal["real", "integer", "boolean"]
ParameterValue = Union[float, int, bool, None]
_KINDS: dict[object, ParameterKind] = {float: "real", int: "integer", bool: "boolean"}
_ALLOWED = {"real": "a finite real number", "integer": "an integer", "boolean": "true or false"}
_REQUIRED = inspect.Parameter.empty


def shown(value: object) -> str:
    """``value`` as quoted in a message: its repr (cut at 40 characters; a huge integer by its
    number of bits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_scalar(text: str) -> object:
    """A parameter value from text: ``true``/``false``, ``none``/``null`` (None), an int, a float,
    else the string itself."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def spellings(given: str) -> tuple[str, ...]:
    """``given``, then the other names of its :data:`PARAMETER_ALIASES` group in order
    (``"eps0"`` -> ``("eps0", "epsilon0", "epsilon_0")``)."""
    for short, names in PARAMETER_ALIASES.items():
        group = dict.fromkeys((short, *names))
        if given in group:
            return (given, *[name for name in group if name != given])
    return (given,)


@dataclass(frozen=True)
class ParameterSchema:
    """One parameter of a named randomizer.

    Attributes:
      name: its keyword.
      kind: ``"real"`` (a finite float; integers accepted), ``"integer"`` (integral floats such as
        ``1e6`` accepted) or ``"boolean"``.
      nullable: ``None`` is allowed (the factory then picks its default rule).
      default: the value when not given, or ``inspect.Parameter.empty`` if required.
    """

    name: str
    kind: ParameterKind
    nullable: bool = False
    default: object = _REQUIRED

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def check(self, value: object) -> ParameterValue:
        """``value`` as this parameter's kind, or the TypeError/ValueError of the module
        docstring. Ranges are the factory's (:meth:`RandomizerDescription.build`)."""
        if value is None and self.nullable:
            return None
        if self.kind == "real":
            return self.real(value)
        if self.kind == "integer":
            if isinstance(value, numbers.Integral) and not isinstance(value, bool):
                return int(value)
            if (isinstance(value, numbers.Real) and not isinstance(value, bool)
                    and math.isfinite(float(value)) and float(value).is_integer()):
                return int(float(value))
        elif isinstance(value, bool):
            return value
        raise TypeError(self.problem(value))

    def real(self, value: object) -> float:
        """``value`` as a finite float (the check of a ``"real"`` parameter)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(self.problem(value))
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range
            number = math.inf
        if not math.isfinite(number):
            raise ValueError(self.problem(value))
        return number

    def problem(self, value: object) -> str:
        """The message for a ``value`` not of this parameter's kind."""
        allowed = _ALLOWED[self.kind] + (" or None (null)" if self.nullable else "")
        return f"{self.name} must be {allowed}, got {shown(value)}"


def _parameter(parameter: inspect.Parameter, hint: object) -> ParameterSchema:
    """The schema of one factory parameter from its type hint (``float``, ``int``, ``bool``, or
    one of them ``| None``)."""
    options = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
    kinds = [_KINDS[option] for option in options if option is not type(None)]
    if len(kinds) != 1:
        raise TypeError(f"parameter {parameter.name} of a named randomizer must be a float, int "
                        f"or bool (optionally | None), got {hint!r}")
    return ParameterSchema(parameter.name, kinds[0], type(None) in options, parameter.default)


@dataclass(frozen=True)
class EntrySchema:
    """A named randomizer: its factory and the parameters read from the factory's signature.

    Attributes:
      name: the canonical name (``CATALOG`` key or :data:`APPROXIMATE_FACTORIES` key).
      factory: the function building it.
      parameters: one :class:`ParameterSchema` per keyword of ``factory``, in signature order,
        then ``delta0`` if ``leaks``.
      leaks: a pure ε0-LDP catalog entry: ``delta0`` gives it leaking with that probability.
    """

    name: str
    factory: Callable[..., Randomizer]
    parameters: tuple[ParameterSchema, ...]
    leaks: bool

    @classmethod
    def of(cls, name: str, factory: Callable[..., Randomizer], *, leaks: bool) -> EntrySchema:
        hints = get_type_hints(factory)
        parameters = [_parameter(parameter, hints[parameter.name])
                      for parameter in inspect.signature(factory).parameters.values()
                      if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)]
        if leaks:
            parameters.append(ParameterSchema(LEAK_PARAMETER, "real", True, None))
        return cls(name, factory, tuple(parameters), leaks)

    @property
    def keywords(self) -> list[str]:
        """The parameter names, in order (``delta0`` last where it applies)."""
        return [parameter.name for parameter in self.parameters]

    def parameter(self, given: object) -> ParameterSchema | None:
        """The parameter that ``given`` names (itself, or another name of its
        :data:`PARAMETER_ALIASES` group)."""
        by_name = {parameter.name: parameter for parameter in self.parameters}
        if not isinstance(given, str):
            return None
        for candidate in spellings(given):
            if candidate in by_name:
                return by_name[candidate]
        return None

    def arguments(self, params: Mapping[str, object], *, lenient: bool = False,
                  complete: bool = True) -> dict[str, ParameterValue]:
        """``params`` by canonical keyword, each checked (:meth:`ParameterSchema.check`).

        ``lenient``: parameters the entry does not take are skipped instead of rejected (options
        shared by several entries). ``complete``: require every parameter without a default.
        """
        arguments: dict[str, ParameterValue] = {}
        given_as: dict[str, object] = {}
        for given, value in params.items():
            parameter = self.parameter(given)
            if parameter is None:
                if lenient:
                    continue
                raise ValueError(f"randomizer {self.name!r} has no parameter {shown(given)} "
                                 f"(allowed: {', '.join(self.keywords)})")
            if parameter.name in arguments:
                raise ValueError(f"randomizer {self.name!r}: parameters {shown(given_as[parameter.name])} "
                                 f"and {shown(given)} both give {parameter.name}")
            arguments[parameter.name] = parameter.check(value)
            given_as[parameter.name] = given
        missing = [p.name for p in self.parameters if p.required and p.name not in arguments]
        if missing and complete:
            raise ValueError(f"randomizer {self.name!r} needs parameter(s) {', '.join(missing)}")
        return arguments

    def describe(self, params: Mapping[str, object], *, lenient: bool = False
                 ) -> RandomizerDescription:
        """The :class:`RandomizerDescription` of this entry with ``params``."""
        arguments = self.arguments(params, lenient=lenient)
        return RandomizerDescription(self.name, tuple(
            (p.name, arguments[p.name]) for p in self.parameters if p.name in arguments))


@dataclass(frozen=True)
class RandomizerDescription:
    """A named randomizer as data: the canonical entry name and its checked keyword arguments
    (in signature order; parameters left at their default are absent). Equal descriptions build
    equal randomizers.

    Attributes:
      name: canonical name (a key of :data:`SCHEMAS`).
      arguments: (keyword, value) pairs, ``delta0`` included when given.
    """

    name: str
    arguments: tuple[tuple[str, ParameterValue], ...]

    def build(self) -> Randomizer:
        """The randomizer: the entry's factory called with the arguments (its checks state the
        ranges), and :func:`~dpacct_shuffle.randomizers.approximate.approximate` of it when
        ``delta0`` is given."""
        keywords = dict(self.arguments)
        leak = keywords.pop(LEAK_PARAMETER, None) if SCHEMAS[self.name].leaks else None
        randomizer = SCHEMAS[self.name].factory(**keywords)
        return randomizer if leak is None else approximate(randomizer, leak)


def matrix_rows(value: object, name: str = "matrix") -> list[list[float]]:
    """A randomizer matrix as given (rows = inputs, columns = outputs): a non-empty list of rows
    of equal length, each entry a finite real number (booleans rejected) — the one check of a
    matrix's form for the JSON form, matrix files and pipeline files; row sums and signs are then
    checked by :func:`~dpacct_shuffle.randomizers.from_matrix`."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of rows (inputs) of numbers, got {shown(value)}")
    if not value:
        raise ValueError(f"{name} must be a non-empty list of rows (inputs) of numbers, got []")
    rows: list[list[float]] = []
    for i, row in enumerate(value):
        if not isinstance(row, (list, tuple)):
            raise TypeError(f"{name}[{i}] must be a list of numbers, got {shown(row)}")
        if len(row) != len(value[0]):
            raise ValueError(f"{name}[{i}] has {len(row)} entries and {name}[0] has "
                             f"{len(value[0])}: every row has one entry per output")
        rows.append([ParameterSchema(f"{name}[{i}][{j}]", "real").real(entry)
                     for j, entry in enumerate(row)])
    return rows


#: The schema of every named randomizer, by canonical name.
SCHEMAS: dict[str, EntrySchema] = {
    **{name: EntrySchema.of(name, cast(Callable[..., Randomizer], factory), leaks=True)
       for name, factory in CATALOG.items()},
    **{name: EntrySchema.of(name, factory, leaks=False)
       for name, factory in APPROXIMATE_FACTORIES.items()},
}


def entry_names() -> list[str]:
    """Canonical names of every named randomizer, sorted."""
    return sorted(SCHEMAS)


def entry_schema(name: object) -> EntrySchema:
    """The :class:`EntrySchema` called ``name`` or one of its :data:`ALIASES` (e.g. ``oue``)."""
    canonical = ALIASES.get(name, name) if isinstance(name, str) else name
    if not isinstance(canonical, str) or canonical not in SCHEMAS:
        raise ValueError(f"unknown randomizer {shown(name)}; available: {', '.join(entry_names())} "
                         f"(aliases: {', '.join(sorted(ALIASES))}; or give a matrix)")
    return SCHEMAS[canonical]


def describe(name: object, params: Mapping[str, object], *, lenient: bool = False
             ) -> RandomizerDescription:
    """Entry ``name`` with ``params`` as a checked :class:`RandomizerDescription` (errors: module
    docstring)."""
    return entry_schema(name).describe(params, lenient=lenient)


__all__ = [
    "APPROXIMATE_FACTORIES",
    "LEAK_PARAMETER",
    "PARAMETER_ALIASES",
    "SCHEMAS",
    "EntrySchema",
    "ParameterKind",
    "ParameterSchema",
    "ParameterValue",
    "RandomizerDescription",
    "describe",
    "entry_names",
    "entry_schema",
    "matrix_rows",
    "parse_scalar",
    "shown",
    "spellings",
]
