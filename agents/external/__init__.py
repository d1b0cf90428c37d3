"""Agents from outside the project, and what the project records about them.

- ``sb3_model``: a Stable-Baselines3 model file (``sb3:PATH``);
- ``python_factory``: a user's Python factory (``python:module:factory``);
- ``provenance``: which files such an agent loaded (its weights), for the fingerprints;
- ``llm``: a language model over an OpenAI-compatible chat API (``llm:...``);
- ``llm_standin``: a deterministic stand-in chat server for tests and offline runs
  (``python -m agents.external.llm_standin``).
"""
