"""The ``rmbench`` command line, the top layer: it parses options, calls the library and prints.

* :mod:`~rmbench.cli.app`: the typer app and ``eval``, ``shift``, ``tasks``, ``models``, ``new-task``;
* :mod:`~rmbench.cli.train`: ``rmbench train``;
* :mod:`~rmbench.cli.results`: commands on runs already written (leaderboard, compare, verify, plot, export, report);
* :mod:`~rmbench.cli.common`: what every command shares (consoles, progress bars, user errors);
* :mod:`~rmbench.cli.tables`: terminal tables that never cut names;
* :mod:`~rmbench.cli.progress`: plain progress lines when stderr is not a terminal;
* :mod:`~rmbench.cli.debug`: ``--traceback`` / ``RMBENCH_DEBUG=1``, the user's own frames of an error.

May import every layer below; nothing imports it (but ``python -m rmbench``).
"""

from rmbench.cli.app import app, main

__all__ = ["app", "main"]
