"""The arena served to others: every attack tried on it is refused (allow-list, confinement, hidden
cards, bounded input, exposure), and a refused request is a short 4xx JSON answer, never a traceback."""

from __future__ import annotations

import base64
import json
import logging
import pickle
import socket
import threading
import time
import zipfile

import pytest

pytest.importorskip("starlette")

from agents.base import Agent  # noqa: E402
from agents.heuristic.greedy import GreedyAgent  # noqa: E402
from agents.spec import registry  # noqa: E402
from agents.spec.values import AgentSpec, Int, Number, Text  # noqa: E402
from escoba_arena.web.allow import AllowList, Refused  # noqa: E402
from escoba_arena.web.guard import HostOriginGuard  # noqa: E402
from escoba_arena.web.one_game import OneGame  # noqa: E402
from escoba_env.rulebook.cards import cards_of  # noqa: E402
from escoba_env.rulebook.rules import Rules  # noqa: E402
from tests.frontends.arena_support import card_fields, client, hidden_cards  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")


class _Touch:
    """Unpickling this creates the file ``path`` (the marker of code run from a request)."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _crafted_sb3_zip(zpath, marker) -> None:
    payload = base64.b64encode(pickle.dumps(_Touch(str(marker)))).decode()
    data = {"policy_class": {":type:": "<class 'type'>", ":serialized:": payload}}
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("data", json.dumps(data))
        z.writestr("_stable_baselines3_version", "2.0.0")


def test_a_crafted_sb3_zip_is_never_opened(tmp_path, caplog):
    zpath, marker = tmp_path / "model.zip", tmp_path / "marker"
    _crafted_sb3_zip(zpath, marker)
    c = client([tmp_path])
    for spec in (f"sb3:{zpath}", "sb3:0/model.zip", f"sb3:path={zpath},algo=ppo"):
        r = c.post("/api/games", json={"opponents": [spec]})
        assert r.status_code == 400 and "not allowed here" in r.json()["error"], r.text
    assert not marker.exists()
    assert "Traceback" not in caplog.text


def test_python_specs_import_nothing(tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    (tmp_path / "arena_evil_mod.py").write_text(f"open({str(marker)!r}, 'w').close()\nf = object\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    c = client()
    for spec in ("python:arena_evil_mod:f", "python:this:x", "python:unittest.mock:MagicMock",
                 "endgame:base=python:arena_evil_mod:f"):
        r = c.post("/api/games", json={"opponents": [spec]})
        assert r.status_code == 400, (spec, r.text)
    assert not marker.exists()


def test_no_file_oracle_outside_the_data_folders(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    data.mkdir()
    outside.mkdir()
    (outside / "real.pt").write_bytes(b"not a checkpoint")
    (data / "link.pt").symlink_to(outside / "real.pt")
    (data / "sub").mkdir()
    c = client([data])

    def error(spec):
        r = c.post("/api/games", json={"opponents": [spec]})
        assert r.status_code == 400, (spec, r.text)
        return r.json()["error"]

    exists, missing = outside / "real.pt", outside / "none.pt"
    # An existing file and a missing one get the same answer, whatever form names them.
    pairs = [(f"checkpoint:{exists}", f"checkpoint:{missing}"),
             ("checkpoint:0/../outside/real.pt", "checkpoint:0/../outside/none.pt"),
             ("checkpoint:0/sub/../../outside/real.pt", "checkpoint:0/sub/../../outside/none.pt"),
             ("checkpoint:0/%2e%2e/outside/real.pt", "checkpoint:0/%2e%2e/outside/none.pt"),
             ("checkpoint:0/..%2foutside/real.pt", "checkpoint:0/..%2foutside/none.pt"),
             (f"checkpoint:0/{exists}", f"checkpoint:0/{missing}"),
             (f"checkpoint:file://{exists}", f"checkpoint:file://{missing}"),
             ("checkpoint:0/link.pt", "checkpoint:0/link-none.pt/../../outside/none.pt"),
             (f"neural,path={exists}", f"neural,path={missing}"),
             (f"checkpoint:0/x.pt,path={exists}", f"checkpoint:0/x.pt,path={missing}"),
             (f"search:policy=checkpoint:{exists}", f"search:policy=checkpoint:{missing}"),
             ("endgame:base=checkpoint:0/link.pt", "endgame:base=checkpoint:0/../outside/none.pt")]
    for a, b in pairs:
        ea, eb = error(a), error(b)
        assert ea.replace("real", "none") == eb.replace("real", "none").replace("link-none", "link"), (a, b)
        assert "corrupt" not in ea and "not found" not in ea
    assert "under the arena's data folders" in error("checkpoint:0/link.pt")


def test_allow_list_caps_and_canonical_specs(tmp_path):
    allow = AllowList([tmp_path])
    assert allow.check(" search:sims=0400 ") == "search" == allow.check("search:sims=400")
    assert allow.check("search:sims=300,epsilon=0.50") == "search:sims=300,epsilon=0.5"
    assert allow.check("checkpoint:0/m.pt") == "checkpoint:0/m.pt" == allow.check("checkpoint:path=0/m.pt")
    assert allow.registry_spec("checkpoint:0/m.pt") == f"checkpoint:path={(tmp_path / 'm.pt').resolve()}"
    assert allow.check("endgame:base=greedy") == "endgame:base=greedy"
    assert allow.check("hybrid:policy=neural-solo,sims=0200") == "hybrid:sims=200,policy=neural-solo"
    for bad in ("search:sims=100000", "search:sims=2001", "hybrid:sims=99999999999", "expert:decided=nan",
                "search:epsilon=inf", "checkpoint:0/m.pt,device=cuda", "oracle:max_rows=10000000",
                "sb3", "python", "checkpoint", "nobody", "x" * 201, "endgame:base=endgame",
                "strong-3p:sims=5000", "search:leaf=oracle"):
        with pytest.raises(Refused):
            allow.check(bad)
    # An operator widens the list with exact specs; a request cannot.
    assert AllowList([], ["search:sims=20000"]).check("search:sims=20000") == "search:sims=20000"


def test_the_caps_are_the_registry_s_bounds():
    """CAPS is read from the registry: a served bound changed there is the arena's bound."""
    from dataclasses import replace

    from escoba_arena.web.allow import CAPS

    assert set(CAPS) == {n for n, e in registry.REGISTRY.items() if e.from_request}
    for name in CAPS:
        for key, param in CAPS[name].items():
            assert param is registry.REGISTRY[name].params[key]
    registry.register("toy-capped", _Crash, {"level": Int(0, 99, limit=3), "note": Text()}, "a toy")
    try:
        allow = AllowList([])
        assert allow.check("toy-capped:level=03") == "toy-capped:level=3"
        for bad in ("toy-capped:level=4", "toy-capped:note=/etc/passwd"):
            with pytest.raises(Refused):
                allow.check(bad)
        entry = registry.REGISTRY["toy-capped"]
        registry.REGISTRY["toy-capped"] = replace(entry, params={"level": Int(0, 99, limit=5)})
        assert allow.check("toy-capped:level=4") == "toy-capped:level=4"
    finally:
        registry.REGISTRY.pop("toy-capped", None)


def test_checkpoint_folder_indexes_stop_at_the_number_of_folders(tmp_path):
    """The planted change: ``int(idx) > len(self.roots)`` instead of ``>=`` (an IndexError, a 500)."""
    for n in (0, 1, 2):
        allow = AllowList([tmp_path / str(i) for i in range(n)])
        for spec in (f"checkpoint:{n}/x.pt", f"search:policy=checkpoint:{n}/x.pt",
                     f"checkpoint:{n + 1}/x.pt"):
            with pytest.raises(Refused, match="under the arena's data folders"):
                allow.check(spec)
    r = client([tmp_path]).post("/api/games", json={"opponents": ["checkpoint:1/x.pt"]})
    assert r.status_code == 400 and "data folders" in r.json()["error"]


_OUTSIDE = ["python:os:system", "python:arena_evil_mod:f", "sb3:/x.zip", "sb3:0/model.zip",
            "checkpoint:/etc/x.pt", "checkpoint:0/../x.pt", "checkpoint:../x.pt", "checkpoint:0/a/../../x.pt"]


def _nested(spec: str) -> list[str]:
    """Return ``spec`` nested one and two levels deep in every agent parameter of the registry."""
    outer = [(n, k) for n, e in registry.REGISTRY.items() for k, p in e.params.items()
             if isinstance(p, AgentSpec)]
    assert {("search", "policy"), ("hybrid", "policy"), ("endgame", "base")} <= set(outer)
    once = [f"{n}:{k}={spec}" for n, k in outer]
    return once + [f"{n}:{k}={inner}" for n, k in outer for inner in once]


@pytest.mark.parametrize("inner", _OUTSIDE)
def test_nested_specs_are_checked_as_specs_whatever_the_outer_agent(tmp_path, inner):
    allow = AllowList([tmp_path])
    for spec in [inner, *_nested(inner)]:
        with pytest.raises(Refused):
            allow.check(spec)


def test_a_request_cannot_reach_python_or_sb3_through_any_parameter(tmp_path, monkeypatch):
    """The planted change: ``policy`` added to hybrid's allowed parameters as free text lets
    ``hybrid:policy=python:os:system`` through. Every parameter of every agent a request may name is
    tried with python:, sb3: and a path outside the data folders: none is accepted, and none reaches
    the factory (the games, the room seats and the takeover bot all go through this check)."""
    marker = tmp_path / "imported"
    (tmp_path / "arena_evil_mod.py").write_text(f"open({str(marker)!r}, 'w').close()\nf = object\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    allow = AllowList([tmp_path])
    for name, entry in registry.REGISTRY.items():
        for key in entry.params:
            for inner in ("python:arena_evil_mod:f", "sb3:/x.zip", f"checkpoint:{tmp_path}/x.pt"):
                with pytest.raises(Refused):
                    allow.check(f"{name}:{key}={inner}")
    c = client([tmp_path])
    for spec in ("hybrid:policy=python:arena_evil_mod:f", "endgame:base=hybrid:policy=sb3:/x.zip"):
        assert c.post("/api/games", json={"opponents": [spec]}).status_code == 400
    assert not marker.exists()


def test_an_agent_never_built_from_a_request_is_built_only_as_the_operator_allowed_it():
    """``from_request=False`` (``llm``, ``python``, ``sb3``): refused from requests, nested or not,
    unless ``--allow-agent`` names that exact spec; for a language model, the exact base URL."""
    made = []

    def factory(rules=None, seed=None, model=None, base_url=None, temperature=None):
        made.append(base_url)
        return GreedyAgent(rules, seed)

    params = {"model": Text(), "base_url": Text(),
              "temperature": Number(0.0, 2.0, default=0.0)}
    registry.register("llm-stand-in", factory, params, "a language model (a stand-in)", from_request=False)
    try:
        url = "http://127.0.0.1:9/v1"
        allowed = f"llm-stand-in:model=m,base_url={url}"
        c = client(allow_agents=[allowed])
        for spec in ("llm-stand-in", f"llm-stand-in:model=m,base_url={url}/",
                     "llm-stand-in:model=m,base_url=http://169.254.169.254/v1",
                     f"llm-stand-in:model=n,base_url={url}", "endgame:base=llm-stand-in:model=m",
                     f"llm-stand-in:model=m,base_url={url},temperature=1"):
            r = c.post("/api/games", json={"opponents": [spec]})
            assert r.status_code == 400 and "not allowed here" in r.json()["error"], (spec, r.text)
        assert made == []
        for spec in (allowed, f"llm-stand-in:base_url={url},model=m,temperature=0.0"):
            assert c.post("/api/games", json={"opponents": [spec]}).status_code == 201, spec
        assert made and set(made) == {url}
        assert client().post("/api/games", json={"opponents": [allowed]}).status_code == 400
    finally:
        registry.REGISTRY.pop("llm-stand-in", None)


def test_seats_and_replays_show_spec_names_not_server_paths(tmp_path):
    c = client()
    r = c.post("/api/games", json={"seed": 1}).json()
    assert r["view"]["names"] == ["You", "neural #1"]
    text = json.dumps(r)
    assert "/" + "agents/pretrained" not in text and ".pt" not in text
    assert r["settings"]["opponents"] == [] and c.app.state.arena.games[r["id"]].specs == {1: "neural"}


def test_a_saved_replay_names_a_data_checkpoint_by_its_data_name(tmp_path):
    import shutil

    from escoba_arena.web.allow import NEURAL_FILE, repo_root

    (tmp_path / "nets").mkdir()
    shutil.copy(repo_root() / NEURAL_FILE, tmp_path / "nets" / "mine.pt")
    c = client([tmp_path])
    r = c.post("/api/games", json={"opponents": ["checkpoint:0/nets/mine.pt"], "max_rounds": 1}).json()
    gid, view = r["id"], r["view"]
    while not view["done"]:
        m = view["moves"][0]
        move = {"card": m["card"], "capture": m["options"][0]}
        view = c.post(f"/api/games/{gid}/move", json=move).json()["view"]
    replay = c.get(f"/api/games/{gid}/replay").text
    assert json.loads(replay)["seats"] == ["human", "checkpoint:0/nets/mine.pt"]
    frames = c.get(f"/api/games/{gid}/frames").text
    for text in (replay, frames, json.dumps(view)):
        assert str(tmp_path) not in text and str(repo_root()) not in text


def test_rematch_replay_and_frames_of_a_running_game_are_refused():
    c = client()
    r = c.post("/api/games", json={"opponents": ["greedy"]}).json()
    gid = r["id"]
    assert "seed" not in r["settings"]
    for method, url in (("post", f"/api/games/{gid}/rematch"), ("get", f"/api/games/{gid}/replay"),
                        ("get", f"/api/games/{gid}/frames")):
        res = c.post(url, json={}) if method == "post" else c.get(url)
        assert res.status_code == 409 and "once the game is over" in res.json()["error"], (url, res.text)
    assert len(c.app.state.arena.games) == 1


def test_server_drawn_seeds_span_64_bits(monkeypatch):
    import secrets

    drawn = []
    real = secrets.randbits

    def spy(k):
        drawn.append(k)
        return real(k)

    monkeypatch.setattr(secrets, "randbits", spy)
    c = client()
    gid = c.post("/api/games", json={"opponents": ["random"]}).json()["id"]
    assert drawn == [64]
    seeds = set()
    for _ in range(20):
        seeds.add(c.post("/api/games", json={"opponents": ["random"]}).json()["id"])
    game_seeds = [g.seed for g in c.app.state.arena.games.values()]
    assert gid in c.app.state.arena.games and max(game_seeds) >= 2**40  # 21 draws below 2**40: p < 2**-400
    # A player may still choose the seed (their own game), up to 2**64 - 1.
    assert c.post("/api/games", json={"opponents": ["random"], "seed": 2**64 - 1}).status_code == 201
    assert c.post("/api/games", json={"opponents": ["random"], "seed": 2**64}).status_code == 400


@pytest.mark.parametrize("body, text", [
    ({"rules": {"target_score": 10**9}}, "target_score must be at most 100"),
    ({"max_rounds": 101}, "max_rounds must be an integer from 1 to 100"),
    ({"opponents": ["greedy"] * 1000}, "opponents has 1000 items; at most 3"),
    ({"opponents": ["x" * 60_000]}, "at most 200 characters"),
])
def test_bounds_on_new_games(body, text):
    r = client().post("/api/games", json=body)
    assert r.status_code == 400 and text in r.json()["error"], r.text[:300]
    assert len(r.content) < 1000


def test_bounded_moves_depth_and_no_echo(caplog):
    c = client()
    gid = c.post("/api/games", json={"opponents": ["greedy"], "seed": 1}).json()["id"]
    r = c.post(f"/api/games/{gid}/move", json={"card": 0, "capture": list(range(10**6))})
    assert r.status_code == 413  # 6.9 MB: larger than a move may be
    r = c.post(f"/api/games/{gid}/move", json={"card": 0, "capture": list(range(1000))})
    assert r.status_code == 400 and r.json()["error"] == "capture has 1000 items; at most 40"
    r = c.post(f"/api/games/{gid}/move", json={"card": "x" * 50_000})
    assert r.status_code == 400 and len(r.content) < 500
    for depth in (400, 100_000):
        for url in ("/api/games", "/api/replays/frames"):
            res = c.post(url, content=b"[" * depth + b"]" * (depth if depth == 400 else 0),
                         headers={"Content-Type": "application/json"})
            assert res.status_code in (400, 413) and "error" in res.json(), (depth, url)
    res = c.post("/api/replays/frames", content=b"[" * 400 + b"]" * 400,
                 headers={"Content-Type": "application/json"})
    assert res.status_code == 400 and "nested deeper than 32" in res.json()["error"]
    assert "Traceback" not in caplog.text and not [x for x in caplog.records if x.levelno >= logging.ERROR]


def test_games_are_kept_by_last_use_and_expire_when_idle():
    c = client(max_games=3, idle_seconds=60)
    arena = c.app.state.arena
    now = [0.0]
    arena.clock = lambda: now[0]
    ids = [c.post("/api/games", json={"opponents": ["greedy"]}).json()["id"] for _ in range(3)]
    now[0] = 10
    assert c.get(f"/api/games/{ids[0]}").status_code == 200  # the oldest, used again
    new = c.post("/api/games", json={"opponents": ["greedy"]}).json()["id"]
    assert c.get(f"/api/games/{ids[0]}").status_code == 200
    r = c.get(f"/api/games/{ids[1]}")
    assert r.status_code == 410 and "dropped to make room" in r.json()["error"]
    now[0] = 100  # ids[0] last used at 10: idle for 90 s
    r = c.get(f"/api/games/{ids[0]}")
    assert r.status_code == 410 and "expired after 1 minutes without a request" in r.json()["error"]
    assert c.get(f"/api/games/{new}").status_code == 410
    assert c.get("/api/games/never-made").status_code == 404


class _Blocked(Agent):
    """A bot that says it started (a file) and waits for the test to release it (another file): it
    thinks in a worker process of the bot pool, so the two talk through ``folder``."""

    name = "blocked"

    def __init__(self, rules=None, seed=None, folder=None):
        self.folder = folder
        super().__init__(rules, seed)

    def act_batch(self, observations, action_masks, state=None):
        (self.folder / "started").touch()
        deadline = time.monotonic() + 20
        while not (self.folder / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return action_masks.argmax(axis=1)


def _wait_file(path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return path.exists()


def test_a_slow_bot_does_not_hold_up_other_requests(tmp_path):
    registry.register("blocked", lambda rules=None, seed=None: _Blocked(rules, seed, tmp_path))
    started, release = tmp_path / "started", tmp_path / "release"
    try:
        c = client(bot_timeout=30, allow_agents=["blocked"])
        out = {}

        def play() -> None:
            r = c.post("/api/games", json={"opponents": ["blocked"], "seed": 3})
            view = r.json()["view"]
            if view["moves"]:  # the human starts: the bot thinks after this move
                m = view["moves"][0]
                move = {"card": m["card"], "capture": m["options"][0]}
                r = c.post(f"/api/games/{r.json()['id']}/move", json=move)
            out["r"] = r

        t = threading.Thread(target=play)
        t.start()
        assert _wait_file(started, 20)
        # While the bot thinks, other users are answered (the bot is off the event loop, and one
        # client's bots compute on at most half the bot workers).
        from starlette.testclient import TestClient

        other = TestClient(c.app, client=("127.0.0.7", 5000))
        assert other.get("/api/files").status_code == 200
        assert other.post("/api/games", json={"opponents": ["greedy"]}).status_code == 201
        assert t.is_alive()
        release.touch()
        t.join(20)
        assert out["r"].status_code in (200, 201)
    finally:
        release.touch()
        registry.REGISTRY.pop("blocked", None)


def test_one_client_has_at_most_two_requests_moving_bots_under_way(tmp_path):
    """Each request that moves bots holds a thread while they think: one address may hold two."""
    registry.register("blocked", lambda rules=None, seed=None: _Blocked(rules, seed, tmp_path))
    try:
        c = client(bot_timeout=30, allow_agents=["blocked"])
        game = OneGame(Rules())
        seed = next(s for s in range(100) if game.reset(s) is None and game.to_act == 0)  # the bot first
        body = {"opponents": ["blocked"], "seat": 1, "seed": seed}
        out = []
        threads = [threading.Thread(target=lambda: out.append(c.post("/api/games", json=body)))
                   for _ in range(2)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while sum(c.app.state.bot_requests.values()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        r = c.post("/api/games", json=body)
        assert r.status_code == 429 and "2 requests moving bots" in r.json()["error"], r.text
        from starlette.testclient import TestClient

        other = TestClient(c.app, client=("127.0.0.7", 5000))
        assert other.post("/api/games", json={"opponents": ["greedy"]}).status_code == 201
        (tmp_path / "release").touch()
        for t in threads:
            t.join(30)
        assert [x.status_code for x in out] == [201, 201]
    finally:
        (tmp_path / "release").touch()
        registry.REGISTRY.pop("blocked", None)


class _Crash(Agent):
    name = "crash"

    def act_batch(self, observations, action_masks, state=None):
        raise RuntimeError("boom")


@pytest.mark.parametrize("seat", [0, 1])
def test_after_a_bot_crash_the_view_shows_only_the_humans_seat(seat):
    registry.register("crash", _Crash)
    try:
        c = client(allow_agents=["crash"])
        for seed in range(4):
            r = c.post("/api/games", json={"opponents": ["crash"], "seed": seed, "seat": seat})
            gid, view = r.json()["id"], r.json()["view"]
            if not view["done"]:
                m = view["moves"][0]
                view = c.post(f"/api/games/{gid}/move", json={"card": m["card"], "capture": m["options"][0]}
                              ).json()["view"]
            game = c.app.state.arena.games[gid]
            assert view["error"] and "boom" in view["error"]
            assert view["hand"] == cards_of(game.state.hand(seat)) and len(view["hand"]) > 0
            deals = [i for i, e in enumerate(view["log"]) if e["type"] == "deal"]
            shown = dict(view, log=view["log"][deals[-1]:])
            assert not card_fields(shown) & hidden_cards(game.state, seat)
            for url in (f"/api/games/{gid}/replay", f"/api/games/{gid}/frames"):
                assert c.get(url).status_code == 409
            assert c.get(f"/api/games/{gid}").json()["view"] == view
    finally:
        registry.REGISTRY.pop("crash", None)


def _app_guarded(allowed=()):
    from starlette.testclient import TestClient

    from escoba_arena.web.app import create_app

    return lambda base: TestClient(create_app([], allowed_hosts=list(allowed)), base_url=base)


@pytest.mark.parametrize("host, ok", [("127.0.0.1:8765", True), ("127.0.0.2:8765", True),
                                      ("127.255.0.9", True), ("[::1]:8765", True), ("localhost:1", True),
                                      ("evil.example", False), ("10.0.0.1:8765", False),
                                      ("arena.lab:8765", True), ("127.0.0.1.evil.example", False)])
def test_host_allow_list_covers_loopback_and_named_hosts(host, ok):
    guard = HostOriginGuard(None, ["arena.lab"])
    assert guard.host_allowed(host) is ok
    c = _app_guarded(["arena.lab"])(f"http://{host}")
    r = c.get("/api/info")
    assert (r.status_code == 200) is ok and (ok or "--allowed-host" in r.json()["error"])


def test_state_changing_requests_check_origin():
    c = _app_guarded()("http://127.0.0.2:8765")
    body = {"opponents": ["greedy"]}
    assert c.post("/api/games", json=body, headers={"Origin": "http://127.0.0.2:8765"}).status_code == 201
    assert c.post("/api/games", json=body).status_code == 201  # no Origin: not a browser's cross-site request
    for origin in ("http://evil.example", "null", "http://127.0.0.2:9999", "http://127.0.0.1:8765"):
        r = c.post("/api/games", json=body, headers={"Origin": origin})
        assert r.status_code == 403 and "cross-origin" in r.json()["error"], origin
    assert c.get("/api/info", headers={"Origin": "http://evil.example"}).status_code == 200


# ---------------------------------------------------------------- a real server on loopback


@pytest.fixture
def served():
    """Serve a fresh arena app with uvicorn on a loopback port from the CLI's socket; yield the port."""
    uvicorn = pytest.importorskip("uvicorn")
    from escoba_arena.web.app import create_app
    from escoba_arena.web.cli import listen_socket

    sock = listen_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app([], allowed_hosts=[]), log_level="warning"))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    for _ in range(200):
        if server.started:
            break
        threading.Event().wait(0.05)
    yield sock.getsockname()[1]
    server.should_exit = True
    t.join(10)
    sock.close()


def _raw(port: int, head: bytes, chunks=(), read=True) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head)
        try:
            for chunk in chunks:
                s.sendall(chunk)
        except OSError:
            pass  # the server answered and closed while the body was still coming
        out = b""
        while read and b"\r\n\r\n" not in out:
            data = s.recv(65536)
            if not data:
                break
            out += data
        return out


def test_the_body_limit_holds_while_streaming_and_by_content_length(served):
    head = (b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b" " * 16384
    body = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 16 + [b"0\r\n\r\n"]  # 256 KiB of spaces
    assert _raw(served, head, body).startswith(b"HTTP/1.1 413")
    # A Content-Length past the limit is refused before any body is sent.
    head = (b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1073741824\r\n\r\n")
    assert _raw(served, head).startswith(b"HTTP/1.1 413")


def test_the_listening_socket_sets_tcp_nodelay():
    from escoba_arena.web.cli import listen_socket

    sock = listen_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        sock.close()


@pytest.mark.parametrize("inner", _OUTSIDE[::2])
def test_room_seats_and_the_takeover_bot_check_nested_specs(inner):
    """Rooms name agents in two places (a bot seat, the takeover bot): both go through the allow-list."""
    from tests.frontends.rooms_support import rooms_client

    with rooms_client() as tc:
        for spec in (f"hybrid:policy={inner}", f"endgame:base=search:policy={inner}"):
            for body in ({"seats": ["human", spec]}, {"seats": ["human", "greedy"], "takeover": spec}):
                r = tc.post("/api/rooms", json=body)
                assert r.status_code == 400, (body, r.text)
        assert tc.app.state.rooms.rooms.rooms == {}
        ok = tc.post("/api/rooms", json={"seats": ["human", "endgame:base=search:sims=0010"],
                                         "takeover": "hybrid:policy=greedy,sims=20"})
        assert ok.status_code in (200, 201), ok.text


def test_the_lobby_lists_the_registry_s_agents_a_request_may_name():
    info = client().get("/api/info").json()
    listed = {a["name"]: a for a in info["agents"]}
    assert list(listed) == [n for n, e in registry.REGISTRY.items() if e.from_request]
    assert "python" not in listed and "sb3" not in listed
    for name, a in listed.items():
        assert a["help"] == registry.REGISTRY[name].help
    assert listed["search"]["params"][:2] == ["sims", "epsilon"] and "path" in listed["checkpoint"]["params"]
    assert "device" in listed["neural"]["params"]
