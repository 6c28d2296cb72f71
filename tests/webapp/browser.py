"""Headless Chromium for the browser tests: Debian's ``/usr/bin/chromium`` driven by Selenium through
the system ``chromedriver`` (nothing is downloaded); ``start_browser`` says why where none can start."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["CHROME_FLAGS", "screenshot", "start_browser"]

CHROME_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--window-size=1400,1000")
"""Chromium as root in a container: no sandbox, no GPU, nothing fetched in the background."""


def start_browser() -> tuple[Any | None, str]:
    """``(driver, "")``, or ``(None, why not)`` when Selenium, Chromium or chromedriver is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as err:
        return None, f"selenium is not installed ({err})"
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        return None, "no system chromium and chromedriver (apt-get install chromium chromium-driver)"
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='chromium-profile-')}")
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    except Exception as err:  # the browser failed to start: say why, the tests skip
        return None, f"chromium did not start: {type(err).__name__}: {str(err).splitlines()[0]}"
    driver.set_page_load_timeout(30)
    return driver, ""


def screenshot(driver: Any, folder: Path, name: str) -> Path:
    """The whole window as ``folder/NAME.png``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
