"""The live page in a real browser (headless chromium through Selenium) while a real Trainer
runs in the test: the curves grow while it trains, a page opened after epoch 3 shows
epochs 1-3 at once, the resource panel shows the process's memory, the frozen report
draws the same, and no page logs a console error. Skips, saying why, without a browser.

The screenshot in docs/monitoring.md is taken here: DLFREE_UPDATE_SCREENSHOTS=1 writes it
to docs/images/dashboard.png."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path

import dlfree as dl
from dlfree import nn, optim

from support import browser

DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "images" / "dashboard.png"
EPOCHS = 6


class Gates:
    """Holds training at two points the test looks in at: after the dashboard started
    (until the first page is open) and at the end of epoch 3 (until the late page has
    looked); every batch sleeps a little so the live page sees the curves grow."""

    def __init__(self):
        self.started, self.page_open = threading.Event(), threading.Event()
        self.third_epoch_done, self.late_page_seen = threading.Event(), threading.Event()

    def dlfree_train_start(self, trainer):
        self.started.set()
        self.page_open.wait(60)

    def dlfree_train_batch_end(self, trainer):
        time.sleep(0.02)

    def dlfree_train_epoch_end(self, trainer, epoch):
        if epoch == 2:
            self.third_epoch_done.set()
            self.late_page_seen.wait(60)


def _count(driver, series: str) -> int:
    return int(driver.execute_script(
        "const p = document.querySelector(`polyline[data-series='${arguments[0]}']`);"
        "return p ? Number(p.dataset.count) : 0;", series))


def _wait(condition, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _rss(driver) -> float:
    text = driver.execute_script(
        "const c = document.querySelector('td[data-name=\"rss\"]');"
        "return c ? c.textContent : '';")
    return float(text.split()[0]) if text and text.split()[0] != "–" else 0.0


def test_the_live_page_in_a_browser_while_a_trainer_runs(tmp_path):
    driver = browser.chromium(tmp_path / "profile")
    try:
        _drive(driver, tmp_path)
    finally:
        driver.quit()


def _drive(driver, tmp_path):
    dl.manual_seed(0)
    x = dl.randn(96, 4)
    y = (x.sum(dim=1) > 0).long()
    data = dl.data.DataLoader(dl.data.TensorDataset(x, y), batch_size=8)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    gates = Gates()
    out = io.StringIO()
    trainer = dl.train.Trainer(
        model, optim.SGD(model.parameters(), lr=0.2), nn.CrossEntropyLoss(),
        max_epochs=EPOCHS, run_dir=tmp_path / "run", checkpoint_dir=tmp_path / "state",
        callbacks=[("dashboard", {"port": 0, "interval": 0.1, "file": out,
                                  "title": "A small classifier"}),
                   gates, ("model_checkpoint", {"monitor": "val_loss"})])
    failure: list[BaseException] = []

    def train():
        try:
            trainer.fit(data, data)
        except BaseException as e:  # noqa: BLE001 (reported by the test below)
            failure.append(e)
            gates.third_epoch_done.set()

    runner = threading.Thread(target=train, daemon=True)
    runner.start()
    assert gates.started.wait(60)
    url = trainer.callbacks[0].monitor.url
    assert out.getvalue() == f"dashboard: {url}\n"

    driver.get(url)
    _wait(lambda: driver.find_element("id", "status").text == "live", "the page to connect")
    live_tab = driver.current_window_handle
    gates.page_open.set()
    first = _wait(lambda: _count(driver, "step_loss"), "the first step points")
    _wait(lambda: _count(driver, "step_loss") >= first + 5, "the step curve to grow")
    assert _wait(lambda: _rss(driver), "the resource panel") > 1.0  # MiB: a live process

    assert gates.third_epoch_done.wait(60) and not failure, failure
    driver.switch_to.new_window("tab")  # a page opened late, with training held
    driver.get(url)
    _wait(lambda: _count(driver, "loss") == 3, "epochs 1-3 on the late page", timeout=5)
    assert _count(driver, "val_loss") == 3
    assert _count(driver, "step_loss") == 3 * len(data)
    assert driver.find_element("id", "epoch").text == f"3 / {EPOCHS}"
    assert _rss(driver) > 1.0
    gates.late_page_seen.set()

    runner.join(60)
    assert not runner.is_alive() and not failure, failure
    driver.switch_to.window(live_tab)
    _wait(lambda: driver.find_element("id", "status").text == "finished", "the end on the page")
    assert _count(driver, "loss") == EPOCHS
    assert _count(driver, "step_loss") == EPOCHS * len(data)
    log = driver.find_element("id", "log").text
    assert "training started" in log and "best model saved: epoch 1" in log
    assert "training checkpoint saved" in log
    assert driver.find_element("id", "eta").text == "done"
    shot = tmp_path / "dashboard.png"
    driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("DLFREE_UPDATE_SCREENSHOTS") == "1":
        DOCS_SCREENSHOT.parent.mkdir(exist_ok=True)
        DOCS_SCREENSHOT.write_bytes(shot.read_bytes())

    report = trainer.callbacks[0].report
    driver.get(report.as_uri())  # the frozen page: no server behind it any more
    _wait(lambda: _count(driver, "loss") == EPOCHS, "the report's curves", timeout=5)
    assert driver.find_element("id", "status").text == "report: finished"
    assert _rss(driver) > 1.0
    assert browser.console_errors(driver) == []
