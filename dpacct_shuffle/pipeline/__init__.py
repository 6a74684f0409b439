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

The schema and its accounting, one module each (everything is re-exported here):

* :mod:`~dpacct_shuffle.pipeline.fields` — limits, number validators, the strict base model;
* :mod:`~dpacct_shuffle.pipeline.randomizer_models` — matrix and catalog randomizer models;
* :mod:`~dpacct_shuffle.pipeline.steps` — the step models and :class:`Pipeline`;
* :mod:`~dpacct_shuffle.pipeline.loading` — :func:`read_pipeline_file`, :func:`load_pipeline`;
* :mod:`~dpacct_shuffle.pipeline.accounting` — :func:`account_pipeline` and its results.
"""

from __future__ import annotations

from dpacct_shuffle.pipeline.accounting import (
    PipelineAccount,
    StepAccount,
    account_pipeline,
    describe_step,
)
from dpacct_shuffle.pipeline.fields import (
    MAX_COUNT,
    MAX_DISCRETIZATION as MAX_DISCRETIZATION,
    MAX_USERS,
    MIN_DISCRETIZATION as MIN_DISCRETIZATION,
    STEP_TYPES as STEP_TYPES,
    Count as Count,
    Integer as Integer,
    Probability as Probability,
    Real as Real,
    Users as Users,
)
from dpacct_shuffle.pipeline.loading import (
    _RANDOMIZER_KEYS as _RANDOMIZER_KEYS,
    _STEP_KEYS as _STEP_KEYS,
    load_pipeline,
    read_pipeline_file,
)
from dpacct_shuffle.pipeline.randomizer_models import MatrixRandomizer, RandomizerSpec as RandomizerSpec
from dpacct_shuffle.pipeline.steps import (
    DPSGDStep,
    GaussianStep,
    LDPStep,
    ParallelStep,
    PersonalizedGroup as PersonalizedGroup,
    PersonalizedShuffleStep as PersonalizedShuffleStep,
    Pipeline,
    ShuffleStep,
    Step as Step,
)

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


def __getattr__(name: str) -> int:
    """Deprecated names of the package (PEP 562): ``MAX_INTEGER_PARAMETER``
    (:mod:`dpacct_shuffle.pipeline.fields`)."""
    if name == "MAX_INTEGER_PARAMETER":
        from dpacct_shuffle.pipeline import fields

        return int(getattr(fields, name))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
