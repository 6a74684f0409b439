"""The pipeline schema's randomizers: a matrix (inline or from a file), one strict model per catalog
entry, and :data:`RandomizerSpec`, the tagged union of them (a randomizer may also be written as
a ``"name:key=value"`` spec string)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union, get_type_hints

from pydantic import (
    BeforeValidator,
    Discriminator,
    PrivateAttr,
    Tag,
    ValidationInfo,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from dpacct_shuffle.pipeline.fields import (
    MAX_INTEGER_PARAMETER,
    Integer,
    Real,
    _invalid,
    _Strict,
    _unknown_key_error,
)
from dpacct_shuffle.randomizers.approximate import approximate
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog import ALIASES, CATALOG
from dpacct_shuffle.randomizers.matrix import from_matrix
from dpacct_shuffle.randomizers.spec import (APPROXIMATE_FACTORIES, LEAK_PARAMETER,
                                            canonical_keyword, catalog_factory,
                                            factory_keywords, read_matrix, split_spec)


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
