"""Search agents: they sample the hidden cards and play positions out.

- ``pimc``: Perfect-Information Monte Carlo over sampled deals (``SearchAgent``) and its cheating
  reference that reads the true deal (``OracleAgent``);
- ``hybrid``: the expert while the stock lasts, the search or the exact solver at the end (``HybridAgent``);
- ``ismcts``: OpenSpiel's information-set MCTS over the ``python_escoba`` game (``ISMCTSAgent``).

The worlds they play out are built from observations by ``agents.worlds``.
"""
