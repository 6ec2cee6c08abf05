"""A real browser for the page tests: Debian's chromium driven through its chromedriver by
Selenium, headless, with a fresh profile. Where either is missing the tests skip, saying
which (`make test` installs both where the machine can: the Makefile's system-packages)."""

from __future__ import annotations

import shutil

import pytest

# Flags that let chromium run headless as root in a container, and keep it off the network.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1700")


def missing() -> str | None:
    """Why no browser can be driven here, or None when one can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev group has it)"
    for command in ("chromium", "chromedriver"):
        if shutil.which(command) is None:
            return (f"{command} is not installed (make test installs Debian's chromium and "
                    "chromium-driver where it can)")
    return None


def chromium(profile):
    """A started headless chromium WebDriver with its profile in the folder `profile`,
    recording the page's console; the caller quits it. Skips the test when no browser can
    be driven."""
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


def console_errors(driver) -> list[str]:
    """The page's console messages of level SEVERE (errors) so far."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE"]
