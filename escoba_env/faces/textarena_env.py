"""Escoba as a TextArena environment (``textarena``'s own ``Env`` API; the ``[textarena]`` extra).

TextArena's agents and model wrappers play it unchanged::

    import textarena as ta
    from escoba_env.faces.textarena_env import register
    register()                                   # "Escoba-v0" in TextArena's registry
    env = ta.make("Escoba-v0")
    env.reset(num_players=2, seed=0)
    done = False
    while not done:
        player_id, observation = env.get_observation()
        done, info = env.step(agent(observation))   # e.g. "[3]" or "7 de oros takes 5 de bastos"
    rewards, game_info = env.close()

One TextArena step is one *full move* of the text face (``escoba_env.faces.text``), under the same answer
protocol, prompt and failure policy as the ``llm`` agent: the player answers with a final line
``Answer: N`` (or the move written out), a bare number or a bare move, and the capture it names is
carried out whole. Each player is told the rules and the answer protocol at reset; before each of
its turns it gets its own view of the position (its hand, never another's), with the legal moves
numbered (``moves="listed"``) or not (``"hidden"``: the move is written out); every move played is
announced to all. An answer that names no legal move is refused with the reason
(``error_allowance`` times a turn); after that the failure policy plays for the player and the game
goes on: ``on_fail="forfeit"`` (the default) plays the lowest legal discard and counts a forfeit,
``"random"`` a seeded random legal move and counts a fallback (``game_info[player]``: ``forfeits``,
``fallbacks``, ``reasks``). Rewards at the end: +1 for the winning side's players, -1 for the others,
0 for everyone on a draw (a whole game to the target score, or with ``single_round=True`` one round,
won by the most points).

Randomness: the deal comes from ``reset``'s seed through the engine (TextArena's own state is given
no seed, so that it never seeds Python's global ``random``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import textarena as ta
from textarena.envs.registration import ENV_REGISTRY
from textarena.envs.registration import register as ta_register
from textarena.wrappers import ActionFormattingWrapper, LLMObservationWrapper

from ..executors.game import Game
from ..rulebook.cards import move_words
from ..rulebook.rules import Rules
from .text import (
    ANSWER_PROTOCOL,
    MOVES_MODES,
    ON_FAIL,
    IllegalAnswer,
    answer_format,
    describe,
    forfeit_move,
    legal_moves,
    move_action,
    random_move,
    read_answer,
    reask,
    rules_brief,
)

ENV_ID = "Escoba-v0"


class EscobaTextArenaEnv(ta.Env):
    """Escoba for TextArena (see the module docstring)."""

    def __init__(self, rules: Rules | None = None, single_round: bool = False, french: bool = False,
                 error_allowance: int = 2, moves: str = "listed", on_fail: str = "forfeit",
                 reasoning: bool = False):
        if moves not in MOVES_MODES or on_fail not in ON_FAIL:
            raise ValueError(f"moves must be one of {MOVES_MODES} and on_fail one of {ON_FAIL}, got "
                             f"{moves!r}, {on_fail!r}")
        self.rules = Rules() if rules is None else rules
        self.single_round = bool(single_round)
        self.french = bool(french)
        self.error_allowance = int(error_allowance)
        self.moves, self.on_fail, self.reasoning = moves, on_fail, bool(reasoning)
        self.game = Game(self.rules, single_round=self.single_round)

    @property
    def harness(self) -> dict[str, Any]:
        """Return the settings its players answer under (as the ``llm`` agent records its own)."""
        return {"protocol": ANSWER_PROTOCOL, "moves": self.moves, "on_fail": self.on_fail,
                "reasoning": "on" if self.reasoning else "off", "max_retries": self.error_allowance}

    def reset(self, num_players: int, seed: int | None = None) -> None:
        """Deal a new game for ``num_players`` (they must match the rules) from ``seed``."""
        if num_players != self.rules.num_players:
            raise ValueError(f"these rules are for {self.rules.num_players} players, got num_players="
                             f"{num_players}")
        self.state = ta.FFAMultiPlayerState(num_players=num_players, seed=None,
                                            error_allowance=self.error_allowance)
        self.game.reset(0 if seed is None else int(seed))
        self.rng = np.random.default_rng(0 if seed is None else int(seed))  # the random policy's draws
        self.state.reset(game_state={"seed": seed, "harness": self.harness},
                         player_prompt_function=self._prompt)
        for p in range(num_players):
            self.state.game_info[p].update(forfeits=0, fallbacks=0, reasks=0)
        self.state.manually_set_current_player_id(self.game.to_act, force=True)
        self._show_position()

    def _prompt(self, player_id: int, game_state: dict[str, Any]) -> str:
        """Return the rules message of ``player_id``."""
        team = f" (your partner is Player {(player_id + 2) % 4})" if self.rules.partnerships else ""
        return (f"You are Player {player_id}{team}.\n" + rules_brief(self.rules, self.french) + "\n\n"
                + answer_format(self.moves == "listed", self.reasoning, self.french))

    def _show_position(self) -> None:
        """Give the player to act its view of the position with the legal moves numbered."""
        seat = self.game.to_act
        self.state.add_observation(message=describe(self.game.observe(seat), self.rules, self.french,
                                                     listed=self.moves == "listed"),
                                   observation_type=ta.ObservationType.GAME_BOARD, to_id=seat)

    def step(self, action: str) -> tuple[bool, dict]:
        """Play the move that ``action`` names for the current player; return (done, info)."""
        g, seat = self.game, self.game.to_act
        self.state.add_observation(from_id=seat, message=action,
                                   observation_type=ta.ObservationType.PLAYER_ACTION)
        obs = g.observe(seat)
        moves = legal_moves(obs, self.rules)
        listed, info = self.moves == "listed", self.state.game_info[seat]
        try:
            move = read_answer(action, moves, self.french, listed)[0]
        except IllegalAnswer as exc:
            if self.state.error_count < self.state.error_allowance:  # refused with the reason: try again
                info["reasks"] += 1
                self.state.set_invalid_move(reason=reask(str(exc), len(moves), listed))
                return self.state.step(rotate_player=False)
            # out of allowance: the failure policy plays for the player, and the game goes on
            forfeit = self.on_fail == "forfeit"
            move = forfeit_move(moves) if forfeit else random_move(moves, float(self.rng.random()))
            info["forfeits" if forfeit else "fallbacks"] += 1
            what = "it forfeits the decision" if forfeit else "a random move is played"
            self.state.add_observation(message=f"Player {seat} gave no legal move ({exc}): {what}, "
                                       f"{move_words(move.card, move.taken, self.french)}.",
                                       observation_type=ta.ObservationType.GAME_ADMIN)
        g.step(move_action(move, obs, g.action_mask(seat), self.rules))
        while g.pending >= 0 and not g.done:
            g.step(move_action(move, g.observe(seat), g.action_mask(seat), self.rules))
        said = move_words(move.card, move.taken, self.french)
        self.state.add_observation(message=f"Player {seat} plays {said}.",
                                   observation_type=ta.ObservationType.GAME_ACTION_DESCRIPTION)
        if g.done:
            self._finish()
        else:
            self.state.manually_set_current_player_id(g.to_act)
            self._show_position()
        return self.state.step(rotate_player=False)

    def _finish(self) -> None:
        """Set the rewards: the side with the most points wins (+1), the others lose (-1); a tie, 0."""
        totals = list(self.game.scores)
        best = max(totals)
        if totals.count(best) > 1:
            self.state.set_draw(f"A draw at {best} points.")
            return
        side = totals.index(best)
        self.state.set_game_outcome(
            {p: 1 if self.rules.side_of(p) == side else -1 for p in range(self.rules.num_players)},
            f"Side {side} wins with {best} points (scores {totals}).")


def register(env_id: str = ENV_ID, **kwargs: Any) -> None:
    """Register ``EscobaTextArenaEnv(**kwargs)`` as ``env_id`` in TextArena's registry (once), with
    TextArena's default wrappers (the message history as one prompt, answers put in brackets)."""
    if env_id not in ENV_REGISTRY:
        ta_register(id=env_id, entry_point=EscobaTextArenaEnv,
                    default_wrappers=[LLMObservationWrapper, ActionFormattingWrapper], **kwargs)
