"""TextArena plays Escoba through the adapter: its own env API, its wrappers and its OpenAI agent."""

from __future__ import annotations

import re

import pytest

ta = pytest.importorskip("textarena")

from agents.external.llm_standin import StandIn  # noqa: E402
from escoba_env.faces.textarena_env import EscobaTextArenaEnv, register  # noqa: E402
from escoba_env.rulebook.rules import Rules  # noqa: E402


def _first_move(observation: str) -> str:
    """Answer the first legal move of the latest list, written out."""
    return re.findall(r"^1\. (.+)$", observation.split("Your legal moves:")[-1], flags=re.M)[0]


def test_textarenas_openai_agent_plays_a_round_against_the_stand_in(monkeypatch):
    register()
    standin = StandIn()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-standin")
        agent = ta.agents.OpenAIAgent(model_name="legal", base_url=standin.url)
        env = ta.make("Escoba-v0", single_round=True)
        env.reset(num_players=2, seed=3)
        done, turns = False, 0
        while not done:
            player, observation = env.get_observation()
            assert "Your hand:" in observation and "Your legal moves:" in observation
            done, _ = env.step(agent(observation))
            turns += 1
        rewards, info = env.close()
    finally:
        standin.close()
    assert turns == 36 and standin.requests == 36  # every move legal at the first answer
    assert sorted(rewards.values()) in ([-1, 1], [0, 0])
    assert not any(info[p]["invalid_move"] for p in (0, 1))


def test_a_player_sees_only_its_own_hand_and_every_move_played():
    env = EscobaTextArenaEnv(single_round=True)
    env.reset(num_players=2, seed=1)
    player, messages = env.get_observation()
    text = "\n".join(m for _, m, _ in messages)
    assert "You are Player" in text and "Your legal moves:" in text
    hidden = env.game.hands[1 - player]
    from escoba_env.rulebook.cards import card_words, cards_of

    assert not any(f"{card_words(c)}" in text.split("Your hand:")[1].split("\n")[0] for c in cards_of(hidden))
    done, _ = env.step(_first_move(text))
    other, messages = env.get_observation()
    assert other != player and any(m.startswith(f"Player {player} plays ") for _, m, _ in messages)


def test_an_illegal_answer_is_refused_with_the_reason_then_forfeited_and_the_game_goes_on():
    env = EscobaTextArenaEnv(Rules(num_players=4, partnerships=True), error_allowance=1)
    env.reset(num_players=4, seed=2)
    player, messages = env.get_observation()
    assert "Reply with one line only: `Answer: N`" in "\n".join(m for _, m, _ in messages)
    done, _ = env.step("[99]")
    assert not done
    again, messages = env.get_observation()
    assert again == player and "99 is not the number of a move" in messages[-1][1]
    assert "final line `Answer: N`" in messages[-1][1]
    done, _ = env.step("You are the 2-player deck")  # prose: never read as move 2
    assert not done and env.game.to_act != player
    info = env.state.game_info[player]
    assert info["forfeits"] == 1 and info["reasks"] == 1 and not info["invalid_move"]
    _, messages = env.get_observation()
    said = [m for _, m, _ in messages if m.startswith(f"Player {player} gave no legal move")]
    assert len(said) == 1 and "it forfeits the decision" in said[0]
    with pytest.raises(ValueError, match="for 4 players"):
        env.reset(num_players=2)


def test_the_forfeit_is_the_llm_agents_forfeit_and_random_is_seeded():
    from escoba_env.faces.text import forfeit_move, legal_moves

    def after_a_failure(on_fail: str, seed: int) -> tuple[int, int, dict]:
        env = EscobaTextArenaEnv(single_round=True, error_allowance=0, on_fail=on_fail)
        env.reset(num_players=2, seed=seed)
        player = env.game.to_act
        card = forfeit_move(legal_moves(env.game.observe(player), env.rules)).card
        env.step("no idea")
        return env.game.hands[player], card, env.state.game_info[player]

    hand, card, info = after_a_failure("forfeit", 5)
    assert not hand >> card & 1 and (info["forfeits"], info["fallbacks"]) == (1, 0)
    hand, _, info = after_a_failure("random", 5)
    assert hand == after_a_failure("random", 5)[0] and (info["forfeits"], info["fallbacks"]) == (0, 1)


def test_with_moves_hidden_the_position_lists_no_move_and_a_written_move_plays():
    env = EscobaTextArenaEnv(single_round=True, moves="hidden", reasoning=True)
    env.reset(num_players=2, seed=1)
    player, messages = env.get_observation()
    text = "\n".join(m for _, m, _ in messages)
    assert "Your legal moves:" not in text and "Your hand:" in text and "think it through first" in text
    from escoba_env.faces.text import legal_moves

    move = legal_moves(env.game.observe(player), env.rules)[0]
    done, _ = env.step(f"[I will play it safe.\nAnswer: {move.words()}]")
    assert env.game.to_act != player and env.state.game_info[player]["reasks"] == 0
    with pytest.raises(ValueError, match="moves must be one of"):
        EscobaTextArenaEnv(moves="some")
