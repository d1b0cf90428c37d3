"""The heuristic strategy's decisions are pinned: greedy's, expert's and the search rollout policy's.

"Capture value plus sweep threat" is shared by the ``greedy`` and ``expert`` agents and the search's
default rollout policy; a refactor of that shared strategy must not move a single decision (the
benchmark cards and the shipped networks' teacher labels were made with them). The digests below
were taken on the code before the strategy was written once, over thousands of positions from real
play at every table size and every rule that changes a move (jokers, mesa, prefer-single, the last
play's escoba, the sevens rules), with default and non-default parameters; the hand-made positions
after them name the reason for each expected move. A deliberate change of a heuristic changes a
digest here and needs new benchmark figures.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np
import pytest

from agents.heuristic.expert import ExpertAgent
from agents.heuristic.greedy import GreedyAgent
from agents.search.pimc import rollout_actions
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions
from escoba_env.executors.observation import action_masks, encode
from tests.agents.test_agents_heuristics import decide, position
from tests.helpers import C, M, set_position

TABLES = {
    "2p": Rules(),
    "3p": Rules(num_players=3),
    "4p": Rules(num_players=4),
    "2v2": Rules(num_players=4, partnerships=True),
    "jokers1": Rules(jokers=1),
    "jokers2": Rules(jokers=2),
    "jokers2-3p": Rules(num_players=3, jokers=2),
    "jokers1-4p": Rules(num_players=4, jokers=1),
    "jokers2-2v2": Rules(num_players=4, partnerships=True, jokers=2),
    "mesa": Rules(mesa_deal=True),
    "mesa-jokers1-3p": Rules(num_players=3, mesa_deal=True, jokers=1),
    "prefer_single": Rules(prefer_single=True),
    "prefer_single-jokers2": Rules(prefer_single=True, jokers=2),
    "no_last_escoba": Rules(last_play_escoba=False),
    "no_last_escoba-jokers2-2v2": Rules(num_players=4, partnerships=True, jokers=2, last_play_escoba=False),
    "tiebreak-2v2": Rules(num_players=4, partnerships=True, sevens_rule="most_sevens_tiebreak"),
    "primera-3p": Rules(num_players=3, sevens_rule="primera", bonus_sweeps=True),
}
GAMES = 120
"""Single-round games played per table: 4,000 to 5,000 decisions each."""

# Non-default parameters, so that every weight reaches the decisions (literal: what was pinned).
GREEDY_W = {"escoba": 0.7, "velo": 0.4, "seven": 0.45, "oro": 0.2, "card": 0.1, "joker": 0.6}
EXPERT_W = {"escoba": 1.3, "seven": 0.2, "six": 0.15, "joker": 0.1, "joker_hold": 0.6}
ROLLOUT_W = {"escoba": 1.0, "velo": 0.6, "seven": 0.5, "oro": 0.1, "card": 0.05, "sweep": 0.4, "joker": 0.1}


def _agents(rules: Rules) -> dict[str, object]:
    """Return the pinned observation agents of one table, by digest key."""
    return {
        "greedy": GreedyAgent(rules),
        "expert": ExpertAgent(rules),
        "greedy:weights": GreedyAgent(rules, weights=GREEDY_W),
        "expert:weights": ExpertAgent(rules, weights=EXPERT_W, decided=0.5, partner=1.0),
        "expert:decided=0,partner=0": ExpertAgent(rules, decided=0.0, partner=0.0),
    }


ROLLOUTS = {  # digest key: keyword arguments of rollout_actions (each with its own generator)
    "rollout:count": {"threat": "count"},
    "rollout:peek": {"threat": "peek"},
    "rollout:none": {"threat": "none"},
    "rollout:count,epsilon=0.25": {"threat": "count", "epsilon": 0.25},
    "rollout:peek,weights": {"threat": "peek", "weights": ROLLOUT_W},
    "rollout:count,weights": {"threat": "count", "weights": ROLLOUT_W},
}


@functools.cache
def digests(name: str) -> dict[str, str]:
    """Return the digest of every pinned policy's actions at every decision of ``GAMES`` seeded
    single-round games of table ``name``, and the number of decisions (``"positions"``).

    The games are real play: at each step a seat plays the expert's move (even games) or greedy's
    (odd games), or with probability 0.4 a uniformly random legal action, so the positions are
    varied and not only a heuristic's own lines; capture choices are decisions too. Each agent
    decides from the observation of the seat to act; the rollout policy from the engine state.
    """
    rules = TABLES[name]
    e = EscobaEngine(GAMES, rules, single_round=True)
    e.reset(seed=17)
    mix = np.random.default_rng(5)
    agents = _agents(rules)
    rngs = {k: np.random.default_rng(8) for k in ROLLOUTS}
    hashes = {k: hashlib.sha256() for k in [*agents, *ROLLOUTS]}
    positions = 0
    while not e.done.all():
        live = np.flatnonzero(~e.done)
        seats = e.to_act[live]
        obs, masks = encode(e, seats, live), action_masks(e, seats, live)
        chosen = {}
        for k, agent in agents.items():
            chosen[k] = agent.act_batch(obs, masks).astype(np.int64)
            assert masks[np.arange(len(live)), chosen[k]].all(), k
            hashes[k].update(chosen[k].tobytes())
        for k, kw in ROLLOUTS.items():
            a = rollout_actions(e, rngs[k], **kw).astype(np.int64)
            assert (e.legal[live] >> a[live].astype(np.uint64) & np.uint64(1)).all(), k
            hashes[k].update(np.where(e.done, -1, a).tobytes())
        positions += len(live)
        actions = np.zeros(GAMES, np.int64)
        actions[live] = np.where(live % 2 == 0, chosen["expert"], chosen["greedy"])
        explore = mix.random(GAMES) < 0.4
        actions = np.where(explore, sample_actions(e.legal, mix.random(GAMES)), actions)
        e.step(actions, active=~e.done)
    return {"positions": str(positions), **{k: h.hexdigest()[:16] for k, h in hashes.items()}}


PINNED = {
    '2p': {
        'positions': '4927',
        'greedy': '7e7b2a19a82bfc07',
        'expert': '81735fc90562055a',
        'greedy:weights': '25fff1b72fd022cd',
        'expert:weights': 'f4bebacdb3cc4f30',
        'expert:decided=0,partner=0': '0564faac47bbf338',
        'rollout:count': '762ab951da7cfed7',
        'rollout:peek': 'f3430525fbbf8dd6',
        'rollout:none': '46416ebfe1b4ff9d',
        'rollout:count,epsilon=0.25': 'e3a18ddf93846e14',
        'rollout:peek,weights': '233fc627f98dbce3',
        'rollout:count,weights': 'a18f47f7ddf89cfc',
    },
    '3p': {
        'positions': '4911',
        'greedy': '1c99a81f8017b8b8',
        'expert': 'be98530ee9f17fba',
        'greedy:weights': 'fe17b464b0745ec2',
        'expert:weights': '7b603d10cc7b3200',
        'expert:decided=0,partner=0': 'd6b223244c74055d',
        'rollout:count': 'ebc36da3b7082c5f',
        'rollout:peek': '63237d81a6f0a09f',
        'rollout:none': 'f605779a78ec7dab',
        'rollout:count,epsilon=0.25': '6afed998f826d03b',
        'rollout:peek,weights': '552a673642fd2196',
        'rollout:count,weights': 'b51ca7422f144303',
    },
    '4p': {
        'positions': '4965',
        'greedy': 'c334f58f833fabb0',
        'expert': '03fc40fecf86d987',
        'greedy:weights': 'e66cfd6fa56dbfb8',
        'expert:weights': 'fbf7235119efe3f7',
        'expert:decided=0,partner=0': '49e9397e008c6925',
        'rollout:count': '50118c01e5435923',
        'rollout:peek': '511ccd78ae318ebb',
        'rollout:none': 'a72aff75555f7dfc',
        'rollout:count,epsilon=0.25': '05cfbbd5ff299aaa',
        'rollout:peek,weights': 'c29e8831a8e0fd6e',
        'rollout:count,weights': 'efe1be260c945062',
    },
    '2v2': {
        'positions': '4966',
        'greedy': '3641b9ca81e53357',
        'expert': '14bf8e49d48c3759',
        'greedy:weights': 'f8b63704feaae314',
        'expert:weights': '1d91e3c3fc550acc',
        'expert:decided=0,partner=0': '107278c018afd4f8',
        'rollout:count': '70dd2c5e65003501',
        'rollout:peek': '0ed8a424f6a97978',
        'rollout:none': '11efef58831a0812',
        'rollout:count,epsilon=0.25': '1ee0583627104df6',
        'rollout:peek,weights': '52cfb0a7e467029d',
        'rollout:count,weights': '074786ff1b9ff5b0',
    },
    'jokers1': {
        'positions': '5176',
        'greedy': 'd23d8d570f52d31b',
        'expert': '26bddf6509252f07',
        'greedy:weights': '37e9676c5dcbeef2',
        'expert:weights': 'e1ea58acfe54f355',
        'expert:decided=0,partner=0': '8f696a3afbe589b6',
        'rollout:count': 'ef7ce446bfb7cc60',
        'rollout:peek': '0b80f11f25ba44ab',
        'rollout:none': 'c85241cf4378cb88',
        'rollout:count,epsilon=0.25': 'e7d774b9d45578ff',
        'rollout:peek,weights': '3841e79f5b970fba',
        'rollout:count,weights': '48aa63971a192bc4',
    },
    'jokers2': {
        'positions': '5403',
        'greedy': '3a58bdd7213e40c8',
        'expert': '3ba320c93fdd5045',
        'greedy:weights': '14a7d6f11d9b6999',
        'expert:weights': 'a8b73197a01986ff',
        'expert:decided=0,partner=0': 'a4bec1e56c179e55',
        'rollout:count': '13d7e70ce9b66dfd',
        'rollout:peek': '76dda2c138d9fbf7',
        'rollout:none': '1ac8bf3f5ab7665b',
        'rollout:count,epsilon=0.25': 'cd75305c52c319ed',
        'rollout:peek,weights': '754e604facd94990',
        'rollout:count,weights': '0e86ebdee66a6565',
    },
    'jokers2-3p': {
        'positions': '5436',
        'greedy': '0402a908b6955390',
        'expert': 'efc0bd201c0d4912',
        'greedy:weights': 'e871f2915fe19b93',
        'expert:weights': '816c2c901824e65e',
        'expert:decided=0,partner=0': '7bbc0a5950b599f1',
        'rollout:count': 'd5e1b66d82beda5e',
        'rollout:peek': '5e4dc8c4b7731abe',
        'rollout:none': '3a7563ff4547b7a5',
        'rollout:count,epsilon=0.25': '3e4c68dbe4791609',
        'rollout:peek,weights': 'de18d67afe900aa3',
        'rollout:count,weights': '4de017ca37fbc211',
    },
    'jokers1-4p': {
        'positions': '5200',
        'greedy': '702939aa4b1820bb',
        'expert': '2a7297e2d6c2a61d',
        'greedy:weights': '60f1b65aa65e3c1d',
        'expert:weights': '444ba432425ce75b',
        'expert:decided=0,partner=0': '81f89861bb48315b',
        'rollout:count': 'c973f462971f5f7e',
        'rollout:peek': '22ec0d23e499d601',
        'rollout:none': 'ecb4ec67b2691fcd',
        'rollout:count,epsilon=0.25': '491f24f54dc0304c',
        'rollout:peek,weights': '0b04151c1070db3d',
        'rollout:count,weights': '1617cc7ed81c5b28',
    },
    'jokers2-2v2': {
        'positions': '5407',
        'greedy': '085484a35ff180d6',
        'expert': '58aa5b71b75bcd07',
        'greedy:weights': '4180938115fe3972',
        'expert:weights': '303743c90b13899a',
        'expert:decided=0,partner=0': 'adc381a8309ae1f5',
        'rollout:count': '9ae3ae700d9296cd',
        'rollout:peek': '773726ba85332209',
        'rollout:none': '84f7848462dfdf7f',
        'rollout:count,epsilon=0.25': '9760796837a51fb9',
        'rollout:peek,weights': '67164f41f2ad85e4',
        'rollout:count,weights': '1284626dda81db2a',
    },
    'mesa': {
        'positions': '4890',
        'greedy': 'b70a77e4082697ba',
        'expert': '3d60b1418d1e3c48',
        'greedy:weights': '95cebfd5d37615c2',
        'expert:weights': '577a866ecad10d5a',
        'expert:decided=0,partner=0': '062958ad69a34286',
        'rollout:count': 'e997a9e86437d091',
        'rollout:peek': 'b695aac28a8c8927',
        'rollout:none': '04bc11ad15646cd4',
        'rollout:count,epsilon=0.25': '26cfa9bacc75484c',
        'rollout:peek,weights': '9472fe3daf60ccdc',
        'rollout:count,weights': 'cb70505518516c61',
    },
    'mesa-jokers1-3p': {
        'positions': '5153',
        'greedy': '49871eaaf435ef73',
        'expert': '9d3f4db74405df57',
        'greedy:weights': '9abe0cd3675e3bbe',
        'expert:weights': '706106a9cce3c32a',
        'expert:decided=0,partner=0': 'e1e854baabb55fa6',
        'rollout:count': '1ad8ae59765cfed2',
        'rollout:peek': 'c6dac250f690cddf',
        'rollout:none': '2d939df6029a0c07',
        'rollout:count,epsilon=0.25': '779f3aa916498874',
        'rollout:peek,weights': '658faaf839562b45',
        'rollout:count,weights': '0d75bf509554b817',
    },
    'prefer_single': {
        'positions': '4852',
        'greedy': 'b3e581a9642bae55',
        'expert': '3e5418cdfa881c3d',
        'greedy:weights': 'c10a6f2d4c4f92bd',
        'expert:weights': '9f4b7cf067a99799',
        'expert:decided=0,partner=0': '7dd37f5a50de41af',
        'rollout:count': 'db28d3761566df2c',
        'rollout:peek': '4d012cce70123085',
        'rollout:none': '14871a6fdee5ab1b',
        'rollout:count,epsilon=0.25': '7019d858a93a526f',
        'rollout:peek,weights': '3f26c08d110a6d8b',
        'rollout:count,weights': 'b0f91e3285b4b347',
    },
    'prefer_single-jokers2': {
        'positions': '5144',
        'greedy': '8df12c04f986e6bf',
        'expert': '588fa36884cd33d6',
        'greedy:weights': '2ab796abaf151218',
        'expert:weights': '7fbf414f60be1af3',
        'expert:decided=0,partner=0': 'c6303fff9a9c832e',
        'rollout:count': '4d62b890d3d19e3a',
        'rollout:peek': 'b3fbf708734e9bb9',
        'rollout:none': '0d4023f3efb7e514',
        'rollout:count,epsilon=0.25': '7f69f6723e36f9bd',
        'rollout:peek,weights': '2f3182b738129e32',
        'rollout:count,weights': 'd0d57f52641a6ba0',
    },
    'no_last_escoba': {
        'positions': '4927',
        'greedy': '7e7b2a19a82bfc07',
        'expert': '81735fc90562055a',
        'greedy:weights': '25fff1b72fd022cd',
        'expert:weights': 'f4bebacdb3cc4f30',
        'expert:decided=0,partner=0': '0564faac47bbf338',
        'rollout:count': '762ab951da7cfed7',
        'rollout:peek': 'f3430525fbbf8dd6',
        'rollout:none': '46416ebfe1b4ff9d',
        'rollout:count,epsilon=0.25': 'e3a18ddf93846e14',
        'rollout:peek,weights': '233fc627f98dbce3',
        'rollout:count,weights': 'a18f47f7ddf89cfc',
    },
    'no_last_escoba-jokers2-2v2': {
        'positions': '5407',
        'greedy': '085484a35ff180d6',
        'expert': '58aa5b71b75bcd07',
        'greedy:weights': '4180938115fe3972',
        'expert:weights': '303743c90b13899a',
        'expert:decided=0,partner=0': 'adc381a8309ae1f5',
        'rollout:count': '9ae3ae700d9296cd',
        'rollout:peek': '773726ba85332209',
        'rollout:none': '84f7848462dfdf7f',
        'rollout:count,epsilon=0.25': '9760796837a51fb9',
        'rollout:peek,weights': '67164f41f2ad85e4',
        'rollout:count,weights': '1284626dda81db2a',
    },
    'tiebreak-2v2': {
        'positions': '4956',
        'greedy': '59def721789b9dba',
        'expert': '5ea2bea191879a36',
        'greedy:weights': '7b653e85f8b7834f',
        'expert:weights': '07f753844026cda5',
        'expert:decided=0,partner=0': '783a9c685a06158a',
        'rollout:count': '3600dcdf7a53098f',
        'rollout:peek': 'f7e0d0f9947ccea1',
        'rollout:none': 'e3d2deb1f5546f13',
        'rollout:count,epsilon=0.25': 'a4d0af46527efb18',
        'rollout:peek,weights': '7966c1147b670d00',
        'rollout:count,weights': '9e78b2adbbe3c23c',
    },
    'primera-3p': {
        'positions': '4906',
        'greedy': '2a5887bd877301ee',
        'expert': '542faeef19963832',
        'greedy:weights': 'cecddae1a5053ff4',
        'expert:weights': 'cbb1dac541dbfbe4',
        'expert:decided=0,partner=0': '49317a0eaf2c3ea0',
        'rollout:count': 'bd6fc934de792e52',
        'rollout:peek': '6ad3043015e03ab2',
        'rollout:none': 'df6adbb75debfa8c',
        'rollout:count,epsilon=0.25': 'fc07ef48fefa7503',
        'rollout:peek,weights': '14454288c9a677f9',
        'rollout:count,weights': '35f4a1f3c405d23c',
    },
}


@pytest.mark.parametrize("name", list(TABLES))
def test_heuristic_decisions_are_pinned(name):
    got = digests(name)
    assert int(got["positions"]) >= 3000
    assert got == PINNED[name]


# ------------------------------------------------------------------ hand-made positions


def test_greedy_breaks_an_equal_capture_toward_more_cards():
    # Rb needs 5: 5o (an oro and a card: 0.15) or 1c + 2e + 2b (three cards: 0.15). Equal value:
    # greedy takes more cards, and names the lowest of them first.
    e = position(["Rb", "1b"], "5o 1c 2e 2b Cc")
    e.step(np.array([C("Rb")]))
    assert decide(GreedyAgent(), e) == C("1c")


def test_greedy_discard_ties_go_to_the_lowest_card_id():
    # Nothing captures on Rb; 3c and 3e weigh the same and are worth the same: the lower id, 3c.
    e = position(["3e 3c", "1b 2b"], "Rb", stock="5b 6b 1o 1c 1e 2c")
    assert decide(GreedyAgent(), e) == C("3c")


def _rollout(e: EscobaEngine, threat: str) -> int:
    """Return the default rollout policy's action in game 0 of ``e``."""
    return int(rollout_actions(e, np.random.default_rng(0), threat=threat)[0])


def test_rollout_policy_judges_the_sweep_by_its_threat_model():
    # Table 2c: discarding 3b leaves 5 (a rey sweeps it), discarding Cc leaves 11 (a 4 sweeps it).
    # "none": both are sweepable, so the tie goes to the first card, 3b. "peek": the next hand.
    # "count": what the actor cannot see (every rey or every 4 is in a pile).
    rey_next = position(["3b Cc", "Ro 1o"], "2c", stock="4o 4c 4e 4b 6o 6c")
    four_next = position(["3b Cc", "4o 1o"], "2c", stock="Ro Rc Re Rb 6o 6c")
    assert _rollout(rey_next, "none") == _rollout(four_next, "none") == C("3b")
    assert _rollout(rey_next, "peek") == C("Cc")
    assert _rollout(four_next, "peek") == C("3b")
    reyes_seen = position(["3b Cc", "1o 1c"], "2c", stock="4o 4c 4e 4b 6o 6c", piles=["Ro Rc", "Re Rb"])
    fours_seen = position(["3b Cc", "1o 1c"], "2c", stock="Ro Rc Re Rb 6o 6c", piles=["4o 4c", "4e 4b"])
    assert _rollout(reyes_seen, "count") == C("3b")
    assert _rollout(fours_seen, "count") == C("Cc")


def test_rollout_policy_captures_the_velo_and_names_it_in_the_capture_choice():
    # So takes 7o (the velo) or 3c + 4e; 2e would be a discard (no 13 on the table). The policy plays
    # So, then names 7o.
    e = position(["2e So", "1b 2b"], "7o 3c 4e", stock="Sc Se Sb 6o 6c 6e")
    assert _rollout(e, "count") == C("So")
    e.step(np.array([C("So")]))
    assert _rollout(e, "count") == C("7o")


def test_expert_reads_the_threat_of_the_next_seat_that_still_holds_cards():
    # Three players, two jokers, the short last deal: seat 1's hand is empty, seat 2 holds Cb (the
    # only unseen card). So takes 7c (a seven: 0.5 with the So) or 3o + 4o (two oros: 0.45). Taking
    # 7c leaves 3o 4o 2b, where Cb takes 4o + 2b; taking 3o + 4o leaves 7c 2b, where it takes nothing.
    # So the expert names 3o, judging the threat of seat 2 (seat 1 cannot play).
    rules = Rules(num_players=3, jokers=2)
    e = EscobaEngine(1, rules, single_round=True)
    e.reset(seed=0)
    used = M("So Cb 7c 3o 4o 2b")
    rest = [c for c in range(rules.num_cards) if not used >> c & 1]
    piles = [sum(1 << c for c in rest[k::3]) for k in range(3)]
    set_position(e, [M("So"), 0, M("Cb")], M("7c 3o 4o 2b"), piles, list(range(rules.num_cards)),
                 rules.num_cards, dealer=2)
    e.step(np.array([C("So")]))
    assert e.pending[0] == C("So")
    assert decide(ExpertAgent(rules), e) == C("3o")
