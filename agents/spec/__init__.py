"""Agent specs: the one place an agent is declared, and everything derived from a spec string.

- ``registry``: name -> factory, typed parameters and description; ``make_agent(spec)``;
- ``values``: the parameter types (``Int``, ``Number``, ``Choice``, ``Flag``, ``File``, ``Text``);
- ``builders``: the factories of the registry entries that build through a file or an import;
- ``fingerprint``: hashes of the code and weights a spec loads from outside the project;
- ``shipped_agents``: the registrations of the shipped networks and the strongest agent of each table.
"""
