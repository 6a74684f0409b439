"""The numbers quoted in docs/theory.md come from the code.

* "Published pair": exact shuffled δ of k-ary randomized response (every output histogram
  enumerated), the published pair of Wang et al. (arXiv:2304.05007, Thm 4.1) and the neutral-aware
  bound, at the two configurations of the table — the published pair is below the exact value,
  the valid bound above it; and the price of validity in ε at δ = 1e-6, n = 1000.
* "Exact binary randomized response": the homogeneous configuration is not the worst one.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle.core.bound import published_pair
from dpacct_shuffle.randomizers import BinaryRRProfile
from tests.oracle import exact_shuffled_delta, krr_matrix, krr_neutral_aware_params

THEORY = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "theory.md").read_text(encoding="utf-8")

# (eps0, d, n, eps, input of the other users, exact, published pair, neutral-aware) as printed
PUBLISHED_PAIR_TABLE = [
    (2.0, 5, 30, 0.8, 2, "0.0168454", "0.0162699", "0.0172265"),
    (1.0, 3, 20, 0.8, 0, "3.31191e-5", "7.99880e-6", "4.40461e-5"),
]


@pytest.mark.parametrize("eps0,d,n,eps,others,exact_txt,published_txt,valid_txt", PUBLISHED_PAIR_TABLE)
def test_published_pair_counterexample_table(eps0, d, n, eps, others, exact_txt, published_txt, valid_txt):
    kw = krr_neutral_aware_params(eps0, d)
    exact = exact_shuffled_delta(krr_matrix(eps0, d), 0, 1, [others] * (n - 1), eps)
    published = published_pair(kw["p"], kw["beta"], kw["q"]).delta(eps, n)
    valid = VariationRatio(kw["p"], kw["beta"], kw["q"], neutral_share=kw["neutral_share"]).delta(eps, n)
    assert published < exact <= valid
    for text, value in ((exact_txt, exact), (published_txt, published), (valid_txt, valid)):
        assert f"| {text} |" in THEORY
        assert float(text) == pytest.approx(value, rel=5e-6)


# (eps0, d, published-pair epsilon, neutral-aware epsilon) at delta = 1e-6, n = 1000, as printed
PRICE_OF_VALIDITY_TABLE = [
    (1.0, 3, "0.130570", "0.130701"),
    (2.0, 5, "0.333277", "0.333787"),
    (1.0, 10, "0.0800947", "0.0801647"),
    (4.0, 10, "1.52242", "1.52747"),
]


@pytest.mark.parametrize("eps0,d,published_txt,valid_txt", PRICE_OF_VALIDITY_TABLE)
def test_price_of_validity_table(eps0, d, published_txt, valid_txt):
    kw = krr_neutral_aware_params(eps0, d)
    published = published_pair(kw["p"], kw["beta"], kw["q"]).epsilon(1e-6, 1000)
    valid = VariationRatio(kw["p"], kw["beta"], kw["q"], neutral_share=kw["neutral_share"]).epsilon(1e-6, 1000)
    assert published < valid < published * 1.005
    assert f"| {eps0:g} | {d} | {published_txt} | {valid_txt} | {valid / published - 1:.2%} |" in THEORY
    # printed to 6 digits; both are upper ends of brackets of relative width 1e-4
    assert float(published_txt) == pytest.approx(published, rel=5e-6)
    assert float(valid_txt) == pytest.approx(valid, rel=5e-6)


def test_binary_rr_homogeneous_configuration_is_not_the_worst():
    profile = BinaryRRProfile(1.0, 50)
    assert profile.worst_configuration(0.3) == 1
    lower, upper = profile.delta_interval(0.3)
    assert "2.3562e-3 at m = 1" in THEORY and "δ = 2.2563e-3 at" in THEORY
    assert lower == pytest.approx(2.3562e-3, rel=5e-5) and upper <= lower * (1 + 1e-3)
    binary = krr_matrix(1.0, 2)  # binary randomized response
    homogeneous = exact_shuffled_delta(binary, 0, 1, [0] * 49, 0.3)
    one_other = exact_shuffled_delta(binary, 0, 1, [1] + [0] * 48, 0.3)
    assert homogeneous == pytest.approx(2.2563e-3, rel=5e-5)
    assert lower <= one_other * (1 + 1e-12) and one_other <= lower * (1 + 1e-6)  # lower end, rounded down


def _slug(heading: str) -> str:
    """The anchor mkdocs (Python-Markdown's toc) and GitHub give an ASCII heading."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower())


def test_every_cited_section_and_anchor_exists():
    all_headings = re.findall(r"^## (.+)$", THEORY, re.M)
    headings = set(all_headings)
    assert len(headings) == len(all_headings), sorted(h for h in headings if all_headings.count(h) > 1)
    anchors = {_slug(h) for h in headings if h.isascii()} | set(re.findall(r'<a id="([^"]+)"></a>', THEORY))
    root = pathlib.Path(__file__).resolve().parent.parent
    cited, linked = set(), set()
    for path in [*root.glob("dpacct_shuffle/**/*.py"), *root.glob("tests/*.py"), *root.glob("benchmarks/*.py"),
                 *root.glob("docs/**/*.md"), *root.glob("tests/data/*.md")]:
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r'docs/theory\.md`{0,2},\s*(?:#\s*)?(?:section\s+)?"([^"]+)"', text):
            cited.add(re.sub(r"\s*\n\s*(?:#\s*)?", " ", name))  # a name may wrap onto the next line
        linked.update(re.findall(r"theory\.md#([\w-]+)", text))
    assert cited and linked
    assert cited <= headings, cited - headings
    assert linked <= anchors, linked - anchors


def test_lemma_table_names_existing_functions():
    from dpacct_shuffle import lemmas, profiles

    table = THEORY[THEORY.index("## Lemmas"):THEORY.index("## References")]
    names = re.findall(r"^\|[^|]*\| ([^|]+) \|", table, re.M)
    functions = [f for cell in names for f in re.findall(r"`([\w.]+)`", cell)]
    assert len(functions) >= 20
    for name in functions:
        module, _, attr = name.rpartition(".")
        assert callable(getattr(profiles if module == "profiles" else lemmas, attr, None)), name
