"""Front-ends that sit above ``agents``: the web arena (``escoba_arena.web``)."""
