"""``dpacct-shuffle account``: ε/δ of a pipeline file through the PLD accountant."""

from __future__ import annotations

import argparse
import time
from typing import TextIO

from dpacct_shuffle.cli.errors import EXIT_OK
from dpacct_shuffle.cli.output import emit_json, format_upper
from dpacct_shuffle.cli.parser import show_progress


def cmd_account(args: argparse.Namespace, out: TextIO) -> int:
    """``account``: ε/δ of a pipeline file through the PLD accountant, per step and in total."""
    from dpacct_shuffle.pipeline import account_pipeline, load_pipeline

    overrides = {key: value for key, value in (("delta", args.delta), ("epsilon", args.epsilon))
                 if value is not None}
    pipeline = load_pipeline(args.pipeline, overrides=overrides)
    start = time.perf_counter()
    result = account_pipeline(pipeline, progress=show_progress(args))
    seconds = time.perf_counter() - start
    payload: dict[str, object] = {"command": "account", "pipeline": str(args.pipeline),
                                  "steps": len(result.steps)}
    if result.target_delta is not None:
        payload.update({"delta": result.target_delta, "epsilon": result.epsilon})
    if result.target_epsilon is not None:
        payload.update({"epsilon_target": result.target_epsilon, "delta_at_epsilon": result.delta})
    payload.update({"per_step": [step.as_dict() for step in result.steps], "seconds": seconds})
    if args.json:
        emit_json(payload, out)
        return EXIT_OK
    out.write(f"pipeline {args.pipeline}: {len(result.steps)} step(s), ShufflePLDAccountant "
              "(replace-one)\n")
    for step in result.steps:
        repeat = f" x{step.count}" if step.count > 1 else ""
        values = []
        if step.epsilon is not None:
            values.append(f"epsilon {format_upper(step.epsilon)}")
        if step.delta is not None:
            values.append(f"delta {format_upper(step.delta)}")
        out.write(f"  steps[{step.index}]{repeat} {step.description}: {', '.join(values)}\n")
    if result.epsilon is not None:
        out.write(f"epsilon: {format_upper(result.epsilon)}  at delta = {result.target_delta:g}\n")
    if result.delta is not None:
        out.write(f"delta: {format_upper(result.delta)}  at epsilon = {result.target_epsilon:g}\n")
    return EXIT_OK
