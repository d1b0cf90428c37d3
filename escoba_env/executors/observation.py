"""Seat-relative observation vectors, encoded for a whole batch at once.

The card planes are ``W = rules.num_cards`` wide: 40 for the standard deck, 41 or 42 with jokers
(``Rules.jokers``; the jokers are ids 40 and 41). For a given deck width the vector has a fixed
length for every other rules option (seat and side slots are sized for 4 and unused slots are
zero), so one network can read every seat count and scoring variant: ``obs_size(rules)`` =
``13 * W + 26``, which is ``OBS_SIZE`` (546) for the standard 40-card deck. "Relative seat k"
is seat ``(observer + k) % num_players``: slot 0 is always the observer. "Relative side k" is the
side of relative seat k for k < num_sides (with partnerships: slot 0 the observer's team, slot 1
the other team).

<observation layout: generated at import from escoba_env.executors.observation.LAYOUT>

An observation never contains another player's hand or the stock order. A score reads at most
``score_cap(rules) / target_score`` (it saturates there, which only a game whose tied lead plays on
reaches).
"""

from __future__ import annotations

import struct
import sys
from typing import Any

import numpy as np

from ..rulebook.cards import NUM_CARDS

MAX_SEATS = 4
# The layout, written once: (group, slots, content) of the card planes, then of the scalars, in their
# order in the vector. Every offset (``PLANE``, ``SCALARS``, the encoder's indices) and the tables of
# the docstrings (this module's, ``escoba_v0``'s) and of docs/observation.md are derived from it.
LAYOUT: dict[str, tuple[tuple[str, int, str], ...]] = {
    "planes": (
        ("hand", 1, "own hand"),
        ("piles", MAX_SEATS, "cards captured this round by relative seats 0-3 (the capture piles)"),
        ("table", 1, "the table"),
        ("played", MAX_SEATS, "cards played from hand this round by relative seats 0-3"),
        ("unseen", 1, "cards in no public place and not in the own hand (other hands and the stock)"),
        ("pending", 1, "the played card, while its capture is being chosen (one card)"),
        ("taken", 1, "table cards named so far during a capture choice"),
    ),
    "scalars": (
        ("escobas", MAX_SEATS, "escobas this round of relative sides 0-3 (raw counts, at most `W // 2`)"),
        ("scores", MAX_SEATS, "cumulative score of relative sides 0-3 divided by `target_score`, "
                              "at most `score_cap(rules) / target_score`"),
        ("stock", 1, "cards left in the stock / W (the deck size)"),
        ("hand_sizes", MAX_SEATS, "hand sizes of relative seats 0-3 / 3"),
        ("dealer", MAX_SEATS, "the dealer, one-hot over relative seats 0-3"),
        ("last_capturer", MAX_SEATS, "last capturer this round, one-hot over relative seats 0-3 "
                                     "(all 0: nobody yet)"),
        ("capture_phase", 1, "1.0 during a capture choice (the actions name table cards), else 0"),
        ("num_players", 3, "number of players, one-hot over 2, 3, 4"),
        ("partnerships", 1, "1.0 with partnerships"),
    ),
}


def _offsets(groups: tuple[tuple[str, int, str], ...]) -> dict[str, int]:
    """Return the first slot of each group of ``groups``, laid end to end in their order."""
    out, at = {}, 0
    for name, slots, _ in groups:
        out[name] = at
        at += slots
    return out


PLANE = _offsets(LAYOUT["planes"])
"""The first plane of each plane group (``piles`` and ``played``: relative seat 0's)."""
_SCALAR_OFFSETS = _offsets(LAYOUT["scalars"])  # from the start of the scalars (index NUM_PLANES * W)
NUM_PLANES = sum(slots for _, slots, _ in LAYOUT["planes"])
NUM_SCALARS = sum(slots for _, slots, _ in LAYOUT["scalars"])
OBS_SIZE = NUM_PLANES * NUM_CARDS + NUM_SCALARS
"""Length of the observation vector of the standard 40-card game (546); see ``obs_size``."""
SCALARS = {k: NUM_PLANES * NUM_CARDS + v for k, v in _SCALAR_OFFSETS.items()}
"""Index of each scalar group in the standard 40-card game; see ``scalar_offsets``."""
LAYOUT_MARK = "<observation layout: generated at import from escoba_env.executors.observation.LAYOUT>"
"""Where a docstring shows the layout tables (``layout_doc`` replaces it at import)."""


def _span(first: int, slots: int) -> str:
    """Return ``first`` or the range ``first-last`` of ``slots`` consecutive indices."""
    return str(first) if slots == 1 else f"{first}-{first + slots - 1}"


def layout_tables() -> tuple[str, str]:
    """Return the Markdown tables of the card planes and of the scalars, built from ``LAYOUT``.

    The indices are those of the 40-card deck; the offsets are ``PLANE`` and ``SCALARS``, the
    very numbers the encoder writes at.
    """
    planes = ["| plane | indices (W = 40) | name in `PLANE` | content |", "|---|---|---|---|"]
    for name, slots, content in LAYOUT["planes"]:
        k = PLANE[name]
        planes.append(f"| {_span(k, slots)} | {_span(NUM_CARDS * k, NUM_CARDS * slots)} | `{name}` "
                      f"| {content} |")
    scalars = ["| indices (W = 40) | name in `SCALARS` | content |", "|---|---|---|"]
    for name, slots, content in LAYOUT["scalars"]:
        scalars.append(f"| {_span(SCALARS[name], slots)} | `{name}` | {content} |")
    return "\n".join(planes), "\n".join(scalars)


def layout_doc() -> str:
    """Return the layout as the docstrings show it: each table under the sentence that reads it."""
    planes, scalars = layout_tables()
    return (f"Card planes (W entries each, index = card id, 1.0 where the card is in the set; plane `k`\n"
            f"occupies indices `W * k` to `W * k + W - 1`; `PLANE` gives the plane numbers):\n\n{planes}\n\n"
            f"Scalars, from index `{NUM_PLANES} * W` (the indices below are those of the 40-card deck, "
            f"`SCALARS`;\nwith jokers every scalar index is `{NUM_PLANES} * jokers` higher, "
            f"`scalar_offsets(rules)`):\n\n{scalars}")


if __doc__:  # None under python -OO
    __doc__ = __doc__.replace(LAYOUT_MARK, layout_doc())
# The encoder's offsets, named: card planes, then scalars counted from the start of the scalars.
_P_HAND, _P_PILES, _P_TABLE, _P_PLAYED = PLANE["hand"], PLANE["piles"], PLANE["table"], PLANE["played"]
_P_UNSEEN, _P_PENDING, _P_TAKEN = PLANE["unseen"], PLANE["pending"], PLANE["taken"]
_S_ESCOBAS, _S_SCORES, _S_STOCK = (_SCALAR_OFFSETS[k] for k in ("escobas", "scores", "stock"))
_S_HANDS, _S_DEALER, _S_LAST = (_SCALAR_OFFSETS[k] for k in ("hand_sizes", "dealer", "last_capturer"))
_S_PHASE, _S_PLAYERS, _S_PARTNERS = (_SCALAR_OFFSETS[k] for k in ("capture_phase", "num_players",
                                                                    "partnerships"))
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_I63 = np.int64(63)


def round_max_points(rules: Any) -> int:
    """Return the most points one side can make in one round of ``rules``.

    One point each for cards, oros, the velo and sevens (two each for oros and sevens with
    ``bonus_sweeps``), plus one per escoba: an escoba takes the played card and at least one table
    card, so a round holds at most ``W // 2`` of them (the initial fifteen's two included).
    """
    return 4 + (2 if rules.bonus_sweeps else 0) + num_cards_of(rules) // 2


def score_cap(rules: Any) -> int:
    """Return the score at which the observed score saturates: ``target_score + round_max_points``.

    A game ends after the round in which a side reaches the target, so a score exceeds the target
    by at most one round's points, except while the lead is tied (the game plays on): there, and
    only there, the observation reads ``score_cap / target_score`` for any higher score.
    """
    return rules.target_score + round_max_points(rules)


def num_cards_of(rules: Any = None) -> int:
    """Return the deck width W of ``rules`` (a ``Rules``, an int width, or None for 40)."""
    if rules is None:
        return NUM_CARDS
    if isinstance(rules, (int, np.integer)) and not isinstance(rules, bool):
        return int(rules)
    return int(rules.num_cards)


def obs_size(rules: Any = None) -> int:
    """Return the observation length ``13 * W + 26`` for ``rules`` (546 for the 40-card deck)."""
    return NUM_PLANES * num_cards_of(rules) + NUM_SCALARS


def scalar_offsets(rules: Any = None) -> dict[str, int]:
    """Return the index of each scalar group for ``rules`` (``SCALARS`` for the 40-card deck)."""
    base = NUM_PLANES * num_cards_of(rules)
    return {k: base + v for k, v in _SCALAR_OFFSETS.items()}


def plane_slice(name: str, rules: Any = None, seat: int = 0) -> slice:
    """Return the index slice of plane ``PLANE[name] + seat`` for ``rules``' deck width."""
    w = num_cards_of(rules)
    k = PLANE[name] + seat
    return slice(w * k, w * (k + 1))


def _rows(engine, games):
    """Return (games int64 array, whether it is every game in order)."""
    if games is None:
        return engine.rows, True
    return np.asarray(games, np.int64), False


def observer_planes(engine, seats: np.ndarray, games: np.ndarray | None = None) -> np.ndarray:
    """Return the 13 card-plane masks (len(games), 13) uint64 seen by ``seats`` in ``games``."""
    games, whole = _rows(engine, games)
    seats = np.broadcast_to(np.asarray(seats, np.int64), games.shape)
    cols, _, _ = _planes(engine, seats, games, whole)
    masks = np.zeros((len(games), NUM_PLANES), np.uint64)
    for lo, hi, c in _RUNS[engine.num_players]:
        for i in range(hi - lo):
            masks[:, lo + i] = cols[c + i]
    return masks


def _plane_groups(p: int) -> list[tuple[int, int, int]]:
    """Return the runs of planes in use with ``p`` players: (first plane, end plane, compact column).

    The seat slots of ``piles`` and ``played`` beyond ``p`` are always empty, so the planes in use are
    three runs of ``LAYOUT``: hand + piles, table + played, and unseen to taken.
    """
    runs: list[tuple[int, int, int]] = []
    col = 0
    for name, slots, _ in LAYOUT["planes"]:
        lo, used = PLANE[name], p if slots == MAX_SEATS else slots
        if runs and runs[-1][1] == lo:  # this group continues the run before it
            runs[-1] = (runs[-1][0], lo + used, runs[-1][2])
        else:
            runs.append((lo, lo + used, col))
        col += used
    return runs


_RUNS = {p: _plane_groups(p) for p in range(2, MAX_SEATS + 1)}


def _planes(engine, seats, games, whole):
    """Return (the 2P + 5 plane masks in use, in ``_plane_groups`` order, hands, indices).

    Each mask is a (K,) uint64 array. ``hands[j]`` is the hand of relative seat j and ``idx[j]``
    its index in the flat (N * P) per-seat arrays: one ``take`` per seat, no 2-D gathers.
    """
    p = engine.num_players
    base = games * p
    if p == 2:
        idx = [base + seats, base + (seats ^ 1)]
    else:
        idx = [base + seats]
        for j in range(1, p):
            r = seats + j
            r -= p * (r >= p)
            idx.append(base + r)
    hands_flat = engine.hands.reshape(-1)
    piles_flat = engine.piles.reshape(-1)
    played_flat = engine.played.reshape(-1)
    hands = [np.take(hands_flat, i, mode="clip") for i in idx]
    piles = [np.take(piles_flat, i, mode="clip") for i in idx]
    played = [np.take(played_flat, i, mode="clip") for i in idx]
    table = engine.table if whole else engine.table[games]
    pending = engine.pending if whole else engine.pending[games]
    taken = engine.taken if whole else engine.taken[games]
    # the pending card's bit where a capture is pending (pending >= 0), else 0
    pend = _ONE << (pending & _I63).view(np.uint64)
    pend &= (~(pending >> _I63)).view(np.uint64)
    public = hands[0] | table
    for m in (*piles, *played, pend, taken):
        public |= m
    unseen = np.bitwise_and(~public, np.uint64((1 << engine.rules.num_cards) - 1), out=public)
    return [hands[0], *piles, table, *played, unseen, pend, taken], hands, idx


def _pack(cols: list[np.ndarray], w: int) -> np.ndarray:
    """Return the W-bit masks ``cols`` laid end to end as one bit string per row, (K, words) uint64.

    Mask ``i`` occupies bits ``i * W`` to ``i * W + W - 1``, so unpacking the words gives the
    planes already W wide and contiguous (no per-plane slicing of 64-bit groups).
    """
    k = len(cols[0])
    nw = -(-len(cols) * w // 64)
    words: list[np.ndarray | None] = [None] * nw
    for i, m in enumerate(cols):
        j, sh = divmod(i * w, 64)
        part = m << np.uint64(sh) if sh else m
        words[j] = part if words[j] is None else words[j] | part
        if sh + w > 64:
            part = m >> np.uint64(64 - sh)
            words[j + 1] = part if words[j + 1] is None else words[j + 1] | part
    out = np.empty((k, nw), np.uint64)
    for j, x in enumerate(words):
        out[:, j] = x
    return out


def encode(engine, seats, games=None, out: np.ndarray | None = None, *, clean: bool = False
           ) -> np.ndarray:
    """Return float32 observations (len(games), obs_size(rules)) of ``seats`` in ``games`` (default: all).

    Writes into ``out`` when given (it must be float32 of the right shape). ``clean=True`` says
    that ``out`` was last written by ``encode`` for the same engine, so the entries that are zero
    for every observation of these rules (unused seat and side slots) are zero already and are not
    written again (the vector env's own buffer). One game is encoded from Python ints (the
    per-step path of the one-game faces); a batch with a fixed number of NumPy calls, whatever
    its size.
    """
    games, whole = _rows(engine, games)
    k = len(games)
    seats = np.asarray(seats, np.int64)
    if k == 1:
        if out is None:
            out = np.empty((1, obs_size(engine.rules)), np.float32)
        encode_one(engine, int(seats.reshape(-1)[0]), int(games[0]), out[0])
        return out
    seats = np.broadcast_to(seats, games.shape)
    rules = engine.rules
    w, p = rules.num_cards, engine.num_players
    if out is None:
        out = np.empty((k, NUM_PLANES * w + NUM_SCALARS), np.float32)
    cols, hands, idx = _planes(engine, seats, games, whole)
    # The planes in use packed end to end, one flat unpack (unpackbits' fast path), then one
    # casting copy per run of planes (contiguous on both sides); the empty seat slots are zeroed.
    words = _pack(cols, w)
    bits = np.unpackbits(words.view(np.uint8).reshape(-1), bitorder="little").reshape(k, 64 * words.shape[1])
    pw = NUM_PLANES * w
    planes = out[:, :pw].reshape(k, NUM_PLANES, w)
    for lo, hi, c in _RUNS[p]:
        planes[:, lo:hi] = bits[:, c * w:(c + hi - lo) * w].reshape(k, hi - lo, w)
    sc = out[:, pw:]
    if not clean:
        if p < MAX_SEATS:
            planes[:, _P_PILES + p:_P_PILES + MAX_SEATS] = 0
            planes[:, _P_PLAYED + p:_P_PLAYED + MAX_SEATS] = 0
        sc[:] = 0
    # escobas and scores of relative sides 0..S-1
    esc_flat = engine.escobas.reshape(-1)
    scores_flat = engine.scores.reshape(-1)
    cap = score_cap(rules)
    if rules.partnerships:
        base4 = games * 4
        base2 = games * 2
        side0 = seats & 1
        for j, side in enumerate((side0, side0 ^ 1)):
            i = base4 + side
            sc[:, _S_ESCOBAS + j] = np.take(esc_flat, i, mode="clip") + np.take(esc_flat, i + 2, mode="clip")
            side_scores = np.take(scores_flat, base2 + side, mode="clip")
            sc[:, _S_SCORES + j] = np.minimum(side_scores, cap) / rules.target_score
    else:
        for j in range(p):
            sc[:, _S_ESCOBAS + j] = np.take(esc_flat, idx[j], mode="clip")
            own_scores = np.take(scores_flat, idx[j], mode="clip")
            sc[:, _S_SCORES + j] = np.minimum(own_scores, cap) / rules.target_score
    stock_pos = engine.stock_pos if whole else engine.stock_pos[games]
    sc[:, _S_STOCK] = (w - stock_pos) / w
    for j in range(p):
        sc[:, _S_HANDS + j] = np.bitwise_count(hands[j]) / 3.0
    dealer = engine.dealer if whole else engine.dealer[games]
    lc = engine.last_capturer if whole else engine.last_capturer[games]
    rel_dealer = dealer - seats
    rel_dealer += p * (rel_dealer < 0)
    rel_lc = lc - seats
    rel_lc += p * (rel_lc < 0)
    rel_lc |= lc >> _I63  # -1 where nobody has captured yet
    for j in range(p):
        sc[:, _S_DEALER + j] = rel_dealer == j
        sc[:, _S_LAST + j] = rel_lc == j
    pending = engine.pending if whole else engine.pending[games]
    sc[:, _S_PHASE] = pending >= 0
    sc[:, _S_PLAYERS + p - 2] = 1.0
    sc[:, _S_PARTNERS] = float(rules.partnerships)
    return out


# The float32 bytes (0.0 or 1.0) of the 8 bits of each byte value, bit 0 first, and the packer of
# the scalars: a one-game observation is assembled as bytes and read by one NumPy call.
_BYTE_F32 = [np.unpackbits(np.array([b], np.uint8), bitorder="little").astype("<f4").tobytes()
             for b in range(256)]
_pack_scalars = struct.Struct(f"<{NUM_SCALARS}f").pack
# The int8 bytes of the 8 bits of each byte value, bit 0 first: a one-game mask is assembled from
# these with bytes.join (one NumPy call in all).
_BYTE_I8 = [np.unpackbits(np.array([b], np.uint8), bitorder="little").tobytes() for b in range(256)]


def encode_one(engine, seat: int, game: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    """Return the float32 observation (obs_size(rules),) of ``seat`` in one ``game`` of a batched engine.

    The same vector as ``encode`` (the tests compare them), read into Python ints and built by
    ``encode_state``. Writes into ``out`` when given.
    """
    return encode_state(engine.rules, seat, engine.hands[game].tolist(), engine.piles[game].tolist(),
                        engine.played[game].tolist(), engine.table.item(game), engine.pending.item(game),
                        engine.taken.item(game), engine.escobas[game].tolist(),
                        engine.scores[game].tolist(), engine.stock_pos.item(game),
                        engine.dealer.item(game), engine.last_capturer.item(game), out)


def encode_state(rules, seat: int, hands: list[int], piles: list[int], played: list[int], table: int,
                 pending: int, taken: int, escobas: list[int], scores: list[int], stock_pos: int,
                 dealer: int, last_capturer: int, out: np.ndarray | None = None) -> np.ndarray:
    """Return the float32 observation of ``seat`` from one game's state given as Python ints.

    Per-seat lists are indexed by absolute seat (``scores`` by side). The vector is assembled as
    bytes (the planes as one bit string, 16 bits at a time through a table of their float32
    bytes; the scalars packed by ``struct``) and read by one NumPy call: the one-game executor
    and faces call it once per step, where NumPy's per-call overhead would dominate. Writes into
    ``out`` when given.
    """
    w, p = rules.num_cards, rules.num_players
    rel = _REL[p][seat]
    pend = 1 << pending if pending >= 0 else 0
    own = hands[seat]
    public = own | table | taken | pend
    # The 13 planes as one bit string (plane k in bits k * W ..), then 4 float32 bytes per bit.
    bits = (own << (_P_HAND * w)) | (table << (_P_TABLE * w)) | (pend << (_P_PENDING * w)) \
        | (taken << (_P_TAKEN * w))
    shift = _P_PILES * w
    played_shift = (_P_PLAYED - _P_PILES) * w
    for r in rel:
        m = piles[r]
        public |= m
        bits |= m << shift
        m = played[r]
        public |= m
        bits |= m << (shift + played_shift)
        shift += w
    bits |= (((1 << w) - 1) & ~public) << (_P_UNSEEN * w)
    sc = [0.0] * NUM_SCALARS
    target = rules.target_score
    cap = score_cap(rules)
    if rules.partnerships:
        for j in range(2):
            side = (seat + j) % 2
            sc[_S_ESCOBAS + j] = escobas[side] + escobas[side + 2]
            sc[_S_SCORES + j] = min(scores[side], cap) / target
    else:
        for j, r in enumerate(rel):
            sc[_S_ESCOBAS + j] = escobas[r]
            sc[_S_SCORES + j] = min(scores[r], cap) / target
    sc[_S_STOCK] = (w - stock_pos) / w
    for j, r in enumerate(rel):
        sc[_S_HANDS + j] = hands[r].bit_count() / 3.0
    sc[_S_DEALER + (dealer - seat) % p] = 1.0
    if last_capturer >= 0:
        sc[_S_LAST + (last_capturer - seat) % p] = 1.0
    sc[_S_PHASE] = 1.0 if pending >= 0 else 0.0
    sc[_S_PLAYERS + p - 2] = 1.0
    sc[_S_PARTNERS] = 1.0 if rules.partnerships else 0.0
    n = NUM_PLANES * w
    chunks = memoryview(bits.to_bytes(-(-n // 16) * 2, "little")).cast("H")
    raw = b"".join(map(_chunk_bytes(), chunks))[:4 * n] + _pack_scalars(*sc)
    if out is None:
        return np.frombuffer(bytearray(raw), np.float32)
    out[:] = np.frombuffer(raw, np.float32)
    return out


# Relative seats (observer first) of every seat, per number of players.
_REL = {p: [[(seat + j) % p for j in range(p)] for seat in range(p)] for p in (2, 3, 4)}


def _chunk_bytes():
    """Return the look-up 16-bit chunk -> its 16 float32 (0.0 / 1.0) bytes, built on first use (6 MB)."""
    global _CHUNK_GET
    if _CHUNK_GET is None:
        if sys.byteorder == "little":  # chunks are read as native unsigned shorts
            table = [lo + hi for hi in _BYTE_F32 for lo in _BYTE_F32]
        else:
            table = [hi + lo for hi in _BYTE_F32 for lo in _BYTE_F32]
        _CHUNK_GET = table.__getitem__
    return _CHUNK_GET


_CHUNK_GET = None


def action_masks(engine, seats, games=None, out: np.ndarray | None = None) -> np.ndarray:
    """Return int8 action masks (len(games), W): the legal actions for the seat to act, else 0.

    Writes into ``out`` when given (int8 of the right shape).
    """
    games, whole = _rows(engine, games)
    seats = np.broadcast_to(np.asarray(seats, np.int64), games.shape)
    w = engine.rules.num_cards
    legal = engine.legal if whole else engine.legal[games]
    to_act = engine.to_act if whole else engine.to_act[games]
    legal = np.where(to_act == seats, legal, _ZERO)
    b = np.unpackbits(legal.view(np.uint8), bitorder="little").reshape(len(legal), 64)[:, :w]
    if out is None:
        return b.view(np.int8).copy()
    out.view(np.uint8)[:] = b
    return out


def action_mask_one(engine, seat: int, game: int = 0) -> np.ndarray:
    """Return the int8 action mask (W,) of ``seat`` in one ``game`` (zeros if it is not to act)."""
    legal = engine.legal.item(game) if engine.to_act.item(game) == seat else 0
    return mask_array(legal, engine.rules.num_cards)


def mask_array(legal: int, w: int) -> np.ndarray:
    """Return the int8 array (W,) of the bits of the int mask ``legal`` (one NumPy call)."""
    raw = _MASK_BYTES.get(legal)
    if raw is None:
        if len(_MASK_BYTES) >= 1 << 16:
            _MASK_BYTES.clear()
        raw = _MASK_BYTES[legal] = b"".join(map(_BYTE_I8.__getitem__, legal.to_bytes(6, "little")))
    return np.frombuffer(bytearray(raw[:w]), np.int8)


_MASK_BYTES: dict[int, bytes] = {}

