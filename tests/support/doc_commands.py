"""What the tests of the docs' commands share (tests/docs/test_readme.py, tests/docs/test_howto.py): the
fenced shell blocks of a page, a command continued over lines read as one, and a user's fresh
clone of the repository to run them in (so that ``git status`` there shows what they left).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHELL = ("bash", "sh", "console", "shell")
"""The fence languages of a block of shell commands."""


def shell_blocks(text: str) -> list[str]:
    """The bodies of ``text``'s fenced shell blocks (```bash ...), in order."""
    fenced = re.findall(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```", text, flags=re.S | re.M)
    return [body for lang, body in fenced if lang in SHELL]


def joined(block: str) -> str:
    """``block`` with each command continued over lines (a trailing backslash) on one line."""
    return re.sub(r"\\\n\s*", " ", block)


def command_lines(block: str) -> list[str]:
    """The commands of a shell block, one a line, continuations joined, comments and blank lines left out."""
    out = []
    for line in joined(block).splitlines():
        line = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip()  # a comment, whole line or trailing
        if line:
            out.append(line)
    return out


def git(args: list[str], cwd: Path) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"git {shlex.join(args)}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    return result.stdout


def fresh_clone(dest: Path) -> Path:
    """A user's fresh clone of the repository at ``dest``: the files git has of the working tree
    (tracked ones and new ones it does not ignore, as they are now, so the docs and .gitignore
    under test are this tree's) committed in a new repository. Skips outside a git checkout."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: a fresh clone needs it")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    if listed.returncode != 0:
        pytest.skip(f"{REPO} is not a git checkout: {listed.stderr.strip()[:200]}")
    for name in filter(None, listed.stdout.split("\0")):
        source = REPO / name
        if source.is_file() or source.is_symlink():  # not a tracked file deleted in the working tree
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name, follow_symlinks=False)
    git(["init", "-q"], dest)
    git(["add", "-A", "-f"], dest)
    git(["-c", "user.name=rmbench tests", "-c", "user.email=tests@rmbench.invalid", "-c", "commit.gpgsign=false",
         "commit", "-q", "--no-verify", "-m", "fresh clone"], dest)
    return dest


def left_behind(clone: Path) -> str:
    """What ``git status`` of ``clone`` shows (every untracked file named): empty when the commands
    run there wrote only into folders git ignores."""
    return git(["status", "--porcelain", "--untracked-files=all"], clone)
