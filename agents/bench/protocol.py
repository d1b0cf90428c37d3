"""Versioned benchmark protocols: which deals, which rules, which panel, how many deals.

A protocol version fixes, for each table (``2p``, ``3p``, ``2v2``):

- the **rules** (the defaults of ``escoba_env.Rules`` with the table's players and partnerships);
- the **deal set**: deal ``d`` (``0 <= d < deals``) is the engine's game id ``d`` under the seed
  ``int(sha256("escoba-env bench-<version> <table>")[:16], 16) >> 1``, played once per seat
  rotation, single rounds. The seed comes from a published string, so anyone regenerates the set;
  ``deal_set_digest`` hashes the dealt decks and dealers, and a test pins it: if the engine ever
  deals differently, the digest changes and the protocol needs a new version;
- the **panel**: the agents a card plays against, and the block size (agents are re-seeded per
  block of deals, so the block size is part of the protocol).

``--quick`` plays the first ``quick_deals`` deals of the same set: for development, never the
benchmark (its cards say so).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from escoba_env.rules import Rules

TABLES = ("2p", "3p", "2v2")
"""The table sizes of a protocol: 2 players, 3 players, 4 players in two partnerships."""


@dataclass(frozen=True)
class TableSpec:
    """One table of a protocol version."""

    table: str
    players: int
    partnerships: bool
    panel: tuple[str, ...]
    """Agent specs a card plays against (``agents.registry`` names), in this order."""
    deals: int = 5000
    quick_deals: int = 500
    block_deals: int = 100

    def rules(self) -> Rules:
        """Return the rules of every game at this table."""
        return Rules(num_players=self.players, partnerships=self.partnerships)


@dataclass(frozen=True)
class Protocol:
    """A frozen benchmark protocol version."""

    version: str
    tables: dict[str, TableSpec]

    def seed(self, table: str) -> int:
        """Return the engine seed of the table's deal set (derived from a published string)."""
        self.table(table)
        text = f"escoba-env bench-{self.version} {table}"
        return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16) >> 1

    def table(self, table: str) -> TableSpec:
        """Return one table's spec; ValueError naming the tables for an unknown one."""
        if table not in self.tables:
            raise ValueError(f"unknown table {table!r} in bench-{self.version}; "
                             f"tables: {', '.join(self.tables)}")
        return self.tables[table]


PROTOCOLS: dict[str, Protocol] = {
    "v1": Protocol("v1", {
        "2p": TableSpec("2p", 2, False, ("random", "greedy", "expert", "search", "neural-solo", "hybrid")),
        "3p": TableSpec("3p", 3, False, ("expert", "search", "neural-3p", "strong-3p")),
        "2v2": TableSpec("2v2", 4, True, ("expert", "search", "neural-2v2", "strong-2v2")),
    }),
}
"""Every protocol version; a version never changes once published (tests pin its digests)."""


def protocol(version: str) -> Protocol:
    """Return a protocol version; ValueError naming the known versions for an unknown one."""
    v = version[len("bench-"):] if version.startswith("bench-") else version
    if v not in PROTOCOLS:
        raise ValueError(f"unknown benchmark version {version!r}; known: "
                         + ", ".join(f"bench-{k}" for k in PROTOCOLS))
    return PROTOCOLS[v]


def table_of(rules: Rules) -> str:
    """Return the protocol table name of ``rules`` (``2p``, ``3p`` or ``2v2``)."""
    if rules.partnerships:
        return "2v2"
    return f"{rules.num_players}p"


def deal_set_digest(version: str, table: str, deals: int | None = None) -> str:
    """Return the SHA-256 of the table's deal set: every deal's shuffled deck and dealer, in deal order.

    ``deals``: hash only the first ``deals`` deals (the ``--quick`` subset); default, the whole set.
    """
    from escoba_env.engine import EscobaEngine

    p = protocol(version)
    spec = p.table(table)
    n = spec.deals if deals is None else int(deals)
    if not 1 <= n <= spec.deals:
        raise ValueError(f"deals must be in 1..{spec.deals}, got {deals!r}")
    engine = EscobaEngine(n, spec.rules(), single_round=True)
    engine.reset(p.seed(table), game_ids=np.arange(n))
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(engine.deck, dtype=np.int16).tobytes())
    h.update(np.ascontiguousarray(engine.dealer, dtype=np.int16).tobytes())
    return h.hexdigest()
