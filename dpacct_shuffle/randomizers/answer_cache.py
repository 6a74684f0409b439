"""The answers of value-keyed randomizers' point queries, kept least recently used first out.

Catalog entries and ``from_matrix`` randomizers record their origin and compare by value; their
:meth:`~dpacct_shuffle.randomizers.Randomizer.epsilon` and
:meth:`~dpacct_shuffle.randomizers.Randomizer.delta` are computed from that value alone, so an
answer is reused for every equal randomizer (the class docstring of
:class:`~dpacct_shuffle.randomizers.Randomizer`, "Immutability").
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

#: Answers of value-keyed randomizers kept by :class:`AnswerCache` (least recently used dropped).
ANSWER_CACHE_SIZE = 4096


class AnswerCache:
    """Least-recently-used answers of the point queries ``epsilon`` and ``delta``, keyed by
    (query, the randomizer's value key, arguments) — never by the object, so a cached answer
    holds no matrix alive. Only sealed randomizers (origin recorded: their bound-defining
    attributes can no longer be reassigned, and equal keys mean equal bounds) are cached."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._answers: OrderedDict[Hashable, float] = OrderedDict()

    def get(self, key: Hashable, compute: Callable[[], float]) -> float:
        """The answer kept for ``key``, else ``compute()`` (then kept)."""
        answer = self._answers.get(key)
        if answer is not None:
            self._answers.move_to_end(key)
            return answer
        answer = compute()
        self._answers[key] = answer
        if len(self._answers) > self._size:
            self._answers.popitem(last=False)
        return answer

    def clear(self) -> None:
        """Forget every answer."""
        self._answers.clear()


ANSWERS = AnswerCache(ANSWER_CACHE_SIZE)


def clear_answer_cache() -> None:
    """Forget every cached answer of the randomizers' ``epsilon`` and ``delta`` (for timing cold
    queries; the answers never change)."""
    ANSWERS.clear()


__all__ = ["ANSWER_CACHE_SIZE", "ANSWERS", "AnswerCache", "clear_answer_cache"]
