# noqa: D212, D415
"""
# Escoba

The Spanish fishing card game Escoba ("broom"), for 2, 3 or 4 players or two teams of two, as a
PettingZoo AEC environment in the conventions of PettingZoo's classic environments. Every rule is
in ``docs/rules.md``; this page documents the environment.

| Import             | `from escoba_env import escoba_v0`                                  |
|--------------------|---------------------------------------------------------------------|
| Creation           | `escoba_v0.env(**config)` or `pettingzoo.make("aec", "escoba/escoba-v0")` |
| Actions            | Discrete                                                            |
| Parallel API       | No                                                                  |
| Manual Control     | No                                                                  |
| Agents             | `agents= ['player_0', ..., 'player_{n-1}']`                         |
| Agents             | 2, 3 or 4                                                           |
| Action Shape       | Discrete(40); Discrete(40 + jokers) with jokers                     |
| Action Values      | [0, 39] (a card id); 40, 41 are the jokers                          |
| Observation Shape  | (546,) float32 + `action_mask` (40,) int8 (W = 40 + jokers: 13 W + 26, W) |
| Observation Values | [0, 1] for card planes and most scalars (see below)                 |

An episode is a whole game to the target score (default), or a single round
(`episode="round"`). The player after the dealer plays first; seats take turns, except that the
same seat acts again while it chooses which table cards a capture takes.

### Arguments

``` python
escoba_v0.env(
    num_players=2, partnerships=False, target_score=21, sevens_rule="most_sevens",
    bonus_sweeps=False, prefer_single=False, last_play_escoba=True, initial_fifteen=True,
    jokers=0, mesa_deal=False, episode="game", reward="game", max_rounds=None, render_mode=None, french=False,
)
```

- every field of `escoba_env.Rules` is a keyword argument (or pass `rules=Rules(...)` instead),
  including the variants of docs/rules.md §11: `jokers` (0, 1 or 2 wild cards, ids 40 and 41; the
  action space and every card plane grow to `W = 40 + jokers`) and `mesa_deal` (escoba de mesa);
- `episode`: `"game"` (play rounds until a side wins) or `"round"` (one round is one episode);
- `reward`: `"game"` (+1 / -1 at the end of the game) or `"round_points"` (see Rewards);
- `max_rounds`: cut a game that has not ended after this many rounds (a truncation);
- `render_mode`: `None`, `"ansi"` (`render()` returns the text), `"human"` (prints it, also
  after every step) or `"rgb_array"` (an RGB picture of the table, the hand of the seat to act,
  the capture piles and the scores, as a uint8 array; needs the `[render]` extra, Pillow);
- `french`: render cards with French names and suit symbols (`7♦`) instead of `7o`.

Bad values raise `ValueError`.

### Observation Space

The observation is a dictionary which contains an `'observation'` element, the float32 vector
described below, and an `'action_mask'` which holds the legal moves, described in the Legal
Actions Mask section.

The vector is seat-relative: it is what the observing player sees, with the observer always in
relative seat 0. This allows for self-play. It never contains another player's hand or the order
of the stock. Its length is the same for every rules configuration of one deck size: seat and
side slots are sized for 4, unused slots are 0 (546 for the 40-card deck; with jokers the planes
are `W = 40 + jokers` wide, see `observation.obs_size(rules)`). "Relative seat k" is seat
`(observer + k) % num_players`; "relative side k" is the side of relative seat k (with
partnerships: slot 0 the observer's team, slot 1 the other team). The layout is defined in
`escoba_env/executors/observation.py` (`LAYOUT`, from which `PLANE`, `SCALARS`,
`scalar_offsets(rules)` and these tables are built):

<observation layout: generated at import from escoba_env.executors.observation.LAYOUT>

With the 40-card deck (W = 40), plane `k` occupies indices `40 * k` to `40 * k + 39`; index
`40 * k + c` is card id `c`, where `c = 4 * (value - 1) + suit` (suit 0 oros, 1 copas,
2 espadas, 3 bastos; values 8, 9, 10 are sota, caballo, rey). So index 24 is the velo (7 of oros)
in the own hand, and index 224 the velo on the table. With jokers, ids 40 and 41 are the jokers
and every plane is W = 40 + jokers wide.

Every bound of the space is finite and follows from the rules. Escoba counts are raw counts, at
most `W // 2` in a round (each escoba takes the played card and a table card). Scores divided by
the target exceed 1 by at most one round's points: the observed score saturates at
`observation.score_cap(rules)` = `target_score` + the most points of one round (4, 6 with
`bonus_sweeps`, plus `W // 2` escobas), which only a game whose tied lead plays on can reach, so
the upper bound of indices 524-527 is `score_cap / target_score` (45 / 21 by default); every
other index lies in [0, 1].

#### Legal Actions Mask

The legal moves available to the current agent are found in the `action_mask` element of the
dictionary observation: an int8 vector of W entries (40, or 40 + jokers), 1 where the action is legal. The
`action_mask` is all zeros for any agent except the one whose turn it is. In `env()`, taking an
illegal move ends the game with a reward of -1 for the illegally moving agent and 0 for all other
agents (PettingZoo's `TerminateIllegalWrapper`). `raw_env` instead raises a `ValueError` that names
the action and the legal ones, and leaves its state unchanged.

By default `infos` hold only fixed-shape, JSON-able values (the round-end points, scores and
categories, and the winner at the end), so that replay buffers such as Tianshou's can store them.
With `legal_moves_info=True`, `infos[agent]` also holds, for the agent to act, `legal_moves`: a
list of `(card, capture_mask)` pairs of Python ints, one per legal move of the turn.
`capture_mask` is the set of table cards (bit `c` = card id `c`) the move takes, 0 for a discard; a
card with several capture options appears once per option. During a capture choice the list holds
the remaining options of the pending card. A move-level agent can play `(card, capture_mask)` by
playing `card` and then, while the mask offers table cards, naming the cards of `capture_mask` that
the mask offers (with jokers, one option can hold another: if the choice is still pending when no
card of `capture_mask` is offered, playing `card` again takes exactly the named and forced cards).

### Action Space

An action is a card id, 0 to 39 (see the index formula above; 40 and 41 are the jokers when they
are in play). There are two kinds of decision, so that every choice fits one fixed `Discrete(W)`
space (`Discrete(40)` for the standard deck):

- **play**: while no capture is pending, action `c` plays card `c` from the agent's hand. If the
  card has no capture option it goes to the table; with exactly one option it captures at once.
- **take**: if the played card has several capture options, the same agent acts again and each
  action names one table card of the capture. The mask offers only cards that are in some
  remaining option and not in all of them; as soon as one option remains it is executed (cards
  common to every remaining option need no decision). The observation shows the pending card
  (plane 11), the cards named so far (plane 12) and flag 541.

### Rewards

With `reward="game"` (default), at the end of the game:

| Winner's side | Every other seat |
| :-----------: | :--------------: |
| +1            | -1               |

With 3 or 4 independent players this is +1 for the winner and -1 for each other player. A game cut
by `max_rounds` (a truncation) gives 0 to all; so does a single-round episode whose top round
score is tied.

With `reward="round_points"`, at the end of every round each agent receives its side's points for
that round minus the highest round points among the other sides (with two sides, the zero-sum
point difference).

Partners share: both seats of a team always receive the same reward. At every round end, every
agent's info holds `round_points` and `scores` (lists per side: side = seat, or seat % 2 with
partnerships; `scores` are cumulative), `round_categories` (points per category and side) and
`seat` (the agent's seat); at the end of the game it also holds `winner` (the winning side, -1
for none: a truncated game, or a one-round episode tied at the top) and `rounds` (rounds played).
Every face of this package reports these keys the same way (the table in docs/observation.md).

### Reset options

`reset(seed=None, options=None)`. A seed fixes every deal (the same seed gives the same game in
every face of this package). Options, for tests, replays and analysis:

- `{"dealer": 0}`: the first dealer (default: drawn from the seed);
- `{"deck": [rules.num_cards card ids, top first]}`: the first round's deck, dealt as in docs/rules.md §3;
- `{"hands": [[3 ids] per seat], "table": [4 ids], "stock": [the rest, top first]}`.

An explicit deal applies to the first round; later rounds are dealt from the seed. Card names
(`"7o"`) are accepted wherever an id is. Unknown keys and malformed deals raise `ValueError`
(except the key `"options"`, which PettingZoo's `api_test` passes to probe `reset`: it is ignored).

### Global state (privileged)

`raw_env.state()` returns the whole position as a float32 vector in `raw_env.state_space` (a
`Box` of `16 W + 22` entries, 662 for the 40-card deck; the layout is in `escoba_env/executors/state.py`):
every hand, the stock in order, the table, the capture piles, the cards played, the pending
capture, escobas, scores, dealer, seat to act, last capturer and round. It is privileged
information, for centralised critics in training only (MAPPO-style CTDE): it is never part of an
observation, and a policy that acts from it sees the other hands and the stock. It passes through
PettingZoo's wrappers and conversions (`env().state()`, `turn_based_aec_to_parallel(...).state()`).

### Version History

* v0: Initial version (escoba-env 0.1.0). The `legal_moves` info is opt-in
  (`legal_moves_info=True`) since 0.2.0, so that default infos are fixed-shape. `state()` and
  `state_space` (the privileged global state) added; observations, rewards and dynamics unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

try:  # PettingZoo versions with an environment registry
    from pettingzoo import aec_registry, register
except ImportError:
    aec_registry = register = None

from ..executors.observation import LAYOUT_MARK, layout_doc
from ..executors.state import state_bounds, state_vector
from ..rulebook.rules import Rules
from . import common
from .render import render_face

__all__ = ["env", "raw_env"]

if __doc__:  # None under python -OO; the tables are built from the one layout, observation.LAYOUT
    __doc__ = __doc__.replace(LAYOUT_MARK, layout_doc())


def env(**kwargs: Any) -> AECEnv:
    """Return a ``raw_env`` wrapped like PettingZoo's classic envs (illegal move = -1 and game over)."""
    e = raw_env(**kwargs)
    e = wrappers.TerminateIllegalWrapper(e, illegal_reward=-1)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    e = wrappers.OrderEnforcingWrapper(e)
    return e


class raw_env(common.EngineView, AECEnv):
    """Escoba as a PettingZoo AEC env over the one-game executor ``Game`` (see the module docstring).

    ``game`` is the executor; ``engine`` is a one-game ``EscobaEngine`` view of the same state,
    refreshed when read (for code written for the batched engine: search agents, tests).
    """

    metadata = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "name": "escoba_v0",
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(self, rules: Rules | None = None, *, episode: str = "game", reward: str = "game",
                 max_rounds: int | None = None, render_mode: str | None = None, french: bool = False,
                 legal_moves_info: bool = False, **rule_options: Any):
        super().__init__()
        common.check_face_options(legal_moves_info, render_mode, self.metadata["render_modes"])
        self.legal_moves_info = legal_moves_info
        self.rules = common.make_rules(rules, rule_options)
        self.episode = episode
        self.reward_kind = reward
        self.max_rounds = max_rounds
        self.game = common.make_game(self.rules, episode, reward, max_rounds)
        self._view = None
        self._view_stale = True
        self.render_mode = render_mode
        self.french = bool(french)
        p = self.rules.num_players
        self.possible_agents = [f"player_{i}" for i in range(p)]
        self.agents = []
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        self.num_cards = nc = self.rules.num_cards
        # One space object per agent, returned identically on every call (PettingZoo requires it).
        self.observation_spaces = {a: common.observation_space(self.rules) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(nc) for a in self.possible_agents}
        low, high = state_bounds(self.rules)
        self.state_space = spaces.Box(low=low, high=high, dtype=np.float32)
        self._np_random: np.random.Generator | None = None
        self._obs_cache: dict[int, dict[str, np.ndarray]] = {}
        self._last = None
        self._rewards_dirty = False
        self.rewards = {}
        self._cumulative_rewards = {}
        self.terminations = {}
        self.truncations = {}
        self.infos = {}
        self.agent_selection = self.possible_agents[0]

    # ------------------------------------------------------------------ spaces

    def observation_space(self, agent: str) -> spaces.Dict:
        """Return the observation space of ``agent`` (the same object on every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        """Return the action space of ``agent``: Discrete(rules.num_cards) (the same object each call)."""
        return self.action_spaces[agent]

    def state(self) -> np.ndarray:
        """Return the privileged global state (every hand, the stock in order, ...), float32 (16 W + 22,)."""
        return state_vector(self.game)

    # ------------------------------------------------------------------ reset

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new game (see "Reset options" in the module docstring); return None."""
        # validates the seed, options and deal; raises before any change
        self._np_random = common.reset_engine(self.game, seed, options, self._np_random)
        self._view_stale = True
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._rewards_dirty = False
        self._obs_cache.clear()
        self._last = None
        self._skip_agent_selection = None
        self.agent_selection = self.possible_agents[self.game.to_act]
        if self.legal_moves_info:
            self.infos[self.agent_selection]["legal_moves"] = common.legal_moves(self.game)
            self._rewards_dirty = True
        if self.render_mode == "human":
            self.render()

    # ------------------------------------------------------------------ observe

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """Return ``{"observation": float32 (13 W + 26,), "action_mask": int8 (W,)}`` seen by ``agent``.

        W = ``rules.num_cards`` (546 and 40 for the standard deck).
        """
        seat = self._seat[agent]
        obs = self._obs_cache.get(seat)
        if obs is None:
            obs = {"observation": self.game.observe(seat), "action_mask": self.game.action_mask(seat)}
            self._obs_cache[seat] = obs
        return obs

    # ------------------------------------------------------------------ step

    def step(self, action: int | None) -> None:
        """Apply ``action`` for ``agent_selection`` (None for a finished agent); return None.

        Raises ValueError, changing nothing, if the action is not legal.
        """
        if not self.game.started:
            raise ValueError("the env was never reset: call reset() before step()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        game = self.game
        a = common.as_action(action, self.num_cards)
        if a < 0 or not game.legal >> a & 1:
            raise ValueError(common.illegal_action_message(game, action, agent, self.french))
        st = game.step(a)
        self._view_stale = True
        self._obs_cache.clear()
        self._last = (a, st)
        self._cumulative_rewards[agent] = 0.0
        agents = self.possible_agents
        if st.round_over:
            r = common.game_step_rewards(self.rules, st, self.reward_kind)
            self.rewards = dict(zip(agents, r, strict=True))
            self._rewards_dirty = True
            self._cumulative_rewards = {k: v + self.rewards[k] for k, v in self._cumulative_rewards.items()}
            self.infos = {k: {**common.game_round_info(st), "seat": i} for i, k in enumerate(agents)}
        else:
            if self._rewards_dirty:  # rewards or infos hold something from the previous step
                self.rewards = dict.fromkeys(agents, 0.0)
                self.infos = {k: {} for k in agents}
                self._rewards_dirty = False
        if st.game_over:
            flag = st.truncated
            self.terminations = dict.fromkeys(agents, not flag)
            self.truncations = dict.fromkeys(agents, flag)
            for k in agents:
                self.infos[k].update(winner=st.winner, rounds=game.round_index)
            self._deads_step_first()
        else:
            self.agent_selection = agents[game.to_act]
            if self.legal_moves_info:
                self.infos[self.agent_selection]["legal_moves"] = common.legal_moves(game)
                self._rewards_dirty = True
        if self.render_mode == "human":
            self.render()

    # ------------------------------------------------------------------ render

    def render(self) -> str | None:
        """Return the text (``"ansi"``), print it (``"human"``), an RGB array (``"rgb_array"``), or warn."""
        return render_face(self.engine, self.render_mode, self._last, self.french, self.possible_agents)

    def close(self) -> None:
        """Release nothing (no window or process is held); return None."""


def _register() -> None:
    """Register ``escoba/escoba-v0`` in PettingZoo's AEC registry, where the registry exists."""
    if aec_registry is None or register is None:  # PettingZoo versions before the registry
        return
    if "escoba/escoba-v0" not in aec_registry:
        register("aec", "escoba/escoba-v0", entry_point="escoba_env.faces.escoba_v0:env")


_register()
