"""Network agents (torch): the PPO policy networks and the move networks, their inputs and files.

- ``neural``: the PPO policy/value network and its agent (``NeuralAgent``), checkpoints and their checks;
- ``solo``: the 2-player network-only agent, midgame and endgame move networks (``SoloAgent``);
- ``tablenet``: the move networks of the larger tables (``TableNetAgent``);
- ``move_inputs``: the per-move inputs those move networks read;
- ``fixedpoint``: how every network here decides: fixed-point arithmetic, the same move on every machine;
- ``loader``: one checkpoint file -> the agent that plays it (``checkpoint:PATH``);
- ``shipped``: which shipped file plays which table (data only); the files are in ``agents/pretrained/``.

Nothing here is imported until a network agent is built, so the core installs without torch.
"""
