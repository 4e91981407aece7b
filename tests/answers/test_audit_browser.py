"""A labeller's session on the audit's page in a real headless Chromium (selenium + chromedriver):
open label.html from disk, label every reply (keys, one with the mouse, one unsure), reload midway
(progress survives), save labels.json; then `medscope answers agreement` on that file.

Needs Debian's chromium and chromium-driver (cluster/setup-env.sh --dev installs them) and
selenium (the dev extra); skipped with that reason when either is missing.
"""

from __future__ import annotations

import json

import pytest

from medscope.answers import audit as aud
from medscope.testing.gate import wait_for
from medscope.testing.synthetic_runs import reply_run
from pipelines.cli import main as cli

from tests.fixtures import browser as chromium

chromium.require()  # skips the module, saying why, without Chromium
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT_S = 120  # a wait for the page, never a verdict: ample on a busy machine
KEY_OF = {"claim": "1", "deny": "2", "refer": "3", "clarify": "4", "unparseable": "5", "unsure": "u"}


@pytest.fixture
def browser(tmp_path, monkeypatch):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver = chromium.start(tmp_path, monkeypatch, flags=["--window-size=1200,900"],
                            prefs={"download.default_directory": str(downloads), "download.prompt_for_download": False})
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    yield driver, downloads
    driver.quit()


def _current(driver) -> str:
    return WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: d.find_element(By.ID, "reply").get_attribute("data-id"))


def _reload_until_resume_offered(driver, progress: str) -> None:
    """Reload the page until it offers to continue at ``progress``.

    Chromium hands a page's localStorage writes to its storage service asynchronously; on a loaded
    machine a reload issued at once started before the last write had landed (a fresh-clone run
    of the suite: no offer to continue). A labeller reloads seconds later; the test reloads again
    until the stored state is read, within WAIT_S."""
    def offered(d):
        if d.find_element(By.ID, "resume").is_displayed() and progress in d.find_element(By.ID, "resume-n").text:
            return True
        d.refresh()
        return False

    driver.refresh()
    WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,)).until(offered)


@pytest.mark.slow
def test_a_labeller_labels_every_reply_survives_a_reload_and_saves_labels(tmp_path, browser):
    driver, downloads = browser
    made = reply_run(str(tmp_path / "run"), n_lesion=3, n_negative=2)
    assert cli(["answers", "audit", "--episodes", made["eval"], "--sample", "10"]) == 0
    folder = tmp_path / "run" / "eval" / "answers_audit"
    sample = {r["sample_id"]: r for r in aud.read_sample(str(folder))}
    meant = {sid: made["intent"][(r["model"], r["condition"], r["item_id"])] for sid, r in sample.items()}
    driver.get("file://" + str(folder / "label.html"))
    driver.find_element(By.ID, "labeller").send_keys("JD")
    driver.find_element(By.CSS_SELECTOR, "#who button").click()
    body = driver.find_element(By.TAG_NAME, "body")
    seen, given = [], {}
    for step in range(len(sample)):
        if step == 5:  # midway: reload; the page offers to continue, at the same reply
            before = _current(driver)
            _reload_until_resume_offered(driver, "5 of 10 labelled")
            driver.find_element(By.ID, "resume-go").click()
            assert _current(driver) == before
            body = driver.find_element(By.TAG_NAME, "body")
        sid = _current(driver)
        seen.append(sid)
        shown = driver.find_element(By.ID, "reply").text
        assert shown == sample[sid]["reply"].strip()
        assert driver.find_element(By.ID, "next").get_attribute("disabled")  # a choice first
        label = "unsure" if step == 7 else meant[sid]
        given[sid] = label
        if step == 2:  # a mouse user
            driver.find_element(By.CSS_SELECTOR, f"input[name=decision][value={label}]").click()
            driver.find_element(By.ID, "next").click()
        else:
            body.send_keys(KEY_OF[label], Keys.ENTER)
    assert sorted(seen) == sorted(sample)  # every reply once
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_element(By.ID, "done").is_displayed())
    text = driver.find_element(By.TAG_NAME, "body").get_attribute("innerText")
    for leak in ("always-present", "pixel-reader", "chatty", "agent", "blind"):
        assert leak not in text
    driver.find_element(By.ID, "download").click()
    files = wait_for(lambda: list(downloads.glob("labels.json")), "the browser to save labels.json", deadline_s=WAIT_S)
    doc = json.loads(files[0].read_text())
    assert doc["labels"] == given and doc["complete"] is True and doc["labeller"] == "JD"
    assert doc["sample_file"] == str(folder / "audit_sample.jsonl")
    assert doc["sample_hash"] == json.loads((folder / "audit.json").read_text())["sample_hash"]
    assert cli(["answers", "agreement", "--labels", str(files[0]), "--episodes", made["eval"],
                "--out", str(tmp_path / "agreement.json")]) == 0
    o = json.loads((tmp_path / "agreement.json").read_text())["overall"]
    assert (o["n"], o["unsure"], o["flips"]) == (9, 1, 0)
