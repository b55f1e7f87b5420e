"""The sink a tracker implements (:class:`TrackerSink`), its options, and the missing-extra error.

A sink names the library it imports (only when used: ``import rmbench`` never imports wandb),
the extra that installs it (``pip install 'rmbench[wandb]'``) and the options it takes by
``--log-arg NAME.KEY=VALUE``, each beside the environment variable the library reads without it.
Credentials are never options: an API key is read by the tracker's library from its own
environment variable (``WANDB_API_KEY``, ``MLFLOW_TRACKING_TOKEN``, ``HF_TOKEN`` ...), and rmbench
neither reads, logs nor writes it.
"""

from __future__ import annotations

import importlib
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from rmbench.core.options import Option, OptionValue, resolve_options
from rmbench.errors import ConfigError

if TYPE_CHECKING:  # the payload imports pandas and the publishing layer: only when a run is logged
    from rmbench.results.trackers.payload import TrackedRun


def without_credentials(text: str) -> str:
    """``text`` (a URI, or a message holding some) as it may be shown: each URI's
    ``user:password@`` becomes ``***@``."""
    return re.sub(r"\b([a-z][a-z0-9+.-]*://)[^/@\s]*@", r"\1***@", text, flags=re.IGNORECASE)


def install_line(extra: str) -> str:
    return f"pip install 'rmbench[{extra}]'"


def require(module: str, tracker: str, package: str, extra: str, flag: str = "--log-to") -> ModuleType:
    """Import ``module`` for ``--log-to tracker`` (``flag``: the option that named it, ``--to`` for
    ``rmbench log``); absent: one ConfigError line with the install command."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is not None and (exc.name == top or module.startswith(exc.name + ".")):
            raise ConfigError(f"{flag} {tracker} needs the {package} package, which is not installed: "
                              f"{install_line(extra)}") from None
        raise ConfigError(f"{flag} {tracker}: {module} failed to import ({exc}); reinstall it with "
                          f"{install_line(extra)}") from None
    except ImportError as exc:
        raise ConfigError(f"{flag} {tracker}: {module} failed to import ({exc}); reinstall it with "
                          f"{install_line(extra)}") from None


class TrackerSink(ABC):
    """One tracker: :meth:`check` before any model is scored, :meth:`log` once per run."""

    name: ClassVar[str]
    """What ``--log-to`` names."""
    library: ClassVar[str]
    """The module imported to log (``wandb``; ``tensorboard`` for TensorBoard's event files)."""
    package: ClassVar[str]
    """What pip installs (``mlflow-skinny``)."""
    extra: ClassVar[str]
    """The extra of rmbench that installs the library (``pip install 'rmbench[wandb]'``)."""
    options: ClassVar[tuple[Option, ...]]
    """``--log-arg NAME.KEY=VALUE`` keys, each an :class:`~rmbench.core.options.Option` (the record
    formats and engines declare theirs with) saying what it sets (and its environment variable);
    their default None: the library's environment decides."""
    credentials: ClassVar[str]
    """Where the library reads its credentials (named in the error for an option that would be one)."""

    def __init__(self, options: Mapping[str, str] | None = None, flag: str = "--log-to") -> None:
        self.flag = flag
        """The option that chose this tracker, as its messages name it (``--to`` for ``rmbench log``)."""
        self.settings: dict[str, OptionValue] = resolve_options(
            self.options, options or {}, f"{flag} {self.name}",
            note=f"; credentials are never options: {self.credentials}")

    def setting(self, key: str) -> str | None:
        """The text option ``key`` as given (None: not given)."""
        value = self.settings[key]
        return None if value is None else str(value)

    def check(self) -> None:
        """Before any scoring: the library imports (else the install line); a sink that can check
        its settings without a network call does so too (overriding this, after it)."""
        require(self.library, self.name, self.package, self.extra, self.flag)

    @abstractmethod
    def log(self, run: TrackedRun, step: int = 0) -> str:
        """Log ``run`` as one tracker run (metrics at ``step``); returns where it went (a URL or a path)."""
