"""A headless Debian `chromium` driven over the DevTools protocol through a pipe (no extra package).

Role: opens a page, evaluates script in it and clicks where a real mouse would (at an element's
centre), for the report's browser tests (`tests/test_report_scale.py`), and as a command the
page's load time for `bench/report.py` (`python tests/browser.py PAGE --runs N`). Chromium is
started with `--remote-debugging-pipe`: it reads commands from its file descriptor 3 and writes
answers and events to 4, each a JSON message ended by a NUL byte.

    with Browser(binary, profile) as b:
        ms = b.open(page.as_uri())          # milliseconds to the first frame after the load event
        b.click("#some-id")
        b.eval("document.title")
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

#: The flags of a quiet, offline, throw-away headless browser.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    """The path of a chromium (or Chrome) binary, or None."""
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


class BrowserError(RuntimeError):
    """The browser did not answer, or answered with an error."""


class Browser:
    """One headless chromium with one page, driven by DevTools commands."""

    def __init__(self, binary: str, profile: Path, size: str = "1280,2000", timeout: float = 120.0) -> None:
        self.timeout = timeout
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()

        def fds_3_and_4() -> None:  # in the child: its end of each pipe as fd 3 (commands) and 4 (answers)
            a, b = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size}", "--remote-debugging-pipe",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=fds_3_and_4)
        os.close(to_r)
        os.close(from_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self._send("Target.getTargets")["targetInfos"]
        page = next(t["targetId"] for t in target if t["type"] == "page")
        self.session = self._send("Target.attachToTarget", {"targetId": page, "flatten": True})["sessionId"]
        self.send("Page.enable")

    # -- the protocol

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_r], [], [], left)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self._from_r, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        os.write(self._to_w, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A command to the page's session; its result."""
        return self._send(method, params, self.session)

    def wait_event(self, method: str) -> dict[str, Any]:
        """The first event `method` not yet seen (taken off the list)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    # -- what a test does

    def eval(self, expression: str) -> Any:
        """The value of a script expression in the page (a promise is awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def open(self, url: str) -> float:
        """Load `url`; milliseconds from the navigation's start to the first frame drawn after its load event."""
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")
        return float(self.eval("new Promise(r => requestAnimationFrame(() => setTimeout(() => r(performance.now()))))"))

    def click(self, selector: str) -> None:
        """Scroll the element into view and click the middle of its box with the mouse."""
        box = self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                        " if (!e) { return null; } e.scrollIntoView({block: 'center'});"
                        " const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        if box is None:
            raise BrowserError(f"no element {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    def close(self) -> None:
        try:
            self._send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)
        os.close(self._from_r)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":  # `python tests/browser.py PAGE --runs N`: the page's median load time (bench/report.py)
    import argparse
    import statistics
    import sys
    import tempfile

    parser = argparse.ArgumentParser(description="median milliseconds to a page's first frame after its load event")
    parser.add_argument("page", type=Path)
    parser.add_argument("--runs", type=int, default=3, help="openings measured, after one left out as a warm-up")
    args = parser.parse_args()
    binary = find_chromium()
    if binary is None:
        sys.exit("no chromium (`apt-get install -y chromium`)")
    with tempfile.TemporaryDirectory() as profile, Browser(binary, Path(profile)) as b:
        print(statistics.median([b.open(args.page.resolve().as_uri()) for _ in range(args.runs + 1)][1:]))
