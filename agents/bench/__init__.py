"""The benchmark protocol: frozen deal sets, a fixed panel per table, report cards, learned best
responses and the leaderboard (``escoba-bench``; ``docs/benchmark.md``)."""

from .protocol import (
    PROTOCOLS,
    Protocol,
    TableSpec,
    check_deals,
    deal_set_digest,
    pinned_digest,
    protocol,
    table_of,
)

__all__ = ["PROTOCOLS", "Protocol", "TableSpec", "check_deals", "deal_set_digest", "pinned_digest",
           "protocol", "table_of"]
