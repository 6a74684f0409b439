"""User counts at which a changing cohort is accounted: anchors chosen among the rounds' own counts.

A shuffle round with n honest users may be accounted at any n' ≤ n (docs/theory.md, "PLD
accounting of shuffle rounds", changing cohorts: the true δ is non-increasing in n). With a ratio
r > 1, :class:`UserCountAnchors` keeps a sorted set of *anchors* and accounts a count n at the
largest anchor a ≤ n; it adds anchors so that every count it has seen satisfies a ≤ n < a·r. So
every round is accounted within a factor r below its own count, and rounds whose counts share an
anchor share one PLD.

Anchors are taken among the counts themselves, greedily: the smallest count not yet covered
becomes an anchor and covers every count below r times it; repeat. For counts given at once this
is the fewest anchors any choice of anchors among values ≤ the counts can have (an interval
cover: the smallest uncovered count needs an anchor in (n/r, n], and n itself covers the most
beyond it). Counts added later never change the anchor of a count seen earlier: a new anchor c
is a count not covered by the anchors below it, so every count already covered by an anchor
a < c lies below a·r ≤ c and keeps its anchor (the largest one ≤ it).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from dpacct_shuffle.core.validation import check_num_users, check_range


class UserCountAnchors:
    """Anchors of user counts within a factor ``ratio`` (see the module docstring).

    Args:
      ratio: r in (1, 2]: every count n seen is accounted at an anchor a with a ≤ n < a·r.
    """

    __slots__ = ("ratio", "_anchors")

    def __init__(self, ratio: float) -> None:
        self.ratio = check_range("users_grid_ratio", ratio, 1.0, 2.0, low_open=True)
        self._anchors: list[int] = []

    @property
    def anchors(self) -> tuple[int, ...]:
        """The anchors, increasing."""
        return tuple(self._anchors)

    def _below(self, n: int) -> int:
        """Largest anchor ≤ n, 0 if there is none."""
        index = bisect.bisect_right(self._anchors, n)
        return self._anchors[index - 1] if index else 0

    def covers(self, n: int) -> bool:
        """Whether the largest anchor a ≤ n satisfies n < a·r."""
        below = self._below(n)
        return below > 0 and n < below * self.ratio

    def extend(self, counts: Iterable[int]) -> None:
        """Add anchors (greedily, among ``counts``) until every count is covered."""
        for n in sorted({check_num_users(count, "num_users") for count in counts}):
            if not self.covers(n):
                bisect.insort(self._anchors, n)

    def anchor(self, n: int) -> int:
        """The count n is accounted at: the largest anchor ≤ n (call :meth:`extend` first)."""
        users = check_num_users(n, "num_users")
        if not self.covers(users):
            raise ValueError(f"num_users={users} has no anchor within users_grid_ratio="
                             f"{self.ratio!r} below it; extend the anchors with it first")
        return self._below(users)


__all__ = ["UserCountAnchors"]
