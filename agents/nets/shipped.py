"""The tables of shipped agents: which network plays each table, the strongest agent of each table,
and the default opponent of each table (the terminal game's and the web arena's).

Data and paths only (no agent is imported here); ``agents.spec.shipped_agents`` registers the shipped names
and picks a table's default opponent. Every shipped network's file is found in the installed
``agents`` package (``package_file``), so the names work from any folder and from a wheel. The
model card is ``agents/pretrained/README.md``.
"""

from __future__ import annotations

from pathlib import Path

from escoba_env.rulebook.rules import Rules

SHIPPED_CHECKPOINTS = {(2, False): "agents/pretrained/escoba_2p.pt",
                       (4, True): "agents/pretrained/escoba_2v2.pt",
                       (3, False): "agents/pretrained/escoba_3p.pt"}
"""The shipped neural agent of each table, (players, partnerships) -> path from the repository root."""
PLAIN_CHECKPOINT = "agents/pretrained/escoba_2p_plain.pt"
"""The shipped 2-player network before its endgame fine-tune (``neural-2p-plain``)."""
SOLO_CHECKPOINT = "agents/pretrained/escoba_2p_solo.pt"
"""The phase-gated network-only 2-player agent (``neural-solo``)."""
MOVE_CHECKPOINTS = {(3, False): "agents/pretrained/escoba_3p_move.pt",
                    (4, True): "agents/pretrained/escoba_2v2_move.pt"}
"""The move network of each larger table (``agents.nets.tablenet``; ``neural-3p-move``, ``neural-2v2-move``):
one network scoring every legal move, fitted to the search's per-move values; it beats ``expert``
where the PPO networks of ``SHIPPED_CHECKPOINTS`` do not. Both files also hold a last-deal network that
plays once the stock is empty (``agents.nets.tablenet``)."""
DEFAULT_OPPONENT_TABLES = ((2, False),)
"""Tables whose shipped network is the terminal game's default opponent (it beats ``expert`` there).
At 2v2 and 3 players the move networks beat ``expert`` but lose to the strong search, so those
tables face ``STRONG_AGENTS`` instead."""
STRONG_AGENTS = {(4, True): "strong-2v2", (3, False): "strong-3p"}
"""The strongest shipped agent of each table other than 2 players, (players, partnerships) -> spec:
PIMC search with 1,000 rollouts (``hybrid``, which has no exact endgame at these tables); it beats
two ``expert`` seats where the networks do not."""
FALLBACK_OPPONENT = "expert"
"""The opponent of a table with no shipped agent, or whose shipped agent does not play the rules."""
DEFAULT_OPPONENTS = {(2, False): "neural-2p", (4, True): "strong-2v2", (3, False): "strong-3p"}
"""The default opponent of each table, (players, partnerships) -> spec: the terminal game's and the web
arena's. At 2 players the shipped network (it beats ``expert``); at 2v2 and 3 players the strong
search, which beats those tables' networks head to head (the model card's benchmark cards)."""


def table_name(players: int, partnerships: bool) -> str:
    """Return a table's name as messages write it: '3 players', '4 players with partnerships'."""
    return f"{players} players" + (" with partnerships" if partnerships else "")


def package_file(path: str) -> Path:
    """Return where ``path`` (written from the repository root, ``agents/pretrained/...``) lies in the
    installed ``agents`` package, whichever folder the program runs from."""
    return Path(__file__).resolve().parents[1].joinpath(*Path(path).parts[1:])


def shipped_checkpoint(rules: Rules | None = None) -> Path | None:
    """Return the path of the shipped network of ``rules``' table (default: 2 players), or None if that
    table has none or its file is absent."""
    rules = Rules() if rules is None else rules
    named = SHIPPED_CHECKPOINTS.get((rules.num_players, rules.partnerships))
    return package_file(named) if named and package_file(named).is_file() else None
