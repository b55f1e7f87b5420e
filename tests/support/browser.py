"""The headless browser the HTML tests drive (Debian's chromium, or Chrome), or skip."""

import shutil

import pytest


def find_browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no headless browser (chromium, chromium-browser or google-chrome) on PATH; on Debian: "
                "apt-get install -y chromium")
