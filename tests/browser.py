"""Headless Chromium for the tests that look at a page as a person would (the reading page, the
report): Debian's chromium and chromedriver, which `cluster/setup-env.sh --dev` installs, driven
by selenium. A test module calls :func:`require` at import (it skips the module, saying why, when
either is missing) and :func:`start` in its fixture."""

from __future__ import annotations

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
# no network here: nothing in the background may try to reach one
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def require():
    """The selenium webdriver module; skips the calling test module when Chromium is missing."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium / chromedriver not installed (apt-get install chromium chromium-driver; "
                    "cluster/setup-env.sh --dev does it)", allow_module_level=True)
    return webdriver


def start(tmp_path, monkeypatch, flags=(), prefs=None):
    """A Chromium driver with a fresh profile under ``tmp_path``; the caller quits it."""
    webdriver = require()
    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium-manager must not look for drivers online
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in [*FLAGS, *flags, f"--user-data-dir={tmp_path / 'profile'}"]:
        opts.add_argument(flag)
    if prefs:
        opts.add_experimental_option("prefs", prefs)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    return driver
