"""A Gymnasium single-agent view of Escoba: one learner seat against fixed opponent agents.

``SingleAgentEscobaEnv(opponents, seat=0, **config)`` plays the learner's seat and steps the other
seats internally with the given agents until the learner must act again (or the episode ends).
Observations, action masks, actions and rewards are those of the PettingZoo env ``escoba_v0``
for the learner's seat (see its documentation page): a Dict of ``observation`` (float32, 546)
and ``action_mask`` (int8, 40), actions are card ids in ``Discrete(40)`` with the play/take
scheme (with jokers: ``observation.obs_size(rules)``, ``W = 40 + jokers`` and ``Discrete(W)``),
and the reward of one ``step`` is the sum of the learner's rewards over every engine step from its
action to its next turn (rewards come at round ends and at the game end only).

- ``opponents``: one agent (it plays every other seat) or a list of ``num_players - 1`` agents;
  ``opponents[i]`` plays the seat ``(learner + 1 + i) % num_players``, so with partnerships
  ``opponents[1]`` is the learner's partner. An agent is any object with
  ``act(observation, action_mask, state=None) -> int`` and ``reset(seed)`` (the protocol of
  ``agents.base.Agent``). It is called with its own seat-relative observation and mask. An agent
  whose ``needs_state`` is True (the oracle) also gets ``state=(engine, games)``: a one-game
  ``EscobaEngine`` view of the env's game (``env.engine``, refreshed when read) and
  ``games = numpy.array([0])``, the slot to act in; it must not modify the engine.
- ``seat``: the learner's seat, or None to draw it at every reset from the env's generator.
- every ``Rules`` field (or ``rules=Rules(...)``), ``episode``, ``reward``, ``max_rounds``,
  ``render_mode`` (``"ansi"``/``"human"``/``"rgb_array"``) and ``french`` as in ``escoba_v0``.
- ``illegal_action``: what an action outside the mask does. ``"terminate"`` (default, the
  convention of PettingZoo's classic ``env()``): the episode ends at once, the reward is
  ``illegal_reward`` (default -1), ``info["illegal_action"]`` holds the action and the state is
  left as it was. ``"raise"``: ``ValueError`` naming the action and the legal ones, state
  unchanged. An action is never remapped.

``reset(seed=s)`` deals from ``s`` itself, so it deals the same game as ``escoba_v0`` and slot 0 of
the Gymnasium vector env reset with ``s``; ``reset()`` without a seed starts the next episode of the
same seed (episode ``e`` deals from ``(s, e)``; the very first unseeded reset draws ``s`` from the
env's generator ``np_random``). Each episode's learner seat (only when ``seat=None``) and the seed
passed to each distinct opponent object's ``reset`` are keyed by ``(s, e)``
(``escoba_env.faces.seeding.episode_keys``), so slot ``k`` of the vector env reset with ``s`` plays what
this env plays after ``reset(seed=escoba_env.faces.seeding.slot_seed(s, k))``, episode after episode. An
opponent with ``act_streams(observations, masks, seeds, calls, state)`` (``random``, the search
agents) is called through it, with that key and the number of its calls so far this episode: its
draws are keyed, as in every slot of the vector env.
Options are those of ``escoba_v0`` (``dealer``, ``deck``, ``hands``/``table``/``stock``).

A finished episode's observation offers one action, ``common.PLACEHOLDER_ACTION`` (0), in its
``action_mask`` (and ``action_masks()``), never an all-zero row: under Gymnasium's vectorizers
the step that follows a final observation resets the env and ignores that action.

``action_masks()`` returns the learner's legal actions as a bool array (W,), the method that
sb3-contrib's ``MaskablePPO`` looks for. ``info`` holds ``seat`` (the learner's seat),
``legal_moves`` (as in ``escoba_v0``, only with ``legal_moves_info=True``) while the learner is
to act, the latest round end's ``round_points`` / ``scores`` / ``round_categories`` if a round
ended during the step, and ``winner`` (side, -1 for none) and ``rounds`` (rounds played) at the
end of the game: the keys of every face (docs/observation.md, "Infos").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from ..rulebook.cards import cards_of
from ..rulebook.rules import Rules
from . import common
from .render import render_face
from .seeding import episode_keys

ILLEGAL_ACTIONS = ("terminate", "raise")


class SingleAgentEscobaEnv(common.EngineView, gymnasium.Env):
    """One learner seat of Escoba against fixed opponents (see the module docstring)."""

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 1}

    def __init__(self, opponents: Any | Sequence[Any], seat: int | None = 0, rules: Rules | None = None,
                 *, episode: str = "game", reward: str = "game", max_rounds: int | None = None,
                 render_mode: str | None = None, french: bool = False, illegal_action: str = "terminate",
                 illegal_reward: float = -1.0, legal_moves_info: bool = False, **rule_options: Any):
        common.check_face_options(legal_moves_info, render_mode, self.metadata["render_modes"])
        self.legal_moves_info = legal_moves_info
        if illegal_action not in ILLEGAL_ACTIONS:
            raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTIONS}, got {illegal_action!r}")
        self.rules = common.make_rules(rules, rule_options)
        p = self.rules.num_players
        self.game = common.make_game(self.rules, episode, reward, max_rounds)
        self._view = None
        self._view_stale = True
        self.episode, self.reward_kind, self.max_rounds = episode, reward, max_rounds
        if seat is not None and (isinstance(seat, bool) or not isinstance(seat, (int, np.integer))
                                 or not 0 <= seat < p):
            raise ValueError(f"seat must be None (random) or a seat in 0..{p - 1}, got {seat!r}")
        self.seat_option = None if seat is None else int(seat)
        if isinstance(opponents, (list, tuple)):
            opps = list(opponents)
        else:
            opps = [opponents] * (p - 1)
        if len(opps) != p - 1:
            raise ValueError(f"opponents must be one agent or a list of {p - 1} agents "
                             f"(num_players - 1), got {len(opps)}")
        for o in opps:
            if not callable(getattr(o, "act", None)):
                raise ValueError(f"opponent {o!r} has no act(observation, action_mask, state=None) method")
        self.opponents = opps
        self.render_mode = render_mode
        self.french = bool(french)
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)
        self.num_cards = self.rules.num_cards
        self.observation_space = common.observation_space(self.rules)
        self.action_space = spaces.Discrete(self.num_cards)
        self.names = [f"player_{i}" for i in range(p)]
        self.seat = 0 if seat is None else int(seat)
        self._games = np.zeros(1, np.int64)
        self._done = True
        self._last: tuple | None = None
        self._base: int | None = None
        self._episode = 0
        self._streams: dict[int, list[int]] = {}  # id(opponent) -> [its episode key, calls so far]

    # ------------------------------------------------------------------ helpers

    def _opponent_of(self, seat: int) -> Any:
        return self.opponents[(seat - self.seat - 1) % self.rules.num_players]

    def _observe(self) -> dict[str, np.ndarray]:
        mask = self.game.action_mask(self.seat)
        if self.game.done:
            common.placeholder_mask(mask)
        return {"observation": self.game.observe(self.seat), "action_mask": mask}

    def _apply(self, action: int, rewards: list[float], info: dict[str, Any]) -> None:
        """Step the game with ``action``, adding the learner's reward and round info."""
        st = self.game.step(action)
        self._view_stale = True
        self._last = (action, st)
        if st.round_over:
            rewards[0] += common.game_step_rewards(self.rules, st, self.reward_kind)[self.seat]
            info.update(common.game_round_info(st))
        if self.render_mode == "human":
            self.render()

    def _play_opponents(self, rewards: list[float], info: dict[str, Any]) -> None:
        """Let the opponents act until the learner is to act or the game is over."""
        game = self.game
        while not game.done and game.to_act != self.seat:
            seat = game.to_act
            agent = self._opponent_of(seat)
            obs = game.observe(seat)
            mask = game.action_mask(seat)
            state = (self.engine, self._games) if getattr(agent, "needs_state", False) else None
            streams = getattr(agent, "act_streams", None)
            if callable(streams):  # keyed draws: call t of the episode's stream (as the vector env's slots)
                seed_calls = self._streams.setdefault(id(agent), [0, 0])
                action = streams(obs[None], mask[None], np.array([seed_calls[0]], np.uint64),
                                 np.array([seed_calls[1]], np.int64), state)[0]
                seed_calls[1] += 1
            else:
                action = agent.act(obs, mask, state=state)
            a = common.as_action(action, self.num_cards)
            if a < 0 or not game.legal >> a & 1:
                who = f"opponent {agent!r} (seat {seat})"
                raise ValueError(common.illegal_action_message(game, action, who))
            self._apply(a, rewards, info)

    def _finish_info(self, info: dict[str, Any]) -> dict[str, Any]:
        info["seat"] = self.seat
        game = self.game
        if game.done:
            info.update(winner=game.winner, rounds=game.round_index)
        elif self.legal_moves_info:
            info["legal_moves"] = common.legal_moves(game)
        return info

    # ------------------------------------------------------------------ Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start a new episode; return the learner's first observation and info."""
        seed = common.check_seed(seed)
        kwargs = common.parse_reset_options(options)
        super().reset(seed=seed)
        if seed is not None:
            base, episode = seed, 0
        elif self._base is None:
            base, episode = int(self.np_random.integers(2**63)), 0
        else:
            base, episode = self._base, self._episode + 1
        self.game.reset(base, episode=episode, **kwargs)
        self._base, self._episode = base, episode
        self._view_stale = True
        callers = common.distinct_resettable(self.opponents)
        keys = episode_keys(np.array([base], np.uint64), np.array([episode]), 1 + len(callers))[0]
        p = self.rules.num_players
        self.seat = int(keys[0] % np.uint64(p)) if self.seat_option is None else self.seat_option
        self._streams = {}
        for o, key in zip(callers, keys[1:], strict=True):
            o.reset(int(key))
            self._streams[id(o)] = [int(key), 0]
        self._done = False
        self._last = None
        info: dict[str, Any] = {}
        self._play_opponents([0.0], info)  # no round can end before the learner has played
        if self.render_mode == "human" and self._last is None:
            self.render()
        return self._observe(), self._finish_info(info)

    def step(self, action: int) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Play the learner's ``action`` and the opponents' replies; return the Gymnasium 5-tuple."""
        if self._done:
            raise ValueError("the episode is over (or was never started): call reset() first")
        game = self.game
        a = common.as_action(action, self.num_cards)
        if a < 0 or not game.legal >> a & 1:
            if self.illegal_action == "raise":
                learner = f"the learner (seat {self.seat})"
                raise ValueError(common.illegal_action_message(game, action, learner, self.french))
            self._done = True
            info = {"seat": self.seat, "illegal_action": action, "legal_actions": cards_of(game.legal)}
            return self._observe(), self.illegal_reward, True, False, info
        rewards = [0.0]
        info: dict[str, Any] = {}
        self._apply(a, rewards, info)
        self._play_opponents(rewards, info)
        done = game.done
        truncated = done and game.truncated
        self._done = done
        return self._observe(), rewards[0], done and not truncated, truncated, self._finish_info(info)

    def action_masks(self) -> np.ndarray:
        """Return the learner's legal actions as a bool array (W,) (for sb3-contrib MaskablePPO)."""
        if self._done:  # never all-zero: a finished (or not started) episode offers the placeholder
            return common.placeholder_mask(np.zeros(self.num_cards, bool))
        return self.game.action_mask(self.seat).astype(bool)

    def render(self) -> str | None:
        """Return the text (``"ansi"``), print it (``"human"``), an RGB array (``"rgb_array"``), or warn."""
        return render_face(self.engine, self.render_mode, self._last, self.french, self.names)
