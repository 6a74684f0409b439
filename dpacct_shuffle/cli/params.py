"""``dpacct-shuffle params``: variation-ratio parameters of an entry or matrix, or the catalog
(``--list``)."""

from __future__ import annotations

import argparse
import inspect
from typing import Any, TextIO

from dpacct_shuffle.cli.errors import EXIT_OK
from dpacct_shuffle.cli.output import describe_randomizer, emit_json
from dpacct_shuffle.cli.parser import randomizer_from_args


def cmd_params_or_list(args: argparse.Namespace, out: TextIO) -> int:
    """``params`` (or ``params --list``: the catalog entries with their parameters)."""
    if not args.list:
        return cmd_params(args, out)
    from dpacct_shuffle.randomizers.spec import catalog_factory, catalog_names

    entries = {}
    for name in catalog_names():
        factory = catalog_factory(name)
        signature = inspect.signature(factory)
        first_paragraph = (inspect.getdoc(factory) or "").split("\n\n")[0]
        entries[name] = {"parameters": [str(p) for p in signature.parameters.values()],
                         "summary": " ".join(first_paragraph.split())}
    if args.json:
        emit_json({"command": "params", "catalog": entries}, out)
        return EXIT_OK
    for name, entry in entries.items():
        out.write(f"{name}({', '.join(entry['parameters'])})\n    {entry['summary']}\n")
    return EXIT_OK


def variation_ratio_parameters(vr: Any) -> dict[str, float]:
    """The attributes of a :class:`~dpacct_shuffle.VariationRatio` as a plain dict."""
    return {"p": vr.p, "epsilon0": vr.epsilon0, "beta": vr.beta, "q0": vr.q0, "q1": vr.q1,
            "alpha": vr.alpha, "p_alpha": vr.p_alpha, "neutral_mass": vr.neutral_mass,
            "r0": vr.r0, "r1": vr.r1, "neutral_share": vr.neutral_share,
            "neutral_weight": vr.neutral_weight, "rest_share": vr.rest_share}


def cmd_params(args: argparse.Namespace, out: TextIO) -> int:
    """``params``: variation-ratio parameters of a catalog entry or a matrix file."""
    randomizer = randomizer_from_args(args)
    summary = randomizer.variation_ratio
    cover = [variation_ratio_parameters(vr) for vr in randomizer.variation_ratios]
    payload: dict[str, object] = {
        "command": "params", "randomizer": randomizer.name,
        "parameters": dict(randomizer.parameters),
        "variation_ratio": None if summary is None else variation_ratio_parameters(summary),
        "cover": cover, "published": randomizer.published, "notes": randomizer.notes,
    }
    if args.json:
        emit_json(payload, out)
        return EXIT_OK
    out.write(f"{describe_randomizer(randomizer)}\n")
    if summary is None:
        out.write("variation ratio valid for every victim pair: none (unbounded ratio)\n")
    else:
        out.write("variation ratio valid for every victim pair:\n")
        for key, value in variation_ratio_parameters(summary).items():
            out.write(f"  {key:14s} {value!r}\n")
    if cover and (len(cover) > 1 or summary is None
                  or cover[0] != variation_ratio_parameters(summary)):
        out.write(f"cover: {len(cover)} parameter set(s) for classes of victim pairs (the shuffled "
                  "bound is the max over classes, the min over one class's candidates):\n")
        for entry in cover:
            out.write("  " + ", ".join(f"{k}={entry[k]:.6g}" for k in
                                       ("p", "beta", "q0", "q1", "r0", "r1", "neutral_share",
                                        "neutral_weight")) + "\n")
    if randomizer.published is not None:
        p, beta, q, q1 = randomizer.published
        out.write(f"published (Wang et al. 2023 table): p={p!r}, beta={beta!r}, q={q!r}, q1={q1!r}\n")
    if randomizer.notes:
        out.write(f"notes: {randomizer.notes}\n")
    return EXIT_OK
