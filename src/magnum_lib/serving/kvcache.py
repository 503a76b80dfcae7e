"""A replica's paged KV memory and its prefix cache (blocks keyed by hash, LRU eviction).

Pages hold ``block_size`` tokens each. A sequence owns the pages of its own tokens; a
prefix-cache entry (one prompt block of ``hash_block`` tokens, ``pages_per_entry``
pages) is shared by every running sequence that references it (a reference count).
Entries nobody references stay resident, in least-recently-used order, until pages
are needed: :meth:`KVPool.make_free` evicts the oldest of them first (vLLM's automatic
prefix caching, SGLang's radix cache do the same). ``free + resident entries' pages +
sequences' own pages == pages`` always holds (checked by the tests).
"""
from __future__ import annotations

from collections import OrderedDict

__all__ = ["KVPool"]


class KVPool:
    """Free-page count plus the prefix cache of one replica."""

    __slots__ = ("pages", "free", "ppe", "refs", "lru", "evictions")

    def __init__(self, pages: int, pages_per_entry: int):
        self.pages = pages
        self.free = pages
        self.ppe = pages_per_entry
        self.refs: dict[int, int] = {}          # hash -> reference count (resident entries)
        self.lru: OrderedDict[int, None] = OrderedDict()  # unreferenced entries, oldest first
        self.evictions = 0

    @property
    def evictable_pages(self) -> int:
        return len(self.lru) * self.ppe

    @property
    def cached_pages(self) -> int:
        return len(self.refs) * self.ppe

    def match(self, hashes, limit: int) -> int:
        """How many leading blocks of ``hashes`` (at most ``limit``) are resident."""
        j = 0
        refs = self.refs
        while j < limit and int(hashes[j]) in refs:
            j += 1
        return j

    def ref(self, h: int) -> None:
        rc = self.refs[h]
        if rc == 0:
            del self.lru[h]
        self.refs[h] = rc + 1

    def unref(self, h: int) -> None:
        rc = self.refs[h] - 1
        self.refs[h] = rc
        if rc == 0:
            self.lru[h] = None  # most recently used end

    def insert(self, h: int) -> bool:
        """Make ``h`` a resident entry referenced once, from pages its caller owned (so
        ``free`` is unchanged); False, and nothing done, when ``h`` is already resident."""
        if h in self.refs:
            return False
        self.refs[h] = 1
        return True

    def make_free(self, n: int) -> bool:
        """Evict unreferenced entries, oldest first, until ``n`` pages are free; True if they are."""
        while self.free < n and self.lru:
            h, _ = self.lru.popitem(last=False)
            del self.refs[h]
            self.free += self.ppe
            self.evictions += 1
        return self.free >= n
