"""A tournament reads each agent spec once, where it enters (the command line, a config), and every layer
after (the duplicate check, seeds, the journal's key, the workers) takes the value read: one agent given
under two spellings is refused as one agent given twice, and no worker parses a spec again."""

from __future__ import annotations

import pickle

import pytest

from agents.spec import registry
from agents.tournament import cli, runner
from agents.tournament.runner import TournamentConfig, make_tasks, run_task

_ARGS = ["--rounds", "4", "--block-deals", "2", "--workers", "1", "--no-progress", "--no-plot"]


def _counting_parser(monkeypatch) -> list[str]:
    """Count every call of the registry's spec parser (each one reads a spec's text)."""
    calls: list[str] = []
    real = registry.parse_spec

    def counting(spec):
        calls.append(spec)
        return real(spec)

    monkeypatch.setattr(registry, "parse_spec", counting)
    return calls


def test_one_agent_given_under_two_spellings_is_refused(tmp_path, capsys):
    """``search`` and ``search:sims=400`` are one agent (400 is search's default) with one seed: two
    entrants that are one agent would be a pair of one agent against itself counted as two."""
    code = cli.main(["--agents", "search", "search:sims=400", *_ARGS, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1, err
    assert "more than once" in err[0] and "search:sims=400" in err[0]
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("agents, vs", [(("search", "search:sims=0400"), None),
                                        (("greedy", "expert:decided=0.20"), "expert"),
                                        (("endgame:base=expert", "endgame"), None)])
def test_the_config_compares_agents_not_spellings(agents, vs):
    with pytest.raises(ValueError, match="more than once|also in the opponent list"):
        TournamentConfig(agents=agents, vs=vs).check()


def test_a_tournament_reads_each_spec_once(tmp_path, monkeypatch):
    calls = _counting_parser(monkeypatch)
    checks = []
    real_check = TournamentConfig.check
    monkeypatch.setattr(TournamentConfig, "check", lambda self: checks.append(1) or real_check(self))
    agents = ["random", "greedy", "expert"]
    assert cli.main(["--agents", *agents, *_ARGS, "--out", str(tmp_path / "r")]) == 0
    assert sorted(calls) == sorted(agents)  # 3 agents, 3 lineups, 6 tasks: 3 reads
    assert checks == [1]


def test_a_worker_builds_its_agents_from_the_value_read(monkeypatch):
    """A task carries the specs as read (picklable, to a worker process or a Ray node): building and
    seeding its agents parses nothing."""
    config = TournamentConfig(agents=("greedy", "search:sims=3,policy=expert"), deals=2, block_deals=2)
    task = pickle.loads(pickle.dumps(make_tasks(config)[0]))
    calls = _counting_parser(monkeypatch)
    runner._AGENTS.clear()
    block = run_task(task)
    assert calls == [] and len(block.rounds) == 4
