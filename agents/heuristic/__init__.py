"""Heuristic agents: fixed rules over the observation, no search at play time.

- ``greedy``: the most valuable capture now (``GreedyAgent``);
- ``expert``: capture value, sweep threat and discard choice, with the partner in mind (``ExpertAgent``);
- ``endgame``: the exact solver of a 2-player round once the stock is empty (``EndgameAgent``, ``solve``);
- ``weights``: the card weights (velo, sevens, oros) the heuristics and the search rollouts share.
"""
