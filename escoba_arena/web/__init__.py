"""The web arena: play the bots, watch replays and read tournament results in a browser.

Start it with ``escoba-arena`` or ``python -m escoba_arena.web`` (needs the ``[web]`` extra).
"""
