"""The bot pool: a move past its time kills its worker, one client computes at most its share, a dead
worker fails one move, a bot's move depends on its seed and game only."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from agents.base import Agent, RandomAgent
from agents.heuristic.greedy import GreedyAgent
from escoba_arena.web.bot_pool import BotPool, Job, pooled
from escoba_arena.web.bot_worker import AgentFailure
from escoba_arena.web.one_game import OneGame
from escoba_env.rulebook.rules import Rules


class _Sleepy(Agent):
    """Sleeps ``seconds`` per move (then plays its first legal action), noting where it ran."""

    name = "sleepy"

    def __init__(self, rules=None, seed=None, seconds: float = 30.0, folder: Path | None = None,
                 tag: str = ""):
        self.seconds, self.folder, self.tag = seconds, folder, tag
        super().__init__(rules, seed)

    def act_batch(self, observations, action_masks, state=None):
        if self.folder is not None:
            (self.folder / f"{self.tag}-{time.monotonic_ns()}-start").touch()
        time.sleep(self.seconds)
        return action_masks.argmax(axis=1)


class _Exits(Agent):
    name = "exits"

    def act_batch(self, observations, action_masks, state=None):
        os._exit(3)


def _game(seed: int = 5) -> OneGame:
    g = OneGame(Rules())
    g.reset(seed)
    return g


def _job(agent, seconds: float = 10.0, client: str = "", seed: int = 1, game: OneGame | None = None) -> Job:
    g = game or _game()
    return Job(pooled(agent), g.clone(), g.to_act, seed, seconds, f"bot {agent.name!r}", client)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def pool():
    p = BotPool(2)
    yield p
    p.close()


def test_a_move_past_its_time_kills_its_worker_and_the_next_move_gets_a_new_one(pool):
    assert pool.decide(_job(GreedyAgent(Rules())))  # a worker is running
    (pid,) = pool.pids()
    with pytest.raises(AgentFailure, match="took longer than 0.3 s"):
        pool.decide(_job(_Sleepy(Rules()), seconds=0.3))
    assert not _alive(pid) and pid not in pool.pids()
    assert pool.load()["killed"] == 1 and pool.load()["computing"] == 0
    g = _game()
    card, _ = pool.decide(_job(GreedyAgent(Rules()), game=g))
    assert card in [c for c in range(40) if g.legal >> c & 1]


def test_a_worker_that_dies_fails_its_move_with_one_line_and_the_pool_goes_on(pool):
    with pytest.raises(AgentFailure, match="its worker process stopped"):
        pool.decide(_job(_Exits(Rules())))
    assert pool.load()["computing"] == 0
    assert pool.decide(_job(GreedyAgent(Rules())))


def test_a_worker_that_cannot_start_fails_its_move_with_one_line_and_the_pool_goes_on(pool, monkeypatch):
    """No process to be had (out of processes or memory): the move fails with AgentFailure, which the
    rooms turn into one line, instead of an OSError the room's bot task did not expect; the pool counts
    no worker starting, and the next move starts one."""
    import escoba_arena.web.bot_pool as bot_pool

    real = bot_pool.Worker

    def no_process(ctx, nice):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(bot_pool, "Worker", no_process)
    said = (r"bot 'greedy' failed: no worker process could be started "
            r"\(BlockingIOError: \[Errno 11\] Resource temporarily unavailable\)")
    with pytest.raises(AgentFailure, match=said):
        pool.decide(_job(GreedyAgent(Rules())))
    assert pool.load()["computing"] == 0 and pool.load()["workers"] == 0
    with pytest.raises(AgentFailure, match="no worker process could be started"):
        asyncio.run(pool.decide_async(_job(GreedyAgent(Rules()))))
    monkeypatch.setattr(bot_pool, "Worker", real)
    assert pool.decide(_job(GreedyAgent(Rules())))


def test_one_client_computes_at_most_its_share_and_another_goes_first(tmp_path):
    """Two workers, one move computing per client: client a's three moves run one after another, and
    client b's move, asked last, runs beside a's first rather than after all of them."""
    pool = BotPool(2, per_client=1)

    async def main():
        done = []

        async def ask(tag: str, client: str) -> None:
            bot = _Sleepy(Rules(), seconds=0.4, folder=tmp_path, tag=tag)
            await pool.decide_async(_job(bot, client=client))
            done.append(tag)

        tasks = [asyncio.create_task(ask(f"a{k}", "a")) for k in range(3)]
        await asyncio.sleep(0.05)
        tasks.append(asyncio.create_task(ask("b", "b")))
        await asyncio.gather(*tasks)
        return done

    try:
        done = asyncio.run(main())
    finally:
        pool.close()
    assert set(done[:2]) == {"a0", "b"} and done[2:] == ["a1", "a2"], done
    starts = sorted(tmp_path.glob("*-start"), key=lambda p: int(p.name.split("-")[1]))
    assert [p.name.split("-")[0] for p in starts][:2] in (["a0", "b"], ["b", "a0"])


def test_a_moves_answer_depends_on_its_game_and_seed_not_on_its_worker():
    """A random bot's move, asked of two pools (fresh workers, and workers that played before)."""
    first, second = BotPool(2), BotPool(2)
    try:
        second.decide(_job(RandomAgent(Rules(), seed=9), seed=77))
        for seed in (1, 2, 3):
            bot = RandomAgent(Rules(), seed=4)
            assert first.decide(_job(bot, seed=seed)) == second.decide(_job(bot, seed=seed))
        moves = {first.decide(_job(RandomAgent(Rules(), seed=4), seed=s)) for s in range(12)}
        assert len(moves) > 1  # the move's seed reaches the bot
    finally:
        first.close()
        second.close()


def test_closing_the_pool_fails_the_moves_waiting_for_a_worker():
    pool = BotPool(1)

    async def main():
        slow = asyncio.create_task(pool.decide_async(_job(_Sleepy(Rules(), seconds=5.0), client="a")))
        waiting = asyncio.create_task(pool.decide_async(_job(GreedyAgent(Rules()), client="b")))
        for _ in range(500):
            await asyncio.sleep(0.01)
            if pool.load()["waiting"] == 1:
                break
        assert pool.load()["waiting"] == 1
        pool.close()
        return await asyncio.gather(slow, waiting, return_exceptions=True)

    got = asyncio.run(main())
    assert all(isinstance(x, AgentFailure) for x in got), got
    assert pool.pids() == []


def test_many_moves_at_once_use_at_most_one_thread_per_worker(pool):
    import threading

    async def main():
        jobs = [pool.decide_async(_job(GreedyAgent(Rules()), client=str(k))) for k in range(30)]
        return await asyncio.gather(*jobs)

    assert len(asyncio.run(main())) == 30
    mine = [t for t in threading.enumerate() if t.name.startswith(pool.name + "_")]
    assert len(mine) <= pool.size


def test_a_pooled_agent_carries_no_key(monkeypatch):
    """A model's key stays in the environment: the agent sent to the workers holds none of it."""
    from agents.external.llm import LLMAgent

    key = "sk-probe-0123456789abcdefghij"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    bot = pooled(LLMAgent(Rules(), 1, model="m", base_url="http://127.0.0.1:9/v1"))
    assert key.encode() not in bot.blob and key[8:16].encode() not in bot.blob
