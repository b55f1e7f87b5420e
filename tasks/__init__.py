"""Built-in task entries (YAML) and the small data the project writes itself.

Installed as the package ``rmbench.builtin_tasks`` so that a plain ``pip install .`` finds them.
"""
