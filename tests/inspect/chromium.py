"""A headless Chromium driven over the DevTools protocol through a pipe -- for the tests of the
HTML page ``sd.show`` writes, and for the screenshot in ``docs/seeing-your-network.md``.

``--remote-debugging-pipe`` makes Chromium read protocol commands from its file descriptor 3 and
write replies and events to descriptor 4, each message JSON ended by a NUL byte.  No port is
opened and no driver package is needed (the protocol is a few JSON messages); Chromium itself
comes from Debian's ``chromium`` package.

    with Chromium() as browser:
        page = browser.open("file:///tmp/net.html")
        page.evaluate("document.title")
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

__all__ = ["Chromium", "Page", "find_chromium", "BrowserError"]

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         "--hide-scrollbars", "--remote-debugging-pipe"]


class BrowserError(RuntimeError):
    """The browser answered a command with an error, died, or did not answer in time."""


def find_chromium() -> str | None:
    """The path of a Chromium (or Chrome) program, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Chromium:
    """One headless browser process with a fresh profile folder, ended on ``close``."""

    def __init__(self, executable: str | None = None, width: int = 1200, height: int = 900,
                 timeout: float = 60.0):
        executable = executable or find_chromium()
        if executable is None:
            raise BrowserError("no Chromium found (Debian: apt-get install chromium)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="stadyn-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:       # in the child: the pipe ends become fds 3 and 4
            high_r, high_w = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, pass_fds=(3, 4, to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    # -- protocol -------------------------------------------------------------------------------
    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and wait for its reply; the reply's ``result``."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("the browser did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"the browser closed the pipe (exit code {self.proc.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> "Page":
        """A new tab showing ``url``, once its ``load`` event has fired."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        page = Page(self, session)
        page.send("Page.enable")
        page.send("Runtime.enable")
        page.send("Page.navigate", {"url": url})
        page.wait_for("document.readyState === 'complete'")
        return page

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close")
                except (BrowserError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            for fd in (self._to_browser, self._from_browser):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Page:
    """One tab: evaluate JavaScript, click at a point as a mouse does, take a screenshot."""

    def __init__(self, browser: Chromium, session: str):
        self.browser = browser
        self.session = session

    def send(self, method: str, params: dict | None = None) -> dict:
        return self.browser.send(method, params, self.session)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression (JSON-serialisable), or a BrowserError with the
        exception it threw."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"].get("exception", {}).get("description")
            raise BrowserError(f"{expression!r} threw: {details}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"!!({expression})"):
            if time.monotonic() > deadline:
                raise BrowserError(f"waited {timeout} s for {expression}")
            time.sleep(0.05)

    def click_element(self, selector: str) -> None:
        """Scroll the element into view and press and release the mouse at its centre (so the
        browser's own hit-testing picks what receives the click)."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return null; e.scrollIntoView({block: 'center', inline: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()")
        if box is None:
            raise BrowserError(f"no element matches {selector}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box["x"], "y": box["y"],
                                                   "button": "left", "clickCount": 1})

    def screenshot(self, path: str, width: int | None = None, height: int | None = None) -> None:
        """Save a PNG of the viewport (resized to ``width`` x ``height`` first if given)."""
        if width and height:
            self.send("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
