"""The pipeline schema's randomizers: a matrix (inline or from a file), a named randomizer read
with the one randomizer schema (:mod:`dpacct_shuffle.randomizers.schema`), and
:data:`RandomizerSpec`, the tagged union of them (a randomizer may also be written as a
``"name:key=value"`` spec string)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Optional, Union

from pydantic import (BeforeValidator, Discriminator, PlainValidator, PrivateAttr, Tag, ValidationInfo,
                      model_validator)
from pydantic_core import PydanticCustomError

from dpacct_shuffle.pipeline.fields import _invalid, _Strict
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog import ALIASES
from dpacct_shuffle.randomizers.matrix import from_matrix
from dpacct_shuffle.randomizers.schema import (PARAMETER_ALIASES, SCHEMAS, RandomizerDescription,
                                              describe, matrix_rows)
from dpacct_shuffle.randomizers.spec import describe_spec, read_matrix


def _matrix_rows(value: object) -> list[list[float]]:
    """An inline matrix, checked by the randomizer schema's
    :func:`~dpacct_shuffle.randomizers.schema.matrix_rows`."""
    try:
        return matrix_rows(value)
    except (TypeError, ValueError) as exc:
        raise _invalid(exc) from None


class MatrixRandomizer(_Strict):
    """``{matrix = [[...], ...]}`` or ``{matrix_file = "m.csv"}`` (relative to the pipeline file),
    analysed by :func:`~dpacct_shuffle.randomizers.from_matrix`; optional ``name``."""

    matrix: Optional[Annotated[list[list[float]], BeforeValidator(_matrix_rows)]] = None
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
            else:  # exactly one is given
                base_dir = (info.context or {}).get("base_dir", Path("."))
                matrix = read_matrix(Path(base_dir) / str(self.matrix_file))
            self._randomizer = from_matrix(matrix, name=self.name)
        except (ValueError, TypeError, OSError) as exc:
            raise _invalid(exc) from None
        return self

    @property
    def randomizer(self) -> Randomizer:
        """The analysed randomizer."""
        return self._randomizer


@dataclass(frozen=True)
class CatalogRandomizer:
    """``{name = "krr", epsilon0 = 2, domain_size = 100}`` or the spec string
    ``"krr:epsilon0=2,domain_size=100"``: a named randomizer read with the one randomizer schema
    (:mod:`dpacct_shuffle.randomizers.schema`: the same names, aliases, kinds and messages as
    spec strings, the JSON form and the command line).

    Attributes:
      description: the checked name and arguments.
      randomizer: the randomizer they build.
    """

    description: RandomizerDescription
    randomizer: Randomizer

    @property
    def name(self) -> str:
        return self.description.name


def _catalog_randomizer(value: object) -> CatalogRandomizer:
    """A table (or spec string) read into a :class:`CatalogRandomizer`; every problem is one
    ``invalid`` error carrying the schema's message."""
    if isinstance(value, CatalogRandomizer):
        return value
    try:
        if isinstance(value, str):
            description = describe_spec(value)
        elif isinstance(value, Mapping):
            description = describe(value.get("name"), {k: v for k, v in value.items() if k != "name"})
        else:
            raise TypeError(f"a randomizer is a table or a spec string, got {type(value).__name__}")
        return CatalogRandomizer(description, description.build())
    except (ValueError, TypeError, OverflowError, ZeroDivisionError) as exc:
        raise _invalid(exc) from None


_MATRIX_TAG = "randomizer:matrix"
_CATALOG_TAG = "randomizer:catalog"
#: Every key a randomizer table may hold (matrix keys, ``name``, each entry's parameters with
#: their aliases).
RANDOMIZER_KEYS = frozenset(
    [*MatrixRandomizer.model_fields, "name",
     *(parameter.name for entry in SCHEMAS.values() for parameter in entry.parameters),
     *(alias for aliases in PARAMETER_ALIASES.values() for alias in aliases)])


def _randomizer_tag(value: object) -> Optional[str]:
    if isinstance(value, MatrixRandomizer) or (
            isinstance(value, Mapping) and ("matrix" in value or "matrix_file" in value)):
        return _MATRIX_TAG
    if isinstance(value, (CatalogRandomizer, str)) or (isinstance(value, Mapping) and "name" in value):
        return _CATALOG_TAG
    return None


RandomizerSpec = Annotated[
    Union[Annotated[MatrixRandomizer, Tag(_MATRIX_TAG)],
          Annotated[CatalogRandomizer, PlainValidator(_catalog_randomizer), Tag(_CATALOG_TAG)]],
    Discriminator(_randomizer_tag, custom_error_type="randomizer",
                  custom_error_message="a randomizer is a table with 'name' (one of "
                  + ", ".join(sorted([*SCHEMAS, *ALIASES]))
                  + ") and its parameters, or with 'matrix' or 'matrix_file'"),
]
