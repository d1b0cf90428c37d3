"""Front-ends that sit above ``agents``: the terminal game (``escoba_arena.terminal``) and the web arena
(``escoba_arena.web``)."""
