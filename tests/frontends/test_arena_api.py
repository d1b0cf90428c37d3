"""The web arena's JSON API: whole games checked by the engine, no hidden card leaks, bad requests,
path traversal, failing bots, replays and results."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("starlette")

from agents.base import Agent  # noqa: E402
from agents.spec import registry  # noqa: E402
from agents.tournament.replay import check_replay  # noqa: E402
from escoba_arena.web.game import WebGame  # noqa: E402
from escoba_env.executors.engine import EscobaEngine  # noqa: E402
from escoba_env.rulebook.cards import cards_of  # noqa: E402
from escoba_env.rulebook.rules import Rules  # noqa: E402
from tests.frontends.arena_support import card_fields, client, hidden_cards, run_evaluate  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")


def _play_out(c, rules: dict, opponents, seed: int, pick=0, check=None, seat=0) -> tuple[str, dict]:
    """Play a game through the API choosing option ``pick`` of the first legal card; return (id, view)."""
    r = c.post("/api/games", json={"rules": rules, "opponents": opponents, "seed": seed, "seat": seat})
    assert r.status_code == 201, r.text
    gid, view = r.json()["id"], r.json()["view"]
    while True:
        if check:
            check(gid, r.json())
        if view["done"]:
            return gid, view
        m = view["moves"][0]
        option = m["options"][-1 if pick else 0]
        r = c.post(f"/api/games/{gid}/move", json={"card": m["card"], "capture": option})
        assert r.status_code == 200, r.text
        view = r.json()["view"]


@pytest.mark.parametrize("rules, opponents", [
    ({"target_score": 5}, ["greedy"]),
    ({"num_players": 4, "partnerships": True, "target_score": 3}, ["expert", "greedy", "random"]),
    ({"num_players": 3, "jokers": 2, "mesa_deal": True, "target_score": 3, "sevens_rule": "primera"},
     ["greedy"]),
])
def test_a_whole_game_through_the_api_is_what_the_engine_plays(rules, opponents):
    c = client()
    gid, view = _play_out(c, rules, opponents, seed=11)
    rec = json.loads(c.get(f"/api/games/{gid}/replay").text)
    # The engine re-plays every deal, actor, capture, escoba and score of the recorded game.
    assert check_replay(rec) == sum(len(r["actions"]) for r in rec["rounds"])
    assert view["scores"] == rec["final_scores"] and view["winner"] == rec["winner"]
    assert rec["seats"][0] == "human" and rec["rules"] == Rules(**rules).to_dict()
    # The round tables the page shows are the engine's.
    shown = [e for e in view["log"] if e["type"] == "round_over"]
    assert [e["categories"] for e in shown] == [r["categories"] for r in rec["rounds"]]
    assert [e["scores"] for e in shown] == [r["scores"] for r in rec["rounds"]]
    # Each side's captured cards at the end of a round add up to the whole deck.
    n = Rules(**rules).num_cards
    assert all(sum(s["count"] for s in e["sides"]) == n for e in shown)


def test_after_the_end_the_view_names_the_last_round_played():
    c = client()
    gid, view = _play_out(c, {"target_score": 9}, ["greedy"], seed=5)
    rec = json.loads(c.get(f"/api/games/{gid}/replay").text)
    played = sum(e["type"] == "round_over" for e in view["log"])
    # The engine has moved on to a round that is never dealt: the page shows the last one played.
    assert len(rec["rounds"]) > 1
    assert view["round"] == played == len(rec["rounds"])
    assert view["dealer"] == rec["rounds"][-1]["dealer"]


@pytest.mark.parametrize("rules, seat", [
    ({"target_score": 3}, 1),
    ({"num_players": 4, "partnerships": True, "target_score": 2}, 2),
    ({"num_players": 3, "jokers": 1, "mesa_deal": True, "target_score": 2}, 0),
])
def test_no_response_holds_another_hand_or_the_stock(rules, seat):
    c = client()
    arena = c.app.state.arena
    seen = []

    def check(gid, body):
        game = arena.games[gid]
        text = json.dumps(body)
        assert "deck" not in text and "hands" not in text
        assert game.seat == seat and body["view"]["hand_counts"][seat] == len(body["view"]["hand"])
        if not body["view"]["done"]:
            # The seed fixes every deal: it is not shown before the end.
            assert "seed" not in body["settings"]
            # Cards of earlier rounds were public then (and are dealt again now): look at this round.
            view = dict(body["view"])
            deals = [i for i, e in enumerate(view["log"]) if e["type"] == "deal"]
            view["log"] = view["log"][deals[-1]:]
            leaked = card_fields(view) & hidden_cards(game.state, game.seat)
            assert not leaked, f"response shows hidden cards {leaked}"
            seen.append(len(hidden_cards(game.state, game.seat)))
        # Another route to the same game says the same.
        assert c.get(f"/api/games/{gid}").json()["view"] == body["view"]

    for seed in (1, 2):
        gid, view = _play_out(c, rules, ["random"], seed=seed, pick=seed, check=check, seat=seat)
        assert c.get(f"/api/games/{gid}").json()["settings"]["seed"] == seed
    assert len(seen) > 10 and max(seen) > 0


def test_the_view_is_the_same_whatever_the_hidden_cards():
    rules = Rules()
    eng = EscobaEngine(1, rules)
    eng.reset(3, dealer=1)
    deck = [int(x) for x in eng.deck[0]]
    bot_hand = cards_of(int(eng.hands[0, 1]))
    stock = deck[int(eng.stock_pos[0]):]
    # Swap a card of the bot's hand with a stock card: only hidden cards differ.
    other = list(deck)
    i, j = other.index(bot_hand[0]), other.index(stock[5])
    other[i], other[j] = other[j], other[i]
    views = []
    for d in (deck, other):
        bot = registry.make_agent("random", rules=rules, seed=0)
        g = WebGame(rules, {1: bot}, {1: "random"}, 0, seed=3, dealer=1, deck=d)
        assert cards_of(g.state.hand(1)) != bot_hand or d is deck
        views.append(g.view())
    assert views[0]["your_turn"] and views[0] == views[1]


def test_the_server_answers_only_its_own_host_names():
    from starlette.testclient import TestClient

    from escoba_arena.web.app import create_app

    app = create_app([], allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://127.0.0.1:8765").get("/api/info").status_code == 200
    assert TestClient(app, base_url="http://evil.example:8765").get("/api/info").status_code == 400


def test_a_cheating_opponent_is_labelled():
    v = client().post("/api/games", json={"opponents": ["oracle:sims=8"], "seed": 1}).json()["view"]
    assert "oracle:sims=8 sees every hand and the stock" in v["note"]


def test_rematch_deals_the_same_game():
    c = client()
    r = c.post("/api/games", json={"opponents": ["greedy"], "seed": 5, "rules": {"target_score": 3}}).json()
    gid, _ = _play_out(c, {"target_score": 3}, ["greedy"], seed=5)
    again = c.post(f"/api/games/{gid}/rematch", json={}).json()
    assert again["id"] != gid and again["settings"] == r["settings"]
    assert again["view"] == r["view"]


def test_the_default_opponent_is_the_shipped_neural_agent_or_a_clear_fallback():
    c = client()
    v = c.post("/api/games", json={"seed": 1}).json()["view"]
    assert v["names"] == ["You", "neural #1"] and v["note"] is None
    v = c.post("/api/games", json={"seed": 1, "rules": {"target_score": 5}}).json()["view"]
    assert v["names"] == ["You", "expert #1"] and "does not play these rules" in v["note"]


@pytest.mark.parametrize("body, status, text", [
    ({"rules": {"num_players": 5}}, 400, "num_players must be 2, 3 or 4"),
    ({"rules": {"partnerships": True}}, 400, "partnerships needs exactly 4 players"),
    ({"rules": {"colour": 1}}, 400, "unknown rules option"),
    ({"rules": []}, 400, "rules must be a JSON object"),
    ({"seat": 2}, 400, "seat must be an integer from 0 to 1"),
    ({"seed": -1}, 400, "seed must be"),
    ({"seed": "x"}, 400, "seed must be"),
    ({"opponents": ["nobody"]}, 400, "agent 'nobody' is not allowed here"),
    ({"opponents": ["greedy", "expert"]}, 400, "give 1 opponent spec or 1"),
    ({"opponents": ["search:sims=x"]}, 400, "'sims' of agent 'search' must be an integer from 1 to 2,000"),
    ({"opponents": ["checkpoint:/etc/passwd"]}, 400, "under the arena's data folders"),
    ({"opponents": [3]}, 400, "agent spec string"),
    ({"speed": 2}, 400, "unknown field(s) ['speed']"),
    ([1, 2], 400, "must be a JSON object"),
])
def test_bad_new_game_requests_get_a_clear_4xx(body, status, text):
    c = client()
    r = c.post("/api/games", json=body)
    assert r.status_code == status and text in r.json()["error"], r.text
    assert not c.app.state.arena.games


def test_bad_moves_get_a_clear_4xx_and_change_nothing():
    c = client()
    r = c.post("/api/games", json={"opponents": ["greedy"], "seed": 1, "rules": {"target_score": 3}}).json()
    gid, view = r["id"], r["view"]
    legal = {m["card"]: m["options"] for m in view["moves"]}
    not_legal = next(x for x in range(40) if x not in legal)
    card = next(iter(legal))
    cases = [
        ({"card": not_legal, "capture": []}, 400, "not a legal card"),
        ({"card": card, "capture": [39, 38]}, 400, "not a capture option"),
        ({"card": "7o"}, 400, "card must be a card id"),
        ({"card": True}, 400, "card must be a card id"),
        ({"card": card, "capture": "all"}, 400, "capture must be a list"),
        ({"card": card, "pass": 1}, 400, "a move is"),
    ]
    for body, status, text in cases:
        res = c.post(f"/api/games/{gid}/move", json=body)
        assert res.status_code == status and text in res.json()["error"], (body, res.text)
    bad = c.post(f"/api/games/{gid}/move", content=b"{", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and "not JSON" in bad.json()["error"]
    # A form post (what another web site could send without a CORS preflight) is refused.
    form = c.post(f"/api/games/{gid}/move", content=b'{"card": 1}', headers={"Content-Type": "text/plain"})
    assert form.status_code == 415 and "application/json" in form.json()["error"]
    assert c.post("/api/games", data={"seed": "1"}).status_code == 415
    assert c.get(f"/api/games/{gid}").json()["view"] == view
    assert c.post("/api/games/nope/move", json={"card": 1}).status_code == 404
    assert c.get(f"/api/games/{gid}/replay").status_code == 409
    assert c.get("/api/nothing").status_code == 404


def test_a_finished_game_refuses_moves():
    c = client()
    gid, view = _play_out(c, {"target_score": 1}, ["random"], seed=2)
    r = c.post(f"/api/games/{gid}/move", json={"card": 0, "capture": []})
    assert r.status_code == 409 and "over" in r.json()["error"]


class _Crash(Agent):
    name = "crash"

    def act_batch(self, observations, action_masks, state=None):
        raise RuntimeError("boom")


class _Slow(Agent):
    name = "slow"

    def act_batch(self, observations, action_masks, state=None):
        time.sleep(1.0)
        return action_masks.argmax(axis=1)


class _Illegal(Agent):
    name = "illegal"

    def act_batch(self, observations, action_masks, state=None):
        return (action_masks == 0).argmax(axis=1)


@pytest.mark.parametrize("spec, agent, text", [("crash", _Crash, "failed: RuntimeError: boom"),
                                                ("slow", _Slow, "took longer than 0.2 s"),
                                                ("illegal", _Illegal, "illegal action")])
def test_a_failing_bot_stops_its_game_not_the_server(spec, agent, text):
    registry.register(spec, agent)
    try:
        c = client(bot_timeout=0.2, allow_agents=[spec])
        # Whoever starts, the bot's first move fails.
        r = c.post("/api/games", json={"opponents": [spec], "seed": 4, "rules": {"target_score": 3}})
        gid, view = r.json()["id"], r.json()["view"]
        if not view["done"]:
            m = view["moves"][0]
            move = {"card": m["card"], "capture": m["options"][0]}
            view = c.post(f"/api/games/{gid}/move", json=move).json()["view"]
        assert view["done"] and text in view["error"] and not view["moves"]
        assert c.post(f"/api/games/{gid}/move", json={"card": 0}).status_code == 409
        # The server goes on serving other games.
        ok = c.post("/api/games", json={"opponents": ["greedy"], "rules": {"target_score": 3}})
        assert ok.status_code == 201 and ok.json()["view"]["error"] is None
    finally:
        registry.REGISTRY.pop(spec, None)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("arena")
    run_evaluate(out, "--agents", "random", "greedy", "--games", "2", "--target-score", "4")
    (out / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    return out


def test_files_results_and_replays(data):
    c = client([data])
    files = c.get("/api/files").json()
    assert [f["name"] for f in files["replays"]] == ["0/replays/00_random_vs_greedy.jsonl"]
    assert {f["name"] for f in files["results"]} == {"0/res.json", "0/notes.json"}
    res = c.get("/api/results?file=0/res.json").json()
    assert res["results"] == json.loads((data / "res.json").read_text())
    assert res["replays"] == [{"name": "0/replays/00_random_vs_greedy.jsonl", "lineup": ["random", "greedy"]}]
    r = c.get("/api/results?file=0/notes.json")
    assert r.status_code == 400 and "not an escoba-evaluation/1 results file" in r.json()["error"]
    games = c.get("/api/replays?file=0/replays/00_random_vs_greedy.jsonl").json()["games"]
    lines = (data / "replays" / "00_random_vs_greedy.jsonl").read_text().splitlines()
    assert len(games) == len(lines) == 4
    assert [g["final_scores"] for g in games] == [json.loads(x)["final_scores"] for x in lines]


def test_a_file_linked_inside_a_data_folder_is_listed_once(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "games.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "a" / "games.jsonl")
    # The same folder given twice, and nested, still lists each file once.
    c = client([tmp_path, tmp_path / "a"])
    assert [f["name"] for f in c.get("/api/files").json()["replays"]] == ["0/a/games.jsonl"]


def test_replay_frames_follow_the_engine(data):
    c = client([data])
    line = json.loads((data / "replays" / "00_random_vs_greedy.jsonl").read_text().splitlines()[1])
    f = c.get("/api/replays/frames?file=0/replays/00_random_vs_greedy.jsonl&game=1").json()
    assert f["meta"]["seats"] == line["seats"] and len(f["rounds"]) == len(line["rounds"]) > 1
    eng = EscobaEngine(1, Rules.from_dict(line["rules"]))
    eng.reset(line["seed"], game_ids=[line["game_id"]])
    choices = 0
    for rnd, frames in zip(line["rounds"], f["rounds"], strict=True):
        assert len(frames["frames"]) == len(rnd["actions"]) + 1
        for act, before, after in zip(rnd["actions"], frames["frames"], frames["frames"][1:], strict=False):
            assert before["hands"] == [cards_of(int(h)) for h in eng.hands[0]]
            assert before["table"] == cards_of(int(eng.table[0])) == after["action"]["table_before"]
            assert after["action"]["captured"] == act["captured"] and after["action"]["actor"] == act["actor"]
            assert after["action"]["take"] == (int(eng.pending[0]) >= 0)
            info = eng.step([act["action"]])
            assert after["action"]["choosing"] == (int(eng.pending[0]) >= 0)
            choices += after["action"]["choosing"]
        last = frames["frames"][-1]
        assert last["scores"] == rnd["scores"] == [int(x) for x in info.scores[0]]
        assert sum(last["piles"]) == 40 and not any(last["hands"])
    assert choices > 0  # the game has capture choices (play, then take actions)
    # The same record uploaded gives the same frames; a tampered one is refused.
    assert c.post("/api/replays/frames", json=line).json() == f
    line["rounds"][0]["actions"][0]["captured"] = [0, 1]
    r = c.post("/api/replays/frames", json=line)
    assert r.status_code == 422 and "captured" in r.json()["error"]


def test_a_corrupt_checkpoint_under_the_data_directories_is_a_clear_400(tmp_path):
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    r = client([tmp_path]).post("/api/games", json={"opponents": ["checkpoint:0/bad.pt"]})
    assert r.status_code == 400 and "cannot build opponent" in r.json()["error"]
    assert "corrupt" in r.json()["error"]


def test_no_file_outside_the_data_directories(data, tmp_path):
    (tmp_path / "secret.jsonl").write_text("{}\n", encoding="utf-8")
    (data / "link.jsonl").symlink_to(tmp_path / "secret.jsonl")
    try:
        c = client([data])
        for name, status in [("0/../secret.jsonl", 400), ("0//etc/passwd", 400), ("/etc/passwd", 400),
                             ("0/link.jsonl", 400), ("1/x.jsonl", 400), ("x", 400), ("0/res.json", 400),
                             ("0/replays/none.jsonl", 404)]:
            r = c.get("/api/replays", params={"file": name})
            assert r.status_code == status, (name, r.text)
            assert "error" in r.json()
        assert c.get("/api/replays").status_code == 400
        assert c.get("/api/replays/frames", params={"file": "0/replays/00_random_vs_greedy.jsonl",
                                                     "game": "-1"}).status_code == 400
        assert c.get("/api/replays/frames", params={"file": "0/replays/00_random_vs_greedy.jsonl",
                                                     "game": "99"}).status_code == 404
        assert "link.jsonl" not in json.dumps(c.get("/api/files").json())
        assert c.get("/../pyproject.toml").status_code == 404
    finally:
        (data / "link.jsonl").unlink()


def test_an_unexpected_error_is_a_json_500_and_the_server_goes_on(monkeypatch):
    c = client()
    gid = c.post("/api/games", json={"opponents": ["greedy"], "seed": 1}).json()["id"]

    def broken(self):
        raise RuntimeError("view exploded")

    monkeypatch.setattr(WebGame, "view", broken)
    r = c.get(f"/api/games/{gid}")
    assert r.status_code == 500 and r.json() == {"error": "internal error: RuntimeError: view exploded"}
    monkeypatch.undo()
    assert c.get(f"/api/games/{gid}").status_code == 200
