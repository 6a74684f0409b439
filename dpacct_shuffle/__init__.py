"""dpacct_shuffle: sound, tight privacy accounting for the shuffle model.

The numerical core (:mod:`dpacct_shuffle.core`) depends on numpy/scipy only; integrations with
dp-accounting and Opacus sit on top of it.
"""

from dpacct_shuffle.core.bound import VariationRatio

__version__ = "0.1.0"  # the single source of the version (pyproject.toml reads it)

__all__ = ["VariationRatio", "__version__"]
