"""The faces: ways to play the game, each over an executor (``escoba_env.executors``).

- ``escoba_v0``: the PettingZoo AEC env; ``single_agent``: the Gymnasium env (one learner seat);
- ``gym_vector``: N learner games as a Gymnasium ``VectorEnv``; ``selfplay_vector``: batched self-play;
- ``common``: what the env faces share (configuration, reset options, rewards, spaces, moves);
- ``text``: the text face for language models; ``textarena_env``: the TextArena env;
- ``openspiel``, ``rllib``, ``sb3``: the OpenSpiel game, RLlib's masking keys, an SB3 ``VecEnv``;
- ``render``, ``render_rgb``: ANSI and RGB pictures of a game;
- ``registration``: the Gymnasium id; ``opponent_specs``: opponents given by name; ``seeding``: the
  faces' seeds; ``cli``: the command-line pieces every program shares.
"""
