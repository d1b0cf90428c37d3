"""Turn a played tournament into statistics: per pair, per agent, and ratings.

Per pair (A, B), over every lineup where both sit (with 2 sides: their head-to-head match):

- **points-per-round difference** A - B with a CI *paired over deals*: the difference of the two
  sides' points summed over all games, divided by the rounds those games took. The games of one
  deal (its seat rotations) form one independent sample, so the luck of the cards cancels inside
  it: the CI is that of a ratio estimator over deals (``stats.ratio_ci``; with single rounds it
  is the plain CI of the per-deal mean difference);
- **win rate** of A against B: the share of games (in ``--rounds`` mode each round is a game) in
  which A's side scored more than B's, a tie or a game cut by ``max_rounds`` counting half, with
  Wilson's interval over games (it treats the games as independent, although the rotations of a
  deal are not; the paired points difference above is the statistic that accounts for that);
- **escobas per round** of each, and A's **share** of the points of each category (cards, oros,
  velo, sevens) won by A or B.

An agent that fills several positions of one lineup (fewer agents than sides) counts with the mean
of its positions.

**Ratings**: an OpenSkill Plackett-Luce model (``openskill``) is updated with one match per
(deal, lineup), in deal-major order, ranking the lineup's agents by their points per round on that
deal (over all its rotations; equal points tie). Each agent's rating is ``mu`` with
uncertainty ``sigma``; the interval is ``mu +- z * sigma``. The model has no skill drift (``tau = 0``):
an agent does not change during a tournament, so every deal is evidence about the same skill.
"""

from __future__ import annotations

import math

import numpy as np

from .play import CATEGORIES, Block
from .runner import TournamentRun
from .stats import group_sums, ratio_ci, wilson_interval, z_value

SHARE_CATEGORIES = ("cards", "oros", "velo", "sevens")
RATING_MODEL = {"library": "openskill", "model": "PlackettLuce", "mu": 25.0, "sigma": 25.0 / 3,
                "beta": 25.0 / 6, "tau": 0.0,
                "matches": "one per (deal, lineup), deal-major order, ranked by points per round"}
"""The rating model and how results are fed to it (recorded in the results file)."""


def lineup_arrays(blocks: list[Block]) -> dict[str, np.ndarray]:
    """Return a lineup's slot arrays concatenated in deal order."""
    keys = ("deal", "rotation", "points", "categories", "rounds", "truncated")
    return {k: np.concatenate([getattr(b, k) for b in blocks]) for k in keys}


def _position_mean(a: np.ndarray, positions: list[int]) -> np.ndarray:
    """Return the mean over the given lineup positions (last axis)."""
    return a[..., positions].mean(axis=-1)


def pair_stats(run: TournamentRun) -> list[dict]:
    """Return the statistics of every pair of agents that met, in entrant order."""
    ent = run.config.entrants
    conf = run.config.confidence
    data = [lineup_arrays(b) for b in run.blocks]
    out = []
    for a in range(len(ent)):
        for b in range(a + 1, len(ent)):
            diffs, deal_rounds, n_lineups = [], [], 0
            wins = draws = games = rounds = truncated = 0
            pts = np.zeros(2)
            cats = np.zeros((2, len(CATEGORIES)))
            for lineup, d in zip(run.lineups, data, strict=True):
                pa = [k for k, e in enumerate(lineup) if e == a]
                pb = [k for k, e in enumerate(lineup) if e == b]
                if not pa or not pb:
                    continue
                n_lineups += 1
                xa, xb = _position_mean(d["points"], pa), _position_mean(d["points"], pb)
                r = d["rounds"]
                diffs.append(group_sums(xa - xb, d["deal"]))
                deal_rounds.append(group_sums(r, d["deal"]))
                cut = d["truncated"]  # a game cut by max_rounds is a draw
                wins += int(((xa > xb) & ~cut).sum())
                draws += int(((xa == xb) | cut).sum())
                games += len(r)
                rounds += int(r.sum())
                truncated += int(d["truncated"].sum())
                pts += [xa.sum(), xb.sum()]
                cats[0] += _position_mean(d["categories"], pa).sum(axis=0)
                cats[1] += _position_mean(d["categories"], pb).sum(axis=0)
            if not n_lineups:
                continue
            sample = np.concatenate(diffs)
            m, lo, hi = ratio_ci(sample, np.concatenate(deal_rounds), conf)
            rate = (wins + 0.5 * draws) / games
            wlo, whi = wilson_interval(wins + 0.5 * draws, games, conf)
            ci = {c: i for i, c in enumerate(CATEGORIES)}
            share = {}
            for c in SHARE_CATEGORIES:
                tot = cats[0, ci[c]] + cats[1, ci[c]]
                share[c] = float(cats[0, ci[c]] / tot) if tot > 0 else math.nan
            out.append({
                "a": ent[a], "b": ent[b], "lineups": n_lineups, "deals": int(sample.size),
                "games": games, "rounds": rounds, "truncated": truncated,
                "diff": {"mean": m, "lo": lo, "hi": hi},
                "points_per_round": {"a": float(pts[0] / rounds), "b": float(pts[1] / rounds)},
                "win_rate": {"rate": rate, "lo": wlo, "hi": whi, "wins": wins, "draws": draws,
                             "losses": games - wins - draws, "n": games},
                "escobas_per_round": {"a": float(cats[0, ci["escobas"]] / rounds),
                                      "b": float(cats[1, ci["escobas"]] / rounds)},
                "category_share": share,
                "category_points_per_round": {
                    side: {c: float(cats[j, i] / rounds) for i, c in enumerate(CATEGORIES)}
                    for j, side in enumerate(("a", "b"))
                },
            })
    return out


def agent_stats(run: TournamentRun) -> list[dict]:
    """Return each agent's totals over the whole tournament (points and escobas per round)."""
    ent = run.config.entrants
    out = []
    data = [lineup_arrays(b) for b in run.blocks]
    esc = CATEGORIES.index("escobas")
    for a in range(len(ent)):
        pts = esc_n = rounds = games = 0
        for lineup, d in zip(run.lineups, data, strict=True):
            pa = [k for k, e in enumerate(lineup) if e == a]
            if not pa:
                continue
            pts += float(_position_mean(d["points"], pa).sum())
            esc_n += float(_position_mean(d["categories"][:, esc], pa).sum())
            rounds += int(d["rounds"].sum())
            games += len(d["rounds"])
        out.append({"agent": ent[a], "games": games, "rounds": rounds,
                    "points_per_round": pts / rounds if rounds else math.nan,
                    "escobas_per_round": esc_n / rounds if rounds else math.nan})
    return out


def fit_ratings(run: TournamentRun) -> list[dict]:
    """Return the OpenSkill (Plackett-Luce) rating of every agent, best first (module docstring)."""
    from openskill.models import PlackettLuce  # the [agents] extra

    ent = run.config.entrants
    z = z_value(run.config.confidence)
    m = RATING_MODEL
    model = PlackettLuce(mu=m["mu"], sigma=m["sigma"], beta=m["beta"], tau=m["tau"])
    ratings = {a: model.rating(name=ent[a]) for a in range(len(ent))}
    # Per lineup: (deals, distinct agents) points per round of each agent on each deal.
    per_lineup = []
    for lineup, blocks in zip(run.lineups, run.blocks, strict=True):
        d = lineup_arrays(blocks)
        agents = sorted(set(lineup))
        cols = []
        for a in agents:
            pa = [k for k, e in enumerate(lineup) if e == a]
            pts = group_sums(_position_mean(d["points"], pa), d["deal"])
            cols.append(pts / group_sums(d["rounds"], d["deal"]))
        per_lineup.append((agents, np.stack(cols, axis=1)))
    n_deals = max(x.shape[0] for _, x in per_lineup)
    for deal in range(n_deals):
        for agents, x in per_lineup:
            if deal >= x.shape[0]:
                continue
            score = x[deal]
            ranks = [int((score > s).sum()) + 1 for s in score]
            teams = [[ratings[a]] for a in agents]
            new = model.rate(teams, ranks=ranks)
            for a, team in zip(agents, new, strict=True):
                ratings[a] = team[0]
    out = []
    for a in range(len(ent)):
        r = ratings[a]
        out.append({"agent": ent[a], "mu": float(r.mu), "sigma": float(r.sigma),
                    "lo": float(r.mu - z * r.sigma), "hi": float(r.mu + z * r.sigma),
                    "ordinal": float(r.mu - 3 * r.sigma)})
    out.sort(key=lambda r: -r["mu"])
    return out
