"""Versioned benchmark protocols: which deals, which rules, which panel, how many deals.

A protocol version fixes, for each table (``2p``, ``3p``, ``2v2``):

- the **rules** (the defaults of ``escoba_env.Rules`` with the table's players and partnerships);
- the **deal set**: deal ``d`` (``0 <= d < deals``) is the engine's game id ``d`` under the seed
  ``int(sha256("escoba-env bench-<version> <table>")[:16], 16) >> 1``, played once per seat
  rotation, single rounds. The seed comes from a published string, so anyone regenerates the set;
  ``deal_set_digest`` hashes the dealt decks and dealers, and a test pins it: if the engine ever
  deals differently, the digest changes and the protocol needs a new version;
- the **panel**: the agents a card plays against, and the block size (agents are re-seeded per
  block of deals, so the block size is part of the protocol);
- the **seatings** (``orders``): at 3 players ``bench-v1`` plays each lineup in one order of play,
  ``bench-v2`` in both cyclic orders (each on half as many deals, so a card plays as many games).

The digests are **pinned** here (``TableSpec.digests``), not recomputed: ``check_deals`` deals the
set with today's engine and refuses, before anything is played, an engine that deals otherwise.

``--quick`` plays the first ``quick_deals`` deals of the same set: for development, never the
benchmark (its cards say so).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from escoba_env.rulebook.rules import Rules

from ..spec.fingerprint import dealt_digest

TABLES = ("2p", "3p", "2v2")
"""The table sizes of a protocol: 2 players, 3 players, 4 players in two partnerships."""


@dataclass(frozen=True)
class TableSpec:
    """One table of a protocol version."""

    table: str
    players: int
    partnerships: bool
    panel: tuple[str, ...]
    """Agent specs a card plays against (``agents.spec.registry`` names), in this order."""
    deals: int = 5000
    quick_deals: int = 500
    block_deals: int = 100
    digests: tuple[str, str] | None = None
    """The pinned SHA-256 of the full set and of the quick subset (None: an unpublished protocol)."""
    orders: int = 1
    """Orders of play of each lineup: 1, or 2 (3 sides: the lineup and its reverse cyclic order)."""

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


PANEL_3P = ("expert", "search", "neural-3p", "strong-3p")
PROTOCOLS: dict[str, Protocol] = {
    "v1": Protocol("v1", {
        "2p": TableSpec("2p", 2, False, ("random", "greedy", "expert", "search", "neural-solo", "hybrid"),
                        digests=("c648d611443767a4f67a8e594f7414459406a1088c5e4724ca6c7c1a79e912ba",
                                 "66100ebeff4b0d4809d5c5795f93e14ddf861d1ad8edbb03d131102c356442a6")),
        "3p": TableSpec("3p", 3, False, PANEL_3P,
                        digests=("d35413b077a6b6e1240709d84b030539308d23fa883faa53693217eee8fcf45d",
                                 "6082af2b28a4671fdfd192ec6a81c0e4026242b7cb75cb0ee4b9c7363db45e63")),
        "2v2": TableSpec("2v2", 4, True, ("expert", "search", "neural-2v2", "strong-2v2"),
                         digests=("59fa10086d88abc06dce622cdba7053f583780362353c3327e502c9cfb6b37ad",
                                  "60f33cbb27e839d39aaa54ccc27d5ede5d9b910ec8bd6ce1dab76058b955779c")),
    }),
    "v2": Protocol("v2", {
        "3p": TableSpec("3p", 3, False, PANEL_3P, deals=2500, quick_deals=250, orders=2,
                        digests=("8baa0ffc930bfb2aa7834065d2abc8132094d86fe8487cce1d3bfc7b6d82ea80",
                                 "1d78013ae2575f39ca02263053f5817d3160608cc6a67efdd62d33c2ecc164e6")),
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
    p = protocol(version)
    spec = p.table(table)
    n = spec.deals if deals is None else int(deals)
    if not 1 <= n <= spec.deals:
        raise ValueError(f"deals must be in 1..{spec.deals}, got {deals!r}")
    return dealt_digest(spec.rules(), p.seed(table), n)


def pinned_digest(version: str, table: str, quick: bool = False) -> str | None:
    """Return the digest the protocol pins for the table's set (``quick``: its quick subset); None
    for a protocol that pins none (an unpublished one)."""
    spec = protocol(version).table(table)
    return None if spec.digests is None else spec.digests[1 if quick else 0]


def check_deals(version: str, table: str, quick: bool = False) -> str:
    """Deal the table's set with today's engine and return its digest; ValueError (one line naming
    both digests) if the protocol pins another one: this engine cannot play that protocol."""
    p = protocol(version)
    spec = p.table(table)
    got = deal_set_digest(version, table, spec.quick_deals if quick else spec.deals)
    want = pinned_digest(version, table, quick)
    if want is not None and got != want:
        raise ValueError(f"this engine deals bench-{p.version} {table}{' --quick' if quick else ''} "
                         f"with digest {got}, but the protocol pins {want}: it cannot play this protocol")
    return got
