"""A headless Chromium driven over its DevTools pipe, to look at the viewer as a person would.

No port and no socket: Chromium reads DevTools commands from file descriptor 3 and writes its
answers to 4 (`--remote-debugging-pipe`), each message JSON ended by a NUL byte. The browser is
Debian's `chromium` (`apt-get install chromium`); it runs with every background connection off,
a fresh profile in a temporary folder, and is killed by its PID on close.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's own sandbox cannot start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """The Chromium binary on PATH (Debian names it `chromium`), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    """Chromium failed to start, answered with an error, or did not answer in time."""


class Chromium:
    """One headless browser with one page. Use as a context manager."""

    def __init__(self, binary: str | None = None, *, width: int = 1280, height: int = 900) -> None:
        binary = binary or find_chromium()
        if binary is None:
            raise BrowserError("no chromium on PATH (apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="viewer-chromium-")
        to_browser, self._commands = os.pipe()
        self._answers, from_browser = os.pipe()
        # Copies above 3 and 4, so that placing them at 3 and 4 in the child clobbers neither.
        for fd in (to_browser, from_browser):
            high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            os.close(fd)
            if fd == to_browser:
                to_browser = high
            else:
                from_browser = high

        def on_fds_3_and_4() -> None:
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=on_fds_3_and_4,
            close_fds=False,  # fds 3 and 4 are dup2-ed in; every other one of ours is CLOEXEC
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False,
        )
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for fd in (self._commands, self._answers):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    # ------------------------------------------------------------------------------ protocol

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: bool = True,
        timeout_s: float = 30.0,
    ) -> dict[str, Any]:
        """Send one command and return its result; events that come first are kept."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            if "method" in answer:
                self.events.append(answer)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._answers], [], [], left)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self._answers, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed its DevTools pipe (it exited)")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    # --------------------------------------------------------------------------------- page

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a thrown error is a BrowserError)."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, path: Path, *, ready: str = "document.body.dataset.ready === '1'") -> float:
        """Load a file and wait until `ready` holds; returns the seconds from navigation until
        the page says it was drawn (`data-drawn-ms` on its body), else until `ready` was seen."""
        self.send("Page.navigate", {"url": path.resolve().as_uri()})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.evaluate(f"document.readyState === 'complete' && ({ready})"):
                    drawn = "Number(document.body.dataset.drawnMs || performance.now())"
                    return self.evaluate(drawn) / 1000
            except BrowserError:
                pass  # the new document is not there yet
            time.sleep(0.02)
        raise BrowserError(f"{path} was not ready within 60 s")

    def blank(self) -> None:
        """Leave the page for an empty one (so the next `open` starts afresh)."""
        self.send("Page.navigate", {"url": "about:blank"})
        deadline = time.monotonic() + 30
        while self.evaluate("location.href") != "about:blank" and time.monotonic() < deadline:
            time.sleep(0.01)

    def click(self, selector: str) -> None:
        """Click the first element `selector` finds (a real DOM click)."""
        found = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return false; e.click(); return true; })()"
        )
        if not found:
            raise BrowserError(f"nothing matches {selector!r}")

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def problems(self) -> list[str]:
        """What the page reported going wrong: uncaught exceptions, console errors and
        Content-Security-Policy refusals, and any request that was not for a local file."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(f"log: {params['entry'].get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append(f"console: {params.get('args')}")
            elif method == "Network.requestWillBeSent":
                url = params.get("request", {}).get("url", "")
                if not url.startswith(("file://", "about:", "data:")):
                    out.append(f"request: {url}")
        return out
