"""The dashboard in a real headless Chromium (Debian's chromium + chromedriver, driven by Selenium): the page
loads, a job's row changes when the job ends without a reload, and a click leads to the job's report.
Screenshots are kept as artifacts in $FRONTDESK_ARTIFACTS (default: the test's tmp dir).

The browser reaches the gateway's Unix socket through a plain TCP forwarder on loopback started by the test
(as an SSH socket forward would), so the gateway identifies the caller as the test's own user.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debian import need

selenium = pytest.importorskip("selenium")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM, DRIVER = need("chromium", "chromium"), need("chromedriver", "chromium-driver")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver (missing; not root)"
    ),
]


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture
def forward(gateway_factory: Any) -> Iterator[tuple[Any, str]]:
    """A gateway and the loopback URL that forwards to its Unix socket."""
    gw = gateway_factory()
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()
    opened: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            upstream = socket.socket(socket.AF_UNIX)
            opened.extend((client, upstream))
            upstream.connect(str(gw.socket))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield gw, f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(timeout=5)
    server.close()
    for s in opened:
        s.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900"):
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium'}")
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(DRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def _submit(gw: Any, tmp_path: Path, name: str, *cmd: str) -> int:
    body = {"spec": {"name": name, "command": list(cmd)}, "context": {"cwd": str(tmp_path)}}
    return int(gw.client.request("POST", "/v1/jobs", body)["id"])


def test_the_page_updates_live_and_clicks_through_to_a_report(forward: Any, browser: Any, tmp_path: Path) -> None:
    gw, url = forward
    artifacts = Path(os.environ.get("FRONTDESK_ARTIFACTS") or tmp_path)
    artifacts.mkdir(parents=True, exist_ok=True)
    done = _submit(gw, tmp_path, "browser-done", "sh", "-c", "echo from-the-browser-test")
    gw.wait_state(done, {"COMPLETED"})
    slow = _submit(gw, tmp_path, "browser-slow", "sleep", "60")
    gw.wait_state(slow, {"RUNNING"})
    browser.get(url + "/")
    assert "browser-done" in browser.page_source
    row = browser.find_element(By.XPATH, f"//tr[td[1]='{slow}']")
    assert "RUNNING" in row.text
    browser.save_screenshot(str(artifacts / "dashboard-running.png"))
    gw.cli("cancel", str(slow))
    WebDriverWait(browser, 30).until(
        lambda d: "CANCELLED" in d.find_element(By.XPATH, f"//tr[td[1]='{slow}']").text
    )  # no reload: the page's own refresh brought it
    browser.save_screenshot(str(artifacts / "dashboard-cancelled.png"))
    browser.find_element(By.CSS_SELECTOR, f"a[href='/ui/jobs/{done}']").click()
    WebDriverWait(browser, 30).until(lambda d: d.current_url.endswith(f"/ui/jobs/{done}"))
    report = browser.find_element(By.ID, "report").text
    assert f"job {done}" in report and "COMPLETED" in report
    browser.save_screenshot(str(artifacts / "report.png"))
    assert all((artifacts / n).stat().st_size > 0 for n in ("dashboard-running.png", "report.png"))
