"""Rebuild engine states ("worlds") from observations, for search agents.

A search agent that plays fairly may use only its observation (``escoba_env.executors.observation``). This
module turns a batch of observations into an ``EscobaEngine`` whose games are *determinizations*
of them: every public fact (own hand, table, capture piles, played cards, escobas, scores, hand
sizes, stock size, dealer, last capturer, a pending capture choice) is copied from the
observation, and the hidden cards (the observation's "unseen" plane) are dealt at random, from an
explicit generator, to the other seats' hands (at their observed sizes) and to the stock (in a
random order). Nothing else is read, so a search built on these worlds cannot use hidden
information.

Seats of a world are the observer's relative seats: the observer is seat 0 and is the seat to act,
relative seat ``r`` is seat ``r``, relative side ``s`` is side ``s`` (with partnerships the observer's
team is side 0 = seats 0 and 2). Worlds are single-round engines (``single_round=True``): a rollout
stops at the end of the round.

``take_games`` copies chosen game slots of any engine into a new engine (used to replicate worlds
once per candidate move, and by the oracle to replicate the true state).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.engine_compiled import use_compiled_default
from escoba_env.executors.observation import NUM_PLANES, NUM_SCALARS, PLANE, obs_size, scalar_offsets
from escoba_env.rulebook.capture import CARD_VALUES, FIFTEEN, joker_summary, option_summary, single_summary
from escoba_env.rulebook.cards import FULL_DECK, NUM_CARDS, mask_values
from escoba_env.rulebook.rules import Rules

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_STANDARD = np.uint64(FULL_DECK)


@dataclass(frozen=True)
class ObsLayout:
    """Where things are in an observation vector for one rules configuration."""

    width: int
    """Entries per card plane: ``rules.num_cards`` (40 + jokers)."""
    scalars: dict[str, int]
    """Absolute index of each scalar block (the ``SCALARS`` keys)."""
    size: int
    """Length of the observation vector."""


def obs_layout(rules: Rules | None = None, size: int | None = None) -> ObsLayout:
    """Return the observation layout for ``rules`` (or, without rules, for a vector of ``size``).

    Card planes are ``rules.num_cards`` wide (plane ``i`` at ``i * width``, ``PLANE`` gives ``i``);
    the scalars follow the 13 planes in the order of ``SCALARS``.
    """
    if rules is not None:
        width = rules.num_cards
    elif size is not None:
        width, rest = divmod(int(size) - NUM_SCALARS, NUM_PLANES)
        if rest or width < NUM_CARDS:
            raise ValueError(f"{size} is not the length of an observation vector")
    else:
        raise ValueError("obs_layout needs rules or a vector size")
    return ObsLayout(width, scalar_offsets(width), obs_size(width))


def _per_game_attributes() -> tuple[str, ...]:
    """Return the names of the engine's per-game arrays (first axis = game), found by probing."""
    probe = EscobaEngine(7, Rules(num_players=4))
    return tuple(k for k, v in probe.__dict__.items() if isinstance(v, np.ndarray) and v.shape[:1] == (7,))


PER_GAME_ATTRIBUTES = _per_game_attributes()
"""Names of the ``EscobaEngine`` arrays that hold one entry per game (copied by ``take_games``)."""


def take_games(engine: EscobaEngine, games: np.ndarray, *, single_round: bool | None = None) -> EscobaEngine:
    """Return a new engine whose game ``j`` is a copy of game ``games[j]`` of ``engine``.

    ``games`` may repeat slots (to replicate a state). ``single_round`` overrides the copy's mode
    (``True`` makes a rollout stop at the end of the current round).
    """
    games = np.asarray(games, np.int64)
    if games.ndim != 1 or games.size == 0:
        raise ValueError("games must be a non-empty 1-D array of game slots")
    # A fresh engine of the right size supplies its own caches and buffers (objects sized for N);
    # the per-game arrays and the plain settings are copied from ``engine``.
    other = EscobaEngine(len(games), engine.rules)
    for k, v in engine.__dict__.items():
        if k == "_rows":
            continue
        if k in PER_GAME_ATTRIBUTES:
            other.__dict__[k] = v[games]
        elif isinstance(v, np.ndarray):
            other.__dict__[k] = v.copy()
        elif v is None or isinstance(v, (bool, int, float, str, np.integer, Rules)):
            if k != "num_games":
                other.__dict__[k] = v
    if single_round is not None:
        other.single_round = bool(single_round)
        if single_round:
            other.max_rounds = None
            if "autoreset" in other.__dict__:
                other.autoreset = False
    return other


def observation_masks(obs: np.ndarray, rules: Rules | None = None) -> np.ndarray:
    """Return the 13 card planes of each observation as uint64 card masks, shape (K, 13).

    The plane width comes from ``rules`` (40 + jokers) or, without rules, from the vector length.
    """
    obs = np.asarray(obs, np.float32)
    k = obs.shape[0]
    w = obs_layout(rules, obs.shape[1]).width
    bits = np.zeros((k, NUM_PLANES, 64), np.uint8)
    bits[..., :w] = obs[:, : NUM_PLANES * w].reshape(k, NUM_PLANES, w) > 0.5
    packed = np.packbits(bits, axis=-1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8")[..., 0].astype(np.uint64)


def _one_hot_index(block: np.ndarray) -> np.ndarray:
    """Return the index of the 1 in each row of ``block`` (-1 where the row is all zero)."""
    return np.where(block.max(axis=1) > 0.5, block.argmax(axis=1), -1)


def observation_scalars(obs: np.ndarray, rules: Rules, planes: np.ndarray | None = None
                        ) -> dict[str, np.ndarray]:
    """Return the decoded scalars of each observation (integers, relative seats and sides).

    Keys: ``escobas`` (K, 4), ``scores`` (K, 4), ``stock`` (K,), ``hand_sizes`` (K, 4), ``dealer``
    (K,), ``last_capturer`` (K,, -1 nobody), ``capture_phase`` (K,, bool), ``num_players`` (K,),
    ``partnerships`` (K,, bool). The stock size is counted from the planes (unseen cards minus the
    other hands), which holds whatever the deck size. ``planes``: the observations'
    ``observation_masks`` when already computed.
    """
    obs = np.asarray(obs, np.float32)
    lay = obs_layout(rules)
    if obs.ndim != 2 or obs.shape[1] != lay.size:
        raise ValueError(f"observations must have shape (K, {lay.size}) for these rules, got {obs.shape}")
    s = lay.scalars
    hand_sizes = np.rint(obs[:, s["hand_sizes"]: s["hand_sizes"] + 4] * 3).astype(np.int64)
    unseen = (observation_masks(obs, rules) if planes is None else planes)[:, PLANE["unseen"]]
    return {
        "escobas": np.rint(obs[:, s["escobas"]: s["escobas"] + 4]).astype(np.int64),
        "scores": np.rint(obs[:, s["scores"]: s["scores"] + 4] * rules.target_score).astype(np.int64),
        "stock": np.bitwise_count(unseen).astype(np.int64) - hand_sizes[:, 1:].sum(axis=1),
        "hand_sizes": hand_sizes,
        "dealer": _one_hot_index(obs[:, s["dealer"]: s["dealer"] + 4]),
        "last_capturer": _one_hot_index(obs[:, s["last_capturer"]: s["last_capturer"] + 4]),
        "capture_phase": obs[:, s["capture_phase"]] > 0.5,
        "num_players": _one_hot_index(obs[:, s["num_players"]: s["num_players"] + 3]) + 2,
        "partnerships": obs[:, s["partnerships"]] > 0.5,
    }


def capture_summary(table: np.ndarray, card: np.ndarray, taken: np.ndarray | int = 0
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(count, union, intersection)`` of the capture options of ``card`` on ``table``.

    Jokers (ids 40, 41) are wild, played or on the table (docs/rules.md §11): a set of table cards with
    ``k`` jokers and other cards worth ``s`` is an option for a card of value ``c`` when
    ``15 - c - s`` is in ``[k, 10k]``; a played joker adds one wild and no value. Only the options
    that contain ``taken`` (cards already named in a capture choice) are counted; ``union`` and
    ``intersection`` include ``taken`` (0 where count is 0). ``prefer_single`` is not applied.
    Batched: rows with no joker involved take ``option_summary``, the others the engine's
    ``joker_summary``; no loop over games.
    """
    table, card, taken = np.broadcast_arrays(np.asarray(table, np.uint64), np.asarray(card, np.int64),
                                             np.asarray(taken, np.uint64))
    shape = table.shape
    table, card, taken = table.ravel(), card.ravel(), taken.ravel()
    played_joker = card >= NUM_CARDS
    c_val = CARD_VALUES[card]
    t_val = mask_values(taken)
    t_jok = np.bitwise_count(taken >> np.uint64(NUM_CARDS)).astype(np.int64)
    rest = table & ~taken
    plain_rest = rest & _STANDARD
    wild = (rest >> np.uint64(NUM_CARDS) != 0) | played_joker | (t_jok > 0)
    count = np.zeros(table.shape, np.int64)
    union = np.zeros(table.shape, np.uint64)
    inter = np.zeros(table.shape, np.uint64)
    easy = np.flatnonzero(~wild)
    if easy.size:
        c, u, x = option_summary(plain_rest[easy], (FIFTEEN - c_val - t_val)[easy])
        tk = taken[easy]
        ok = (c > 0) & ((tk != 0) | (FIFTEEN - c_val[easy] - t_val[easy] > 0))
        count[easy] = np.where(ok, c, 0)
        union[easy] = np.where(ok, u | tk, _ZERO)
        inter[easy] = np.where(ok, x | tk, _ZERO)
    hard = np.flatnonzero(wild)
    if hard.size:
        # The engine's batched joker summary (every sum of the plain cards in one look-up).
        tk = taken[hard]
        cnt, uni, itr, _ = joker_summary(table[hard], tk, t_val[hard], card[hard], tk == 0, False, 2)
        found = cnt > 0
        count[hard] = cnt
        union[hard] = np.where(found, uni | tk, _ZERO)
        inter[hard] = np.where(found, itr | tk, _ZERO)
    return count.reshape(shape), union.reshape(shape), inter.reshape(shape)


def pending_legal(table: np.ndarray, pending: np.ndarray, taken: np.ndarray, rules: Rules) -> np.ndarray:
    """Return the legal take-card masks of pending capture choices (engine play/take scheme)."""
    pending = np.asarray(pending, np.int64)
    taken = np.asarray(taken, np.uint64)
    table = np.asarray(table, np.uint64)
    value = CARD_VALUES[np.maximum(pending, 0)]
    target = FIFTEEN - value - mask_values(taken)
    _, union, inter = option_summary(table & ~taken & _STANDARD, np.maximum(target, 0))
    if rules.prefer_single:
        # Only a first choice can be pending under prefer_single (several single cards of one value).
        s_count, s_union, s_inter = single_summary(table, FIFTEEN - value)
        use = (taken == 0) & (s_count > 0)
        union = np.where(use, s_union, union)
        inter = np.where(use, s_inter, inter)
    if rules.jokers:
        # The games where a joker is played or lies on the table: the engine's own summary (as
        # computed when the card was played while nothing is named yet).
        jg = np.flatnonzero((pending >= NUM_CARDS) | ((table & ~_STANDARD) != 0))
        if jg.size:
            _, union[jg], inter[jg], stop = joker_summary(
                table[jg], taken[jg], mask_values(taken[jg]), pending[jg], taken[jg] == 0,
                rules.prefer_single, rules.jokers)
            # "Stop": the pending card's own id takes the named cards plus the forced ones when
            # they form an option nested in a larger one (engine docstring).
            legal = union & ~inter
            legal[jg] |= np.where(stop, _ONE << pending[jg].astype(np.uint64), _ZERO)
            return legal
    return union & ~inter


def deal_hidden(unseen: np.ndarray, uniforms: np.ndarray, hand_sizes: np.ndarray, own_hand: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Return (decks (K, W) int8, hands (K, P) uint64) of worlds that deal each row's ``unseen`` cards in
    the order of their ``uniforms`` (one per card id; a stable sort), the public cards first in id order:
    the first hidden cards fill the other seats' hands (``hand_sizes[:, 1:]``, in seat order), the rest
    are the stock; seat 0 holds ``own_hand``. Compiled where Numba runs (the same decks and hands)."""
    if use_compiled_default():
        from .worlds_compiled import compiled_deal_hidden  # the [fast] extra

        return compiled_deal_hidden(unseen, uniforms, hand_sizes, own_hand)
    n, nc = uniforms.shape
    p = hand_sizes.shape[1]
    ids = np.arange(nc)
    is_unseen = ((unseen[:, None] >> ids.astype(np.uint64)[None, :]) & _ONE).astype(bool)
    keys = np.where(is_unseen, uniforms, -1.0)
    deck = np.argsort(keys, axis=1, kind="stable")
    start = nc - np.bitwise_count(unseen).astype(np.int64)
    offset = ids[None, :] - start[:, None]  # position within the hidden block
    cum = np.cumsum(hand_sizes[:, 1:], axis=1)  # (n, p-1)
    seat_of_pos = 1 + (offset[:, :, None] >= cum[:, None, :]).sum(axis=2)
    in_hands = (offset >= 0) & (offset < hand_sizes[:, 1:].sum(axis=1)[:, None])
    bits = _ONE << deck.astype(np.uint64)
    hands = np.zeros((n, p), np.uint64)
    hands[:, 0] = own_hand
    for seat in range(1, p):
        hands[:, seat] = np.bitwise_or.reduce(np.where(in_hands & (seat_of_pos == seat), bits, _ZERO), axis=1)
    return deck.astype(np.int8), hands


def worlds_from_observations(obs: np.ndarray, rules: Rules, rng: np.random.Generator,
                             k: int | np.ndarray = 1) -> EscobaEngine:
    """Return a single-round engine holding ``k`` random determinizations of each observation.

    ``obs`` (K, obs_layout(rules).size) are observations of seats that are to act; ``k`` is an int
    or one count per observation. Games ``sum(k[:i]) .. sum(k[:i+1]) - 1`` are the worlds of
    observation ``i``, with the observer as seat 0 (see the module docstring). Only the observation
    is read; the hidden cards come from ``rng``. Raises ValueError on observations that do not
    match ``rules``.
    """
    obs = np.asarray(obs, np.float32)
    size = obs_layout(rules).size
    if obs.ndim != 2 or obs.shape[1] != size:
        raise ValueError(f"observations must have shape (K, {size}) for these rules, got {obs.shape}")
    kk = np.broadcast_to(np.asarray(k, np.int64), (obs.shape[0],))
    if (kk < 1).any():
        raise ValueError("k must be >= 1 for every observation")
    p, s_n = rules.num_players, rules.num_sides
    planes = observation_masks(obs, rules)
    sc = observation_scalars(obs, rules, planes)
    if (sc["num_players"] != p).any() or (sc["partnerships"] != rules.partnerships).any():
        raise ValueError("observations were made under other rules (players or partnerships differ)")
    # What the observation shows is worked out once per observation, then copied to its worlds.
    hand_sizes = sc["hand_sizes"][:, :p]
    unseen, hand = planes[:, PLANE["unseen"]], planes[:, PLANE["hand"]]
    stock = sc["stock"]  # unseen cards minus the other hands (observation_scalars)
    if (stock < 0).any():
        raise ValueError("inconsistent observation: fewer unseen cards than cards in the other hands")
    if (hand_sizes[:, 0] != np.bitwise_count(hand)).any():
        raise ValueError("inconsistent observation: own hand size")
    table = planes[:, PLANE["table"]]
    pend_mask = planes[:, PLANE["pending"]]
    has_pending = pend_mask != 0
    pending = np.where(has_pending, np.bitwise_count(pend_mask - _ONE).astype(np.int64), -1)
    taken = np.where(has_pending, planes[:, PLANE["taken"]], _ZERO)
    legal = np.where(has_pending, pending_legal(table, np.maximum(pending, 0), taken, rules), hand)

    rows = np.repeat(np.arange(obs.shape[0]), kk)
    n = len(rows)
    e = EscobaEngine(n, rules, single_round=True)
    # Deck order: public cards first (never dealt again), then the hidden cards in random order:
    # the first ones fill the other hands, the last `stock` ones are the stock.
    nc = rules.num_cards
    e.deck[:], e.hands[:] = deal_hidden(unseen[rows], rng.random((n, nc)), hand_sizes[rows], hand[rows])
    e.hand_count[:] = hand_sizes.sum(axis=1)[rows]
    e.stock_pos[:] = (nc - stock)[rows]
    e.table[:] = table[rows]
    e.piles[:] = planes[rows, PLANE["piles"]: PLANE["piles"] + p]
    e.played[:] = planes[rows, PLANE["played"]: PLANE["played"] + p]
    e.escobas[:] = 0
    e.escobas[:, :s_n] = sc["escobas"][rows, :s_n]  # side s's escobas on seat s (side_of(s) == s)
    e.scores[:] = sc["scores"][rows, :s_n]
    e.dealer[:] = sc["dealer"][rows]
    e.to_act[:] = 0
    e.last_capturer[:] = sc["last_capturer"][rows]
    e.pending[:] = pending[rows]
    e.taken[:] = taken[rows]
    e.taken_value[:] = mask_values(taken)[rows]
    e.legal[:] = legal[rows]
    e.done[:] = False
    e.game_ids = np.arange(n, dtype=np.int64)
    return e
