"""Pipeline files: a strict schema for privacy pipelines and their accounting.

A pipeline (JSON or TOML file, or a dict) lists the steps one user takes part in — shuffle rounds,
parallel rounds, local reports, DP-SGD steps, Gaussian releases — and a target ``delta`` (report ε)
and/or ``epsilon`` (report δ). :func:`load_pipeline` validates it into a :class:`Pipeline`
(pydantic v2 models), :meth:`Pipeline.event` gives the dp-accounting ``ComposedDpEvent`` and
:func:`account_pipeline` composes it with
:class:`~dpacct_shuffle.accountants.ShufflePLDAccountant` (replace-one neighbours), step by step
and in total.

Strictness (the schema reference with every key and range is ``docs/pipelines.md``):

* an unknown key at any level is rejected, naming the key, its path (``steps[2].randomizer``) and
  the keys allowed there — a misspelled ``count`` would otherwise be silently ignored and the
  pipeline under-counted;
* conflicting keys are rejected (``steps`` and ``count`` on a ``dpsgd`` step; ``matrix`` and
  ``matrix_file``; a parameter given under two names);
* every number is checked against its range with the parameter named: NaN, ±inf, booleans used as
  numbers, non-integral counts and integers beyond the documented maxima are errors;
* JSON objects with a repeated key are rejected (the JSON parser would keep the last one).

Every failure is one ``ValueError`` with a one-line message ``PATH: problem``.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union, get_type_hints

from dp_accounting import dp_event
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    PrivateAttr,
    Tag,
    ValidationError,
    ValidationInfo,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from dpacct_shuffle.events import LDPCompositionEvent, ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.progress import ProgressOption, ProgressReporter
from dpacct_shuffle.randomizers.approximate import approximate
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog import ALIASES, CATALOG
from dpacct_shuffle.randomizers.matrix import from_matrix
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.randomizers.spec import (APPROXIMATE_FACTORIES, LEAK_PARAMETER,
                                            PARAMETER_ALIASES, canonical_keyword, catalog_factory,
                                            factory_keywords, read_matrix, split_spec)

#: Largest number of users of a step (and of a parallel group).
MAX_USERS = 10**15
#: Largest ``count`` of a step and ``steps`` of a ``dpsgd`` step: the support of a k-fold composed
#: privacy-loss distribution grows with k (a composition that still does not fit in memory is
#: reported as a ValueError, never a MemoryError).
MAX_COUNT = 10**6
#: Largest integer parameter of a catalog entry (domain sizes, bins, ...).
MAX_INTEGER_PARAMETER = 10**15
#: Range of ``value_discretization_interval`` (the PLD grid; finer grids need more memory).
MIN_DISCRETIZATION, MAX_DISCRETIZATION = 1e-6, 1.0
STEP_TYPES = ("shuffle", "personalized_shuffle", "parallel", "ldp", "dpsgd", "gaussian")


# ---------------------------------------------------------------------------------------------
# numbers: one validator per kind, messages state the allowed range
# ---------------------------------------------------------------------------------------------


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _real_validator(low: float, high: float, low_open: bool, high_open: bool
                    ) -> Callable[[object], float]:
    left, right = "(" if low_open else "[", ")" if high_open else "]"
    allowed = (f"a real number in {left}{low:g}, {high:g}{right}"
               if math.isfinite(low) or math.isfinite(high) else "a finite real number")

    def validate(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PydanticCustomError("number", "must be {allowed}, got {got}",
                                      {"allowed": allowed, "got": _shown(value)})
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float range
            number = math.inf if value > 0 else -math.inf
        inside = (math.isfinite(number)
                  and (number > low if low_open else number >= low)
                  and (number < high if high_open else number <= high))
        if not inside:
            raise PydanticCustomError("number", "must be {allowed}, got {got}",
                                      {"allowed": allowed, "got": _shown(value)})
        return number

    return validate


def _power_of_ten(value: int) -> str:
    exponent = len(str(value)) - 1
    return f"10^{exponent}" if value >= 10**6 and value == 10**exponent else str(value)


def _integer_validator(low: int, high: int) -> Callable[[object], int]:
    allowed = f"an integer in [{low}, {_power_of_ten(high)}]"

    def validate(value: object) -> int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)  # JSON and TOML write 1e6 as a float
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise PydanticCustomError("integer", "must be {allowed}, got {got}",
                                      {"allowed": allowed, "got": _shown(value)})
        return value

    return validate


def Real(low: float = -math.inf, high: float = math.inf, *, low_open: bool = False,
         high_open: bool = False) -> Any:
    """A finite real number in the given range (booleans, NaN and ±inf rejected)."""
    return Annotated[float, BeforeValidator(_real_validator(low, high, low_open, high_open))]


def Integer(low: int, high: int) -> Any:
    """An integer in [low, high] (integral floats such as ``1e6`` accepted, booleans rejected)."""
    return Annotated[int, BeforeValidator(_integer_validator(low, high))]


def _users_or_groups(value: object) -> int | list[int]:
    """``users`` of a parallel step: one number of users, or a list of group sizes."""
    if isinstance(value, list):
        if not value:
            raise PydanticCustomError("integer", "must list at least one group size")
        return [_USERS(item) for item in value]
    return _USERS(value)


_USERS = _integer_validator(1, MAX_USERS)
Probability = Real(0.0, 1.0)
Users = Integer(1, MAX_USERS)
Count = Integer(1, MAX_COUNT)


# ---------------------------------------------------------------------------------------------
# strict base model
# ---------------------------------------------------------------------------------------------


def _unknown_key_error(key: object, allowed: list[str]) -> PydanticCustomError:
    return PydanticCustomError("unknown_key", "unknown key {key} (allowed keys here: {allowed})",
                               {"key": _shown(key), "allowed": ", ".join(sorted(allowed))})


def _invalid(exc: Exception) -> PydanticCustomError:
    return PydanticCustomError("invalid", "{message}", {"message": " ".join(str(exc).split())})


class _Strict(BaseModel):
    """Base of every pipeline model: unknown keys rejected with the allowed ones listed."""

    model_config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_keys(cls, data: object) -> object:
        if isinstance(data, Mapping):
            allowed = list(cls.model_fields)
            for key in data:
                if key not in allowed:
                    raise _unknown_key_error(key, allowed)
        return data


# ---------------------------------------------------------------------------------------------
# randomizers
# ---------------------------------------------------------------------------------------------


class MatrixRandomizer(_Strict):
    """``{matrix = [[...], ...]}`` or ``{matrix_file = "m.csv"}`` (relative to the pipeline file),
    analysed by :func:`~dpacct_shuffle.randomizers.from_matrix`; optional ``name``."""

    matrix: Optional[list[list[Real(0.0, 1.0)]]] = None
    matrix_file: Optional[str] = None
    name: str = "matrix"
    _randomizer: Randomizer = PrivateAttr()

    @model_validator(mode="after")
    def _build(self, info: ValidationInfo) -> "MatrixRandomizer":
        if (self.matrix is None) == (self.matrix_file is None):
            raise PydanticCustomError("conflict", "give exactly one of 'matrix' and 'matrix_file'")
        try:
            if self.matrix is not None:
                matrix = self.matrix
            else:
                base_dir = (info.context or {}).get("base_dir", Path("."))
                matrix = read_matrix(Path(base_dir) / self.matrix_file)
            self._randomizer = from_matrix(matrix, name=self.name)
        except (ValueError, TypeError, OSError) as exc:
            raise _invalid(exc) from None
        return self

    @property
    def randomizer(self) -> Randomizer:
        """The analysed randomizer."""
        return self._randomizer


class _CatalogRandomizer(_Strict):
    """Base of the per-entry models: ``name`` plus the entry's keyword parameters (aliases of
    :data:`~dpacct_shuffle.randomizers.spec.PARAMETER_ALIASES` accepted)."""

    _randomizer: Randomizer = PrivateAttr()

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_keys(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        accepted = [key for key in cls.model_fields if key != "name"]
        resolved: dict[str, object] = {}
        given_as: dict[str, object] = {}
        for key, value in data.items():
            target = "name" if key == "name" else (
                canonical_keyword(key, accepted) if isinstance(key, str) else None)
            if target is None:
                raise _unknown_key_error(key, ["name", *accepted])
            if target in resolved:
                raise PydanticCustomError("conflict", "keys {first} and {second} both give {target}",
                                          {"first": repr(given_as[target]), "second": repr(key),
                                           "target": target})
            resolved[target], given_as[target] = value, key
        return resolved

    @model_validator(mode="after")
    def _build(self) -> "_CatalogRandomizer":
        keywords = {key: getattr(self, key) for key in self.model_fields_set if key != "name"}
        try:
            factory = catalog_factory(self.name)
            leak = None
            if LEAK_PARAMETER not in factory_keywords(factory):
                leak = keywords.pop(LEAK_PARAMETER, None)
            randomizer = factory(**keywords)
            self._randomizer = randomizer if leak is None else approximate(randomizer, leak)
        except (ValueError, TypeError, OverflowError, ZeroDivisionError) as exc:
            raise _invalid(exc) from None
        return self

    @property
    def randomizer(self) -> Randomizer:
        """The catalog entry built with these parameters."""
        return self._randomizer


_PARAMETER_TYPES: dict[Any, Any] = {
    float: Real(),
    int: Integer(0, MAX_INTEGER_PARAMETER),
    bool: bool,
    Optional[float]: Optional[Real()],
    Optional[int]: Optional[Integer(0, MAX_INTEGER_PARAMETER)],
}


def _catalog_model(name: str, factory: Callable[..., Randomizer]) -> type[_CatalogRandomizer]:
    """The strict model of catalog entry ``name``: one field per keyword of ``factory``, plus an
    optional ``delta0`` (the entry leaking with that probability, ``randomizers.approximate``)
    for the pure entries of the catalog."""
    hints = get_type_hints(factory)
    fields: dict[str, Any] = {"name": (Literal[(name, *[a for a, c in ALIASES.items() if c == name])], ...)}
    for parameter in inspect.signature(factory).parameters.values():
        annotation = _PARAMETER_TYPES[hints[parameter.name]]
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    if name in CATALOG:
        fields[LEAK_PARAMETER] = (Optional[Real()], None)
    return create_model(f"Catalog_{name}", __base__=_CatalogRandomizer, **fields)


_CATALOG_MODELS = {name: _catalog_model(name, factory)
                   for name, factory in {**CATALOG, **APPROXIMATE_FACTORIES}.items()}
_MATRIX_TAG = "randomizer:matrix"


def _randomizer_tag(value: object) -> Optional[str]:
    if isinstance(value, MatrixRandomizer) or (
            isinstance(value, Mapping) and ("matrix" in value or "matrix_file" in value)):
        return _MATRIX_TAG
    if isinstance(value, _CatalogRandomizer):
        value = {"name": value.name}
    if isinstance(value, Mapping) and isinstance(value.get("name"), str):
        return "randomizer:" + ALIASES.get(value["name"], value["name"])
    return None


def _spec_text(value: object) -> object:
    """A randomizer written as text, ``"krr:epsilon0=2,domain_size=100"``, becomes a table."""
    if not isinstance(value, str):
        return value
    try:
        name, params = split_spec(value)
    except ValueError as exc:
        raise _invalid(exc) from None
    return {"name": name, **params}


RandomizerSpec = Annotated[
    Union[(Annotated[MatrixRandomizer, Tag(_MATRIX_TAG)],
           *[Annotated[model, Tag("randomizer:" + name)] for name, model in _CATALOG_MODELS.items()])],
    Discriminator(_randomizer_tag, custom_error_type="randomizer",
                  custom_error_message="a randomizer is a table with 'name' (one of "
                  + ", ".join(sorted([*CATALOG, *ALIASES, *APPROXIMATE_FACTORIES]))
                  + ") and its parameters, or with "
                  "'matrix' or 'matrix_file'"),
    BeforeValidator(_spec_text),
]


# ---------------------------------------------------------------------------------------------
# steps
# ---------------------------------------------------------------------------------------------


class _Step(_Strict):
    """Base of the step models: ``count`` repetitions of one event."""

    count: Count = 1
    _event: dp_event.DpEvent = PrivateAttr()

    def single_event(self) -> dp_event.DpEvent:
        """The event of one repetition."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _build(self) -> "_Step":
        try:
            event = self.single_event()
        except (ValueError, TypeError) as exc:
            raise _invalid(exc) from None
        self._event = dp_event.SelfComposedDpEvent(event, self.count) if self.count > 1 else event
        return self

    @property
    def event(self) -> dp_event.DpEvent:
        """The dp-accounting event of this step (``count`` repetitions)."""
        return self._event


class ShuffleStep(_Step):
    """One shuffle round among ``users`` users (:class:`~dpacct_shuffle.events.ShuffleEvent`);
    with ``sampling_probability`` each user takes part with that probability
    (``PoissonSampledDpEvent``, client sampling); with ``sample_size`` m, exactly m of the
    ``users`` users are drawn uniformly without replacement and their reports shuffled
    (``SampledWithoutReplacementDpEvent(users, m, ShuffleEvent(randomizer, m))``, a fixed-size
    cohort). At most one of the two."""

    type: Literal["shuffle"]
    randomizer: RandomizerSpec
    users: Users
    honest_fraction: Real(0.0, 1.0, low_open=True) = 1.0
    sampling_probability: Optional[Probability] = None
    sample_size: Optional[Users] = None

    @model_validator(mode="before")
    @classmethod
    def _one_sampling(cls, data: object) -> object:
        if isinstance(data, Mapping) and "sampling_probability" in data and "sample_size" in data:
            raise PydanticCustomError(
                "conflict", "give 'sampling_probability' (Poisson sampling) or 'sample_size' "
                            "(a fixed-size cohort), not both")
        return data

    def single_event(self) -> dp_event.DpEvent:
        if self.sample_size is not None:
            if self.sample_size > self.users:
                raise ValueError(f"sample_size must be <= users ({self.users}), "
                                 f"got {self.sample_size}")
            return dp_event.SampledWithoutReplacementDpEvent(
                self.users, self.sample_size,
                ShuffleEvent(self.randomizer.randomizer, self.sample_size, self.honest_fraction))
        event: dp_event.DpEvent = ShuffleEvent(self.randomizer.randomizer, self.users,
                                               self.honest_fraction)
        if self.sampling_probability is not None:
            event = dp_event.PoissonSampledDpEvent(self.sampling_probability, event)
        return event


class PersonalizedGroup(_Strict):
    """One group of a ``personalized_shuffle`` step: ``users`` users applying ``randomizer``."""

    randomizer: RandomizerSpec
    users: Users


class PersonalizedShuffleStep(_Step):
    """One shuffle round of several groups of users, each with its own randomizer
    (:class:`~dpacct_shuffle.randomizers.PersonalizedShuffle` in a
    :class:`~dpacct_shuffle.events.ShuffleEvent` of all their users); with
    ``sampling_probability`` each user takes part with that probability
    (``PoissonSampledDpEvent``, client sampling)."""

    type: Literal["personalized_shuffle"]
    groups: list[PersonalizedGroup]
    honest_fraction: Real(0.0, 1.0, low_open=True) = 1.0
    sampling_probability: Optional[Probability] = None

    def single_event(self) -> dp_event.DpEvent:
        round_ = PersonalizedShuffle([(group.randomizer.randomizer, group.users)
                                      for group in self.groups])
        event: dp_event.DpEvent = ShuffleEvent(round_, round_.num_users, self.honest_fraction)
        if self.sampling_probability is not None:
            event = dp_event.PoissonSampledDpEvent(self.sampling_probability, event)
        return event


class ParallelStep(_Step):
    """One round answering several queries
    (:class:`~dpacct_shuffle.events.ParallelCompositionEvent`): ``mode = "random"`` (each user
    picks a branch, ``users`` is one number) or ``"disjoint"`` (``users`` lists the group sizes)."""

    type: Literal["parallel"]
    branches: list[RandomizerSpec]
    users: Annotated[object, BeforeValidator(_users_or_groups)]
    probabilities: Optional[list[Probability]] = None
    mode: Literal["random", "disjoint"] = "random"
    honest_fraction: Real(0.0, 1.0, low_open=True) = 1.0

    def single_event(self) -> dp_event.DpEvent:
        if self.mode == "random" and isinstance(self.users, list):
            raise ValueError("users must be one number of users when mode = 'random' (a list of "
                             "group sizes needs mode = 'disjoint')")
        if self.mode == "disjoint":
            if not isinstance(self.users, list) or len(self.users) != len(self.branches):
                raise ValueError(f"users must list one group size per branch "
                                 f"({len(self.branches)}) when mode = 'disjoint', got {self.users!r}")
            if self.probabilities is not None:
                raise ValueError("probabilities cannot be given when mode = 'disjoint' (each "
                                 "group answers its own branch)")
        users = tuple(self.users) if isinstance(self.users, list) else self.users
        probabilities = None if self.probabilities is None else tuple(self.probabilities)
        return ParallelCompositionEvent(tuple(b.randomizer for b in self.branches), users,
                                        probabilities, self.mode, self.honest_fraction)


class LDPStep(_Step):
    """A user's local reports without a shuffler
    (:class:`~dpacct_shuffle.events.LDPCompositionEvent`)."""

    type: Literal["ldp"]
    epsilons: list[Real(0.0, math.inf, high_open=True)]
    deltas: Optional[list[Real(0.0, 1.0, high_open=True)]] = None
    mode: Literal["sequential", "chained"] = "sequential"

    def single_event(self) -> dp_event.DpEvent:
        deltas = None if self.deltas is None else tuple(self.deltas)
        return LDPCompositionEvent(tuple(self.epsilons), self.mode, deltas)


class DPSGDStep(_Step):
    """``steps`` Poisson-sampled Gaussian steps (DP-SGD):
    ``SelfComposed(PoissonSampled(Gaussian(noise_multiplier)), steps)``. ``count`` is accepted as
    a synonym of ``steps``; giving both is an error."""

    type: Literal["dpsgd"]
    noise_multiplier: Real(0.0, math.inf, low_open=True, high_open=True)
    sampling_probability: Probability
    steps: Count

    @model_validator(mode="before")
    @classmethod
    def _steps_or_count(cls, data: object) -> object:
        if isinstance(data, Mapping):
            if "steps" in data and "count" in data:
                raise PydanticCustomError("conflict", "give 'steps' or 'count' (a synonym), not both")
            if "count" in data:
                data = {("steps" if key == "count" else key): value for key, value in data.items()}
        return data

    def single_event(self) -> dp_event.DpEvent:
        return dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(self.sampling_probability,
                                           dp_event.GaussianDpEvent(self.noise_multiplier)),
            self.steps)


class GaussianStep(_Step):
    """One Gaussian release (``GaussianDpEvent``; replace-one: sensitivity 2 in the PLD)."""

    type: Literal["gaussian"]
    noise_multiplier: Real(0.0, math.inf, low_open=True, high_open=True)

    def single_event(self) -> dp_event.DpEvent:
        return dp_event.GaussianDpEvent(self.noise_multiplier)


_STEP_MODELS: dict[str, type[_Step]] = {"shuffle": ShuffleStep,
                                        "personalized_shuffle": PersonalizedShuffleStep,
                                        "parallel": ParallelStep,
                                        "ldp": LDPStep, "dpsgd": DPSGDStep,
                                        "gaussian": GaussianStep}


def _step_tag(value: object) -> Optional[str]:
    if isinstance(value, _Step):
        return "step:" + str(value.type)  # type: ignore[attr-defined]
    if isinstance(value, Mapping) and isinstance(value.get("type"), str) \
            and value["type"] in _STEP_MODELS:
        return "step:" + value["type"]
    return None


Step = Annotated[
    Union[tuple(Annotated[model, Tag("step:" + name)] for name, model in _STEP_MODELS.items())],
    Discriminator(_step_tag, custom_error_type="step_type",
                  custom_error_message="'type' must be one of " + ", ".join(map(repr, STEP_TYPES))),
]


class Pipeline(_Strict):
    """A validated pipeline: ``steps`` and the target ``delta`` and/or ``epsilon``;
    ``value_discretization_interval`` None lets the accountant choose the PLD grid."""

    steps: list[Step]
    delta: Optional[Real(0.0, 1.0, low_open=True, high_open=True)] = None
    epsilon: Optional[Real(0.0, math.inf, high_open=True)] = None
    value_discretization_interval: Optional[Real(MIN_DISCRETIZATION, MAX_DISCRETIZATION)] = None

    @model_validator(mode="after")
    def _has_target(self) -> "Pipeline":
        if not self.steps:
            raise PydanticCustomError("empty", "'steps' must list at least one step")
        if self.delta is None and self.epsilon is None:
            raise PydanticCustomError("target", "give 'delta' (to report epsilon) and/or "
                                      "'epsilon' (to report delta)")
        return self

    def event(self) -> dp_event.ComposedDpEvent:
        """The dp-accounting event of the whole pipeline (its steps composed)."""
        return dp_event.ComposedDpEvent([step.event for step in self.steps])


# ---------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------


_STEP_KEYS = frozenset(key for model in _STEP_MODELS.values() for key in model.model_fields)
_RANDOMIZER_KEYS = frozenset(
    [*MatrixRandomizer.model_fields,
     *(key for model in _CATALOG_MODELS.values() for key in model.model_fields),
     *(alias for aliases in PARAMETER_ALIASES.values() for alias in aliases)])


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


def read_pipeline_file(path: str | Path) -> dict[str, Any]:
    """The raw contents of a pipeline file: TOML (``.toml``) or JSON (any other suffix)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if file.suffix.lower() == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            raise ImportError("TOML pipelines need Python >= 3.11 (tomllib); use a JSON file") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{file}: not valid TOML: {exc}") from None
    else:
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
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
        data = dict(source)
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


# ---------------------------------------------------------------------------------------------
# accounting
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepAccount:
    """ε at the pipeline's δ and/or δ at its ε of one step alone (all ``count`` repetitions)."""

    index: int
    type: str
    count: int
    description: str
    epsilon: Optional[float]
    delta: Optional[float]

    def as_dict(self) -> dict[str, object]:
        """Plain-data form (for JSON)."""
        return {"index": self.index, "type": self.type, "count": self.count,
                "description": self.description, "epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class PipelineAccount:
    """The accounting of a pipeline: the composed total and every step alone.

    ``epsilon`` is the certified ε at ``target_delta`` (None if the pipeline gives no δ) and
    ``delta`` the certified δ at ``target_epsilon``; the composed total is at most the sum of the
    steps' ε (basic composition) and usually far less.
    """

    target_delta: Optional[float]
    target_epsilon: Optional[float]
    epsilon: Optional[float]
    delta: Optional[float]
    steps: tuple[StepAccount, ...]

    def as_dict(self) -> dict[str, object]:
        """Plain-data form (for JSON)."""
        return {"target_delta": self.target_delta, "target_epsilon": self.target_epsilon,
                "epsilon": self.epsilon, "delta": self.delta,
                "steps": [step.as_dict() for step in self.steps]}


def describe_step(step: _Step) -> str:
    """A short label: the step type and its randomizer(s) or noise."""
    kind = step.type  # type: ignore[attr-defined]
    if isinstance(step, ShuffleStep):
        randomizer = step.randomizer.randomizer
        params = ", ".join(f"{k}={v}" for k, v in randomizer.parameters.items())
        sampled = ("" if step.sampling_probability is None
                   else f", sampling_probability={step.sampling_probability:g}")
        if step.sample_size is not None:
            sampled = f", cohort of {step.sample_size}"
        return f"{kind} {randomizer.name}({params}), n = {step.users}{sampled}"
    if isinstance(step, PersonalizedShuffleStep):
        groups = ", ".join(f"{group.randomizer.randomizer.name}("
                           + ", ".join(f"{k}={v}" for k, v in group.randomizer.randomizer.parameters.items())
                           + f") x{group.users}" for group in step.groups)
        return f"{kind} [{groups}]"
    if isinstance(step, ParallelStep):
        names = ", ".join(branch.randomizer.name for branch in step.branches)
        return f"{kind} {step.mode} [{names}], n = {step.users}"
    if isinstance(step, LDPStep):
        return f"{kind} {step.mode} epsilons = {step.epsilons}"
    if isinstance(step, DPSGDStep):
        return (f"{kind} sigma = {step.noise_multiplier:g}, q = {step.sampling_probability:g}, "
                f"{step.steps} steps")
    return f"{kind} sigma = {step.noise_multiplier:g}"  # type: ignore[attr-defined]


def _accountant(pipeline: Pipeline, events: list[dp_event.DpEvent], where: str) -> Any:
    from dpacct_shuffle.accountants import ShufflePLDAccountant

    accountant = ShufflePLDAccountant(
        value_discretization_interval=pipeline.value_discretization_interval)
    event = dp_event.ComposedDpEvent(events)
    if not accountant.supports(event):
        raise ValueError(f"{where}: ShufflePLDAccountant does not support this event: {event!r}")
    try:
        accountant.compose(event)
    except MemoryError:
        raise ValueError(f"{where}: the privacy-loss distribution does not fit in memory; lower "
                         "'count'/'steps' or raise 'value_discretization_interval'") from None
    return accountant


def _values(pipeline: Pipeline, accountant: Any) -> tuple[Optional[float], Optional[float]]:
    epsilon = None if pipeline.delta is None else float(accountant.get_epsilon(pipeline.delta))
    delta = None if pipeline.epsilon is None else float(accountant.get_delta(pipeline.epsilon))
    return epsilon, delta


def account_pipeline(pipeline: Pipeline | Mapping[str, Any] | str | Path, *,
                     progress: ProgressOption = False) -> PipelineAccount:
    """Account ``pipeline`` (a :class:`Pipeline`, or anything :func:`load_pipeline` takes) with
    :class:`~dpacct_shuffle.accountants.ShufflePLDAccountant`: every step alone, then the
    composition of all steps. ``progress=True`` shows a tqdm bar on stderr (one tick per step and
    one for the total); a callback ``progress(done, total)`` is called instead if given."""
    model = pipeline if isinstance(pipeline, Pipeline) else load_pipeline(pipeline)
    results: list[StepAccount] = []
    several = len(model.steps) > 1
    with ProgressReporter(len(model.steps) + int(several), "account", progress,
                          unit="step") as bar:
        for index, step in enumerate(model.steps):
            epsilon, delta = _values(model, _accountant(model, [step.event], f"steps[{index}]"))
            results.append(StepAccount(index, step.type, step.count,  # type: ignore[attr-defined]
                                       describe_step(step), epsilon, delta))
            bar.tick()
        if several:
            epsilon, delta = _values(model, _accountant(model, [s.event for s in model.steps],
                                                        "pipeline"))
            bar.tick()
    return PipelineAccount(model.delta, model.epsilon, epsilon, delta, tuple(results))


__all__ = [
    "DPSGDStep",
    "GaussianStep",
    "LDPStep",
    "MAX_COUNT",
    "MAX_USERS",
    "MatrixRandomizer",
    "ParallelStep",
    "Pipeline",
    "PipelineAccount",
    "ShuffleStep",
    "StepAccount",
    "account_pipeline",
    "describe_step",
    "load_pipeline",
    "read_pipeline_file",
]
