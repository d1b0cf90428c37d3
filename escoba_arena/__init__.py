"""Front-ends above ``agents``: games a person plays against the bots (``escoba_arena.terminal``)."""
