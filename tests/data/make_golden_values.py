"""Records the package's numbers in ``golden_values.json``; ``tests/test_golden_values.py`` checks
that the current code reproduces every one of them bit for bit.

The file pins behaviour across refactorings: a restructuring that changes no maths must leave every
value identical. A change that is *meant* to move a number (a tighter bound, a fixed bug) regenerates
the file with ``python tests/data/make_golden_values.py`` in the same commit, and the commit says why.

Each record is ``[label, call, value]``: ``call`` is a Python expression over the public API (the
names imported below) and ``value`` the float it returned, as ``float.hex`` (or a list of them).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from dpacct_shuffle import VariationRatio, lemmas, randomizers
from dpacct_shuffle.core import closed_forms

NAMESPACE = {"VariationRatio": VariationRatio, "lemmas": lemmas, "randomizers": randomizers,
             "closed_forms": closed_forms, "math": math}

OUTPUT = Path(__file__).with_name("golden_values.json")
PLATFORM_OUTPUT = Path(__file__).with_name("golden_values_platform.json")


def platform_fingerprint() -> dict[str, object]:
    """What decides the last bits besides the package's code: the C library's ``exp``/``log``, the
    numpy and scipy builds and the SIMD loops numpy dispatches to on this processor."""
    import platform

    import numpy
    import scipy
    from numpy._core._multiarray_umath import __cpu_features__

    return {"machine": platform.machine(), "libc": list(platform.libc_ver()),
            "python": platform.python_version(), "numpy": numpy.__version__,
            "scipy": scipy.__version__,
            "simd": sorted(name for name, found in __cpu_features__.items() if found)}


def calls() -> list[tuple[str, str]]:
    """The (label, expression) pairs recorded; a few hundred points over every public layer."""
    out: list[tuple[str, str]] = []
    pairs = [
        "VariationRatio(math.exp(1.0), (math.e - 1) / (math.e + 1), math.exp(1.0))",
        "VariationRatio(math.exp(2.0), 0.5, math.exp(2.0), neutral_share=0.3)",
        "VariationRatio(math.exp(4.0), 0.9, math.exp(4.0), q1=math.exp(3.0))",
        "VariationRatio(math.inf, 0.4, 3.0)",
        "VariationRatio(5.0, 0.3, 5.0, neutral_parts=[(0.35, 0.2), (0.2, 0.05)])",
        "VariationRatio.worst_case(0.5)",
        "VariationRatio.worst_case(3.0)",
    ]
    for vr in pairs:
        for n in (10, 1000, 10**5, 10**8):
            for eps in (0.05, 0.5, 2.0):
                out.append(("core delta", f"{vr}.delta({eps}, {n})"))
            out.append(("core interval", f"list({vr}.delta_interval(0.2, {n}))"))
        for n in (1000, 10**5):
            out.append(("core epsilon", f"{vr}.epsilon(1e-6, {n})"))
    entries = [
        "randomizers.binary_rr(1.0)", "randomizers.krr(2.0, 100)", "randomizers.krr(0.5, 3)",
        "randomizers.rappor(2.0, 10)", "randomizers.oue(1.0, 20)",
        "randomizers.subset_selection(2.0, 100, 10)", "randomizers.local_hashing(2.0, 8)",
        "randomizers.hadamard_response(2.0, 64)", "randomizers.pckv_grr(2.0, 100, 4)",
        "randomizers.collision(2.0, 100, 20, 4)", "randomizers.sampling_rappor(2.0, 50, 3)",
        "randomizers.laplace(2.0)", "randomizers.metric_laplace(1.0, 3.0)",
        "randomizers.piecewise(2.0)", "randomizers.duchi(1.0)", "randomizers.harmony(1.0, 4)",
        "randomizers.metric_ldp(1.0, 2.0)", "randomizers.worst_case_ldp(1.0)",
        "randomizers.balcer_binary_summation(0.3)", "randomizers.cheu_binary_summation(0.2)",
        "randomizers.balls_into_bins(50, 5)", "randomizers.mix_dump(0.2, 10)",
        "randomizers.from_matrix([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]])",
    ]
    for entry in entries:
        out.append(("catalog epsilon", f"{entry}.shuffled(1000).epsilon(1e-6)"))
        for n in (100, 10**4):
            out.append(("catalog delta", f"{entry}.shuffled({n}).delta(0.3)"))
        out.append(("catalog lower", f"{entry}.shuffled(100).epsilon_lower(1e-6)"))
        out.append(("catalog lower delta", f"{entry}.shuffled(1000).delta_lower(0.1)"))
    out += [
        ("exact binary RR", "randomizers.binary_rr_exact_delta(1.0, 200, 0.2)"),
        ("exact binary RR", "randomizers.binary_rr_exact_delta(3.0, 50, 1.0)"),
        ("closed form", "closed_forms.fmt_epsilon(1.0, 10**5, 1e-6)"),
        ("closed form", "closed_forms.fmt_epsilon(0.3, 10**4, 1e-8)"),
        ("closed form", "closed_forms.fmt_validity_limit(10**5, 1e-6)"),
        ("closed form", f"closed_forms.chernoff_delta({pairs[1]}, 0.1, 10**5)"),
        ("closed form", f"closed_forms.chernoff_epsilon({pairs[1]}, 1e-6, 10**5)"),
        ("closed form", f"closed_forms.chernoff_epsilon({pairs[0]}, 1e-9, 10**7)"),
        ("lemma", "lemmas.hockey_stick_divergence([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 0.4)"),
        ("lemma", "lemmas.max_divergence([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])"),
        ("lemma", "lemmas.approximate_max_divergence([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 0.1)"),
        ("lemma", "lemmas.kl_divergence([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])"),
        ("lemma", "lemmas.kl_divergence_bound(0.7)"),
        ("lemma", "lemmas.randomizer_delta([[0.7, 0.3], [0.2, 0.8]], 0.5)"),
        ("lemma", "lemmas.randomizer_epsilon([[0.7, 0.3], [0.2, 0.8]], 0.01)"),
        ("lemma", "lemmas.pure_to_approx(1.0, 1e-5)"),
        ("lemma", "lemmas.approx_to_pure(1.0, 1e-5, 10, 0.1)"),
        ("lemma", "list(lemmas.basic_composition([(0.5, 1e-6), (1.0, 1e-7)]))"),
        ("lemma", "list(lemmas.replacement_to_deletion(1.0, 1e-6))"),
        ("lemma", "list(lemmas.deletion_to_replacement(1.0, 1e-6))"),
        ("lemma", "lemmas.chained_ldp(1.0, 2.0)"),
        ("lemma", "lemmas.chained_ldp_product_bound(1.0, 2.0)"),
        ("lemma", "lemmas.advanced_grouposition(0.1, 10, 1e-6)"),
        ("lemma", "list(lemmas.advanced_grouposition_approx(0.1, 1e-6, 10, 1e-7))"),
        ("lemma", "list(lemmas.shuffle_to_ldp(0.5, 1e-6, 1000))"),
        ("lemma", "lemmas.fmt_shuffle_bound(1.0, 10**5, 1e-6)"),
        ("lemma", "lemmas.robust_fmt_shuffle_bound(1.0, 10**5, 1e-6, 0.9)"),
        ("lemma", "list(lemmas.subsampling(1.0, 1e-6, 0.1))"),
    ]
    return out


def evaluate(call: str) -> list[str] | str:
    """The value of ``call`` as ``float.hex`` (a list for sequence results)."""
    value = eval(call, dict(NAMESPACE))  # noqa: S307 - the expressions are this file's own
    if isinstance(value, (list, tuple)):
        return [float(v).hex() for v in value]
    return float(value).hex()


def main() -> None:
    records = [[label, call, evaluate(call)] for label, call in calls()]
    lines = ",\n".join(json.dumps(record, ensure_ascii=False) for record in records)
    OUTPUT.write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    PLATFORM_OUTPUT.write_text(json.dumps(platform_fingerprint(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(records)} values to {OUTPUT.name}")


if __name__ == "__main__":
    main()
