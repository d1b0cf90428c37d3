"""Shared test helpers: card names, explicit deals, scripted play and hand-made positions.

A scripted round is written as the list of plays in turn order, starting with the seat after the
dealer. Each play is a token:

- ``"3o"``: play 3o, which must be a discard (nothing captured);
- ``"5c>Ro"``: play 5c, which must capture exactly Ro (several table cards: ``"6o>2c+4e+3b"``);
- a trailing ``"!"`` (``"5c>Ro!"``) says the capture is an escoba; without it, it must not be.

When a capture has several options, ``play`` names the listed table cards that the legal mask offers,
in the order written, until the capture executes. Because every seat plays exactly three cards per
deal, the hands of every deal follow from the script: ``script_deal`` builds the explicit deal
(hands, table, stock) that makes the script playable.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from escoba_env import EscobaEngine, Rules, parse_card
from escoba_env.executors.step_info import StepInfo


def C(name: str) -> int:
    """Return the id of the card named ``name`` (e.g. ``"7o"``)."""
    return parse_card(name)


def ids(text: str) -> list[int]:
    """Return the ids of a space-separated list of card names."""
    return [parse_card(t) for t in text.split()]


def M(text: str) -> int:
    """Return the mask of a space-separated list of card names."""
    m = 0
    for c in ids(text):
        assert not m >> c & 1, f"{text!r} names a card twice"
        m |= 1 << c
    return m


def names(mask: int) -> set[str]:
    """Return the Spanish short names of the cards in ``mask`` (for readable asserts)."""
    from escoba_env import card_name

    return {card_name(c) for c in range(40) if int(mask) >> c & 1}


def _parse_token(token: str) -> tuple[int, list[int] | None, bool]:
    escoba = token.endswith("!")
    token = token.rstrip("!")
    if ">" in token:
        card, taken = token.split(">")
        return C(card), [C(t) for t in taken.split("+")], escoba
    assert not escoba, f"token {token!r}: an escoba needs a capture"
    return C(token), None, False


def script_deal(num_players: int, dealer: int, table: str, plays: Sequence[str]):
    """Return (hands, table, stock) as card ids for a whole round scripted by ``plays``."""
    p = num_players
    per_deal = 3 * p
    n_deals = 36 // per_deal
    assert len(plays) == 36, f"a round has 36 plays, the script has {len(plays)}"
    cards = [_parse_token(t)[0] for t in plays]
    deals = []
    for k in range(n_deals):
        hands = [[] for _ in range(p)]
        for i, c in enumerate(cards[k * per_deal:(k + 1) * per_deal]):
            hands[(dealer + 1 + i) % p].append(c)
        deals.append(hands)
    stock = []
    for hands in deals[1:]:
        for r in range(3):
            for j in range(p):
                stock.append(hands[(dealer + 1 + j) % p][r])
    table_ids = ids(table)
    assert sorted(cards + table_ids) == list(range(40)), "script and table must use each card once"
    return deals[0], table_ids, stock


def start_script(rules: Rules, dealer: int, table: str, plays: Sequence[str], num_games: int = 1,
                 **engine_kw) -> EscobaEngine:
    """Return an engine reset to the explicit deal that makes the scripted round playable."""
    eng = EscobaEngine(num_games, rules, **engine_kw)
    hands, table_ids, stock = script_deal(rules.num_players, dealer, table, plays)
    eng.reset(7, dealer=dealer, hands=hands, table=table_ids, stock=stock)
    return eng


def play(eng: EscobaEngine, tokens: Sequence[str], game: int = 0) -> list[StepInfo]:
    """Play scripted tokens in game ``game`` (the only unfinished game), checking each capture."""
    infos = []
    for token in tokens:
        card, taken, escoba = _parse_token(token)
        step_cards = [card]
        if taken is not None:
            step_cards += taken
        seat = int(eng.to_act[game])
        assert int(eng.hands[game, seat]) >> card & 1, f"{token}: not in the hand of seat {seat}"
        info = None
        for i, a in enumerate(step_cards):
            if i > 0 and not int(eng.legal[game]) >> a & 1:
                continue  # a card in every remaining option needs no decision
            actions = np.zeros(eng.num_games, np.int64)
            actions[game] = a
            info = eng.step(actions)
            infos.append(info)
            if int(eng.pending[game]) < 0:
                break
        assert info is not None
        assert int(eng.pending[game]) < 0, f"{token}: the capture is still pending"
        expect = 0 if taken is None else (1 << card) | sum(1 << t for t in taken)
        got = int(info.captured[game])
        assert got == expect, f"{token}: captured {sorted(names(got))}, expected {sorted(names(expect))}"
        assert int(info.escoba[game]) == int(escoba), f"{token}: escoba flag {int(info.escoba[game])}"
        assert int(info.actor[game]) == seat
    return infos


def state_arrays(eng: EscobaEngine) -> dict[str, np.ndarray]:
    """Return copies of every public state array of the engine (for before/after comparisons)."""
    return {k: v.copy() for k, v in vars(eng).items() if isinstance(v, np.ndarray)}


def assert_same_state(before: dict[str, np.ndarray], eng: EscobaEngine) -> None:
    """Assert that every state array of ``eng`` equals its copy in ``before``."""
    after = state_arrays(eng)
    assert before.keys() == after.keys()
    for k in before:
        if not np.array_equal(before[k], after[k]):
            np.testing.assert_array_equal(before[k], after[k], err_msg=f"state array {k} changed")


def stock_mask(eng: EscobaEngine, game: int = 0) -> int:
    """Return the mask of the cards still in the stock of one game."""
    pos = int(eng.stock_pos[game])
    return sum(1 << int(c) for c in eng.deck[game, pos:])


def conserved(eng: EscobaEngine) -> np.ndarray:
    """Return, per game, whether hands, table, piles, stock and the pending card partition the deck."""
    n = eng.num_games
    ok = np.zeros(n, bool)
    for g in range(n):
        parts = [int(h) for h in eng.hands[g]] + [int(eng.table[g])] + [int(p) for p in eng.piles[g]]
        parts.append(stock_mask(eng, g))
        if eng.pending[g] >= 0:
            parts.append(1 << int(eng.pending[g]))
        union = 0
        total = 0
        for m in parts:
            union |= m
            total += bin(m).count("1")
        ok[g] = union == (1 << 40) - 1 and total == 40
    return ok


def set_position(e: EscobaEngine, hands: Sequence[int], table: int, piles: Sequence[int], deck: Sequence[int],
                 stock_pos: int, *, dealer: int, last_capturer: int = -1) -> EscobaEngine:
    """Put game 0 of ``e`` at a hand-made position with seat 0 to act, in the play phase.

    ``hands`` and ``piles`` are card masks per seat, ``deck`` the full deck order whose cards from
    ``stock_pos`` on are the stock. No card played and no escoba yet this round. Returns ``e``.
    """
    e.hands[0] = list(hands)
    e.hand_count[0] = sum(bin(int(h)).count("1") for h in hands)
    e.table[0] = table
    e.piles[0] = list(piles)
    e.played[0] = 0
    e.escobas[0] = 0
    e.deck[0] = np.asarray(deck, np.int8)
    e.stock_pos[0] = stock_pos
    e.dealer[0] = dealer
    e.to_act[0] = 0
    e.last_capturer[0] = last_capturer
    e.pending[0] = -1
    e.taken[0] = 0
    e.taken_value[0] = 0
    e.legal[0] = e.hands[0, 0]
    assert e.card_count()[0] == e.rules.num_cards
    return e


def git_state_that_changes_once_play_starts(monkeypatch) -> list:
    """Make ``git_state()`` answer commit ``"before"`` until the first tournament task runs and
    ``"after"`` from then on; return the list of tasks run (a file that names ``"before"`` took its
    source state when the run started)."""
    from agents.tournament import report, runner

    started: list = []
    monkeypatch.setattr(report, "git_state",
                        lambda: {"commit": "after" if started else "before", "dirty": False})
    real_run = runner.run_task
    monkeypatch.setattr(runner, "run_task", lambda t: started.append(t) or real_run(t))
    return started


def journal_blocks(journal) -> int:
    """Return how many finished blocks an evaluation journal holds so far (0 if it does not exist):
    its lines minus the header and the sitting notes, read as raw text while a run may be writing."""
    from pathlib import Path

    try:
        lines = Path(journal).read_text().splitlines()
    except FileNotFoundError:
        return 0
    return sum(1 for line in lines[1:] if not line.startswith('{"sitting":'))


def played_out(engine: EscobaEngine, game: int, card: int, option: int, policy) -> float:
    """Return the mover's round point difference after it plays (card, option) in ``game`` and ``policy``
    plays every seat to the end of the round: a one-game loop, the obvious way."""
    from agents.moves import lowest_card, masks_to_uint64
    from agents.worlds import take_games
    from escoba_env.executors.observation import action_masks, encode

    e = take_games(engine, np.array([game]), single_round=True)
    me = int(e.to_act[0])
    points = np.zeros(2)
    points += e.step(np.array([card])).round_points[0]
    while not e.done[0] and e.pending[0] >= 0:  # name the option's table cards
        legal = masks_to_uint64(action_masks(e, e.to_act, np.array([0])))
        points += e.step(lowest_card(np.array([option], np.uint64) & legal)).round_points[0]
    while not e.done[0]:
        g = np.array([0])
        act = policy.act_batch(encode(e, e.to_act, g), action_masks(e, e.to_act, g))
        points += e.step(act).round_points[0]
    return float(points[me] - points[1 - me])


def other_hand_swapped(e: EscobaEngine) -> EscobaEngine:
    """Return a copy of game 0 of ``e`` whose other hand is swapped with the next cards of the stock: the
    mover's observation is unchanged, the deal is not."""
    from agents.worlds import take_games

    other = 1 - int(e.to_act[0])
    swapped = take_games(e, np.array([0]), single_round=True)
    hand = [c for c in range(40) if (int(swapped.hands[0, other]) >> c) & 1]
    pos = int(swapped.stock_pos[0])
    stock = [int(c) for c in swapped.deck[0, pos:pos + len(hand)]]
    swapped.hands[0, other] = np.uint64(sum(1 << c for c in stock))
    swapped.deck[0, pos:pos + len(hand)] = hand
    return swapped


def record_recipe(script: str, args: Sequence[str], env: dict[str, str], tmp) -> list[list[str]]:
    """Return the steps a bash recipe whose steps are ``"$PYTHON" -m MODULE ARGS...`` runs, each as its
    argument list, by running it with a stand-in ``$PYTHON`` that records them and creates each step's
    ``--out`` file empty (so the recipe's globs and its skipping of finished steps see it)."""
    import shutil
    import subprocess
    from pathlib import Path

    tmp = Path(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    log, fake = tmp / "steps.log", tmp / "recording_python"
    log.write_bytes(b"")
    fake.write_text(f"#!{shutil.which('bash')}\n"
                    f"for a in \"$@\"; do printf '%s\\037' \"$a\"; done >> '{log}'\n"
                    f"printf '\\036' >> '{log}'\n"
                    'while [ $# -gt 0 ]; do [ "$1" = --out ] && : > "$2"; shift; done\n'
                    "exit 0\n")
    fake.chmod(0o755)
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([shutil.which("bash"), script, *args], cwd=root, env={**env, "PYTHON": str(fake)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return [step.split("\x1f")[:-1] for step in log.read_text().split("\x1e")[:-1]]


def replay_recipe(steps: list[list[str]]) -> None:
    """Run recorded recipe steps (``record_recipe``) in this process, in order, as ``MODULE.main(ARGS)``:
    the recipe's own programs on its own arguments, without an interpreter start per step."""
    import importlib
    from pathlib import Path

    for step in steps:
        assert step[0] == "-m", step
        out = Path(step[step.index("--out") + 1])
        out.unlink()  # the recording's empty stand-in
        assert importlib.import_module(step[1]).main(step[2:]) in (0, None), step
        assert out.is_file() and out.stat().st_size > 0, step


def tagged_pids(var: str, value: str) -> list[int]:
    """Return the live processes (other than this one) whose environment holds ``var=value``, from
    /proc: what a test gives a program it starts, inherited by everything that program starts (a
    zombie's environment reads empty, so a dead, unreaped process is not counted)."""
    import os
    from pathlib import Path

    tag = f"{var}={value}".encode()
    out = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if tag in env.read_bytes().split(b"\0"):
                out.append(int(env.parent.name))
        except (OSError, ValueError):
            continue
    return [p for p in out if p != os.getpid()]
