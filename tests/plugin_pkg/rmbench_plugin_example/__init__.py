"""An rmbench plugin: a task kind (``tasks``), a computed metric (``metric``), a leaderboard
format (``board``), an engine (``engine``), a model kind (``model``) and an LLM judge's protocol
(``judge``), each one module registered by one entry point (``pyproject.toml``). It imports
from ``rmbench.plugins`` only."""
