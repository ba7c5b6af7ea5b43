"""Open a page in Debian's headless Chromium through Debian's chromedriver (Selenium), and record
what it requested and logged.

Nothing downloads a browser or a driver: both paths are given to Selenium, so its driver manager
never runs (selenium 4.51.0, selenium/webdriver/common/driver_finder.py: "Skipping Selenium
Manager; path to driver specified in Service class"). `make browser` installs the two Debian
packages when they are absent.

    python -m tests.browser PAGE.html SHOT.png [WIDTH [HEIGHT]]   # a screenshot for docs/: the
                                                                  # whole page, or its top HEIGHT px
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
# Flags known to work in this sandbox (root, no GPU, no D-Bus); none of them silences errors.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


@dataclass
class Visit:
    url: str
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    console: list[dict[str, Any]] = field(default_factory=list)  # the browser log
    result: Any = None  # what the script returned

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [e for e in self.console if e.get("level") == "SEVERE"]

    @property
    def network(self) -> list[str]:
        """Requests other than the page itself and inline data."""
        return [u for u in self.requests if u != self.url and not u.startswith("data:")]


def missing() -> str:
    """Why the browser cannot start ("" when it can)."""
    absent = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    return f"{', '.join(absent)} missing: run `make browser`" if absent else ""


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[webdriver.Chrome]:
    profile = tempfile.mkdtemp(prefix="accel-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        opts.add_argument(flag)
    # Network events come from the performance log, console messages from the browser log.
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def visit(driver: webdriver.Chrome, page: Path, script: str = "return null;") -> Visit:
    """Load a file, run `script` in it, and collect its requests and console messages."""
    url = page.resolve().as_uri()
    driver.get("about:blank")  # leave the start page (Chromium's new-tab page loads its own files)
    driver.get_log("performance")  # and forget what it did
    driver.get(url)
    out = Visit(url, result=driver.execute_script(script))
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            out.requests.append(message["params"]["request"]["url"])
    out.console = driver.get_log("browser")
    return out


def screenshot(driver: webdriver.Chrome, dest: Path, height: int | None = None) -> bytes:
    """A PNG of the whole page (beyond the window), or of its top `height` pixels, written to dest."""
    size = driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight];"
    )
    if height is not None:
        size[1] = min(size[1], height)
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1},
        },
    )
    data = base64.b64decode(shot["data"])
    dest.write_bytes(data)
    return data


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    if why := missing():
        print(why, file=sys.stderr)
        return 2
    width = int(argv[2]) if len(argv) > 2 else 1280
    height = int(argv[3]) if len(argv) > 3 else None
    with chromium(width) as driver:
        seen = visit(driver, Path(argv[0]))
        screenshot(driver, Path(argv[1]), height)
    print(f"wrote {argv[1]}; {len(seen.network)} requests, {len(seen.errors)} console errors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
