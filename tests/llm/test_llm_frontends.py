"""A language model in escoba-play and in the web arena (the docs page's prompt is checked in
``tests/project/test_pages_match_code.py``)."""

from __future__ import annotations

from agents.external.llm_standin import StandIn
from tests.frontends.test_play import run_game


def test_escoba_play_takes_a_language_model_opponent():
    standin = StandIn()
    try:
        rc, out, _ = run_game(["--opponent", f"llm:base_url={standin.url},model=legal", "--seed", "3",
                               "--target-score", "1", "--delay", "0"])
    finally:
        standin.close()
    assert rc == 0 and "Final score:" in out and standin.requests > 5


def test_escoba_play_ends_with_one_line_when_the_model_endpoint_fails():
    standin = StandIn()
    try:
        rc, out, _ = run_game(["--opponent", f"llm:base_url={standin.url},model=e401", "--seed", "3",
                               "--seat", "1"])
    finally:
        standin.close()
    assert rc == 1 and out.rstrip().splitlines()[-1].endswith(
        "refused the request (HTTP 401): check the key in $OPENAI_API_KEY")
    assert "Traceback" not in out


def test_the_web_games_log_phrases_every_move_with_the_shared_words():
    from agents.base import RandomAgent
    from escoba_arena.web.game import WebGame
    from escoba_env.rulebook.cards import move_words
    from escoba_env.rulebook.rules import Rules

    game = WebGame(Rules(), {1: RandomAgent(seed=1)}, {1: "random"}, seat=0, seed=5)
    for _ in range(4):
        mv = game.view()["moves"][0]
        game.play(mv["card"], mv["options"][0] if mv["options"] else [])
    moves = [e for e in game.view()["log"] if e["type"] == "move"]
    assert len(moves) >= 7
    for e in moves:
        assert e["words"] == move_words(e["card"], sum(1 << c for c in e["captured"]))


def test_the_arena_refuses_a_language_model_from_a_request_and_plays_the_one_its_operator_allowed():
    from tests.frontends.arena_support import client

    standin = StandIn()
    try:
        allowed = f"llm:model=legal,base_url={standin.url}"
        for c in (client(), client(allow_agents=[allowed])):
            for spec in ("llm:model=legal,base_url=http://169.254.169.254/v1",
                         f"llm:model=other,base_url={standin.url}", "endgame:base=llm:model=legal"):
                r = c.post("/api/games", json={"opponents": [spec]})
                assert r.status_code == 400 and "not allowed here" in r.json()["error"], (spec, r.text)
        assert client().post("/api/games", json={"opponents": [allowed]}).status_code == 400
        assert standin.requests == 0  # no request made the server call a URL
        c = client(allow_agents=[allowed])
        r = c.post("/api/games", json={"opponents": [allowed], "seat": 1})
        assert r.status_code == 201, r.text
        view = r.json()["view"]
        if standin.requests == 0:  # the person was dealt the first turn: play it, then the model answers
            m = view["moves"][0]
            gid = r.json()["id"]
            r = c.post(f"/api/games/{gid}/move", json={"card": m["card"], "capture": m["options"][0]})
            assert r.status_code == 200, r.text
        assert standin.requests > 0  # the operator's model played a move
    finally:
        standin.close()
