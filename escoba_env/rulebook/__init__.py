"""The rule book: the rules as data and pure functions, with no executor and no face.

- ``rules``: the options (``Rules``) and the checks of every argument a rule takes;
- ``cards``: card ids, names and masks;
- ``capture``: capture options (sums to fifteen, jokers wild) and their look-up tables;
- ``scoring``: round scoring, batched and on Python ints;
- ``deal_rules``: deal-time rules: the deal hash and shuffle, the initial fifteen, the mesa turn-up.

Nothing here imports ``escoba_env.executors`` or ``escoba_env.faces`` (``tests/project/test_layering.py``).
"""
