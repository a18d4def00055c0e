"""Random streams named by spawn keys.

Every random stream is ``numpy.random.SeedSequence(seed, spawn_key=key)``: one root ``seed``
and a key that says what the stream is for — never a seed computed from another by arithmetic
(``seed + 1`` of one use is ``seed`` of another). A run of :func:`attnsignal.simulate` draws from
``SeedSequence(seed, spawn_key=(*spawn_prefix, r))``; a sweep's run ``r`` of grid point ``p``
from ``(*spawn_key, p, r)``; the reproduction's streams from
``(experiment, purpose, ..., r)`` (``ExperimentContext.stream``).

A name in a key is its stable 32-bit code (:func:`name_code`: the first four bytes of its
SHA-256, the same on every machine and Python), so that each part of a key is one 32-bit word of
the ``SeedSequence``'s entropy. Codes of different names could coincide (about one pair in 2³²):
whoever hands out names in one place checks they do not (:class:`KeyNames`).

Functions that take a ``seed`` take an ``int >= 0`` or a ``SeedSequence`` (:data:`SEED`);
:func:`stream` derives a named child from either, and :func:`split` turns one back into the
``(seed, spawn_key)`` pair that :func:`attnsignal.simulate` and the sweeps record.

>>> s = stream(2606, "E1", "literal")
>>> s.entropy, s.spawn_key == (name_code("E1"), name_code("literal"))
(2606, True)
>>> split(stream(s, 3)) == (2606, (*s.spawn_key, 3))
True
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .validation import AnyOf, ConfigError, Instance, Integer

__all__ = ["name_code", "spawn_key", "stream", "split", "KeyNames", "SEED", "WORD"]

#: The largest part of a spawn key (a 64-bit word; names are 32-bit codes).
WORD = 2 ** 64 - 1
_POOL_SIZE = np.random.SeedSequence(0).pool_size

#: A seed argument: an integer >= 0 or a ``numpy.random.SeedSequence``.
SEED = AnyOf(Integer(ge=0), Instance(np.random.SeedSequence, "numpy.random.SeedSequence"),
             what="an integer >= 0 or a numpy.random.SeedSequence")


def name_code(name: str) -> int:
    """The stable 32-bit code of ``name`` in a spawn key (SHA-256 of its UTF-8 bytes)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "little")


def spawn_key(*parts: str | int) -> tuple[int, ...]:
    """The spawn key of ``parts``: a name is its :func:`name_code`, an integer itself."""
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(name_code(p))
        elif isinstance(p, (int, np.integer)) and not isinstance(p, bool) and 0 <= p <= WORD:
            out.append(int(p))
        else:
            raise TypeError(f"spawn key part: must be a name or an integer in [0, 2^64); got {p!r}")
    return tuple(out)


def stream(seed: int | np.random.SeedSequence, *parts: str | int) -> np.random.SeedSequence:
    """``SeedSequence(seed, spawn_key=spawn_key(*parts))``; from a ``SeedSequence``, its child
    with ``parts`` appended to its key (its pool size kept)."""
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key,
                                                                *spawn_key(*parts)),
                                      pool_size=seed.pool_size)
    return np.random.SeedSequence(int(seed), spawn_key=spawn_key(*parts))


def split(seed: int | np.random.SeedSequence) -> tuple[int, tuple[int, ...]]:
    """``(root, key)`` with ``SeedSequence(root, spawn_key=key)`` the stream ``seed`` names: an
    integer is ``(seed, ())``. Raises ``ConfigError`` for a ``SeedSequence`` whose entropy is
    not one integer >= 0 or whose pool size is not the default."""
    if not isinstance(seed, np.random.SeedSequence):
        return int(seed), ()
    if not isinstance(seed.entropy, (int, np.integer)) or seed.entropy < 0 or \
            seed.pool_size != _POOL_SIZE:
        raise ConfigError("seed", "must be an integer >= 0 or a SeedSequence of one integer "
                          "entropy >= 0 and the default pool size", seed)
    return int(seed.entropy), tuple(int(k) for k in seed.spawn_key)


class KeyNames:
    """The names handed out as spawn-key parts in one place (a reproduction): refuses a name
    whose code another name already has, so that two streams never share a key by accident."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}

    def code(self, name: str) -> int:
        """``name_code(name)``, checked against the names seen (``RuntimeError`` on a clash)."""
        c = name_code(name)
        seen = self._names.setdefault(c, name)
        if seen != name:
            raise RuntimeError(f"spawn key: the names {seen!r} and {name!r} have the same code "
                               f"{c}; rename one")
        return c

    def key(self, *parts: str | int) -> tuple[int, ...]:
        """:func:`spawn_key` of ``parts``, every name checked (:meth:`code`)."""
        for p in parts:
            if isinstance(p, str):
                self.code(p)
        return spawn_key(*parts)
