"""A reader's session in a real headless Chromium (selenium + chromedriver): open the pack's page
from disk, enter the reader's details, answer every image with the keyboard (one with the mouse),
reload midway (progress survives), download the answer file; then `medscope reader analyse`
(its library call) on that file and a second scripted reader reproduces the hand-worked figures of
tests/reader/test_pack.py (AUC, kappa, Clopper-Pearson).

Needs Debian's chromium and chromium-driver (cluster/setup-env.sh --dev installs them) and
selenium (the dev extra); skipped with that reason when either is missing.
"""

from __future__ import annotations

import functools
import glob
import http.server
import json
import os
import threading

import pytest

from medscope.reader import KEY_FILE
from medscope.reader.analysis import analyse
from medscope.reader.pack import write_pack
from medscope.testing.gate import wait_for
from tests.fixtures.reader_study import (
    READER_A,
    READER_B,
    answer_file,
    build_small_views,
    scripted,
)

from tests.fixtures import browser as chromium

chromium.require()  # skips the module, saying why, without Chromium
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

WAIT_S = 120  # a wait for the page, never a verdict: ample on a busy machine
KEY_OF = {"definitely_real": "1", "probably_real": "2", "probably_edited": "3", "definitely_edited": "4",
          "yes": "y", "no": "n", "cannot_tell": "c"}


@pytest.fixture
def browser(tmp_path, monkeypatch):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver = chromium.start(tmp_path, monkeypatch, flags=["--window-size=1366,768"],
                            prefs={"download.default_directory": str(downloads), "download.prompt_for_download": False})
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    yield driver, downloads
    driver.quit()


def _current(driver) -> str:
    return driver.find_element(By.ID, "img").get_attribute("data-image")


def _progress(driver) -> str:
    return driver.find_element(By.ID, "progress").text


def _resume_offer(driver) -> str:
    """After a reload, the page's offer to continue ("A (8 of 16 answered)"), waited for; if it
    never comes, what the page shows and what the browser kept instead.

    Waited for because chromedriver's refresh can return before the reload has begun: on a busy
    machine the suite once read the old page's hidden, empty offer (''). An element of the old
    page goes stale as the new one loads; it is looked up again."""
    def offer(d):
        who = d.find_element(By.ID, "resume-who")
        return who.is_displayed() and who.text

    try:
        return WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,)).until(offer)
    except TimeoutException:
        shown = driver.find_element(By.TAG_NAME, "body").get_attribute("innerText")[:400]
        kept = driver.execute_script("return JSON.stringify(Object.keys(localStorage).map("
                                     "function (k) { return [k, localStorage.getItem(k).length]; }))")
        raise AssertionError(f"no offer to continue after the reload; the page shows {shown!r}; "
                             f"the browser keeps {kept}") from None


@pytest.mark.slow
def test_a_reader_answers_every_image_survives_a_reload_and_downloads_a_scored_file(tmp_path, browser):
    driver, downloads = browser
    views = build_small_views(tmp_path)
    key = write_pack(views, str(tmp_path / "pack"), name="main", per_kind=4, seed=5)
    assert len(key["items"]) == 16
    script = scripted(key, READER_A)
    driver.get("file://" + str(tmp_path / "pack" / "reading" / "index.html"))

    driver.find_element(By.ID, "reader-id").send_keys("A")
    Select(driver.find_element(By.ID, "specialty")).select_by_visible_text("Radiology")
    driver.find_element(By.ID, "years").send_keys("12")
    driver.find_element(By.ID, "start").click()
    body = driver.find_element(By.TAG_NAME, "body")
    # the image loads from the pack folder, re-saved at the pack's size (64 px synthetic -> 768)
    WebDriverWait(driver, WAIT_S).until(lambda d: d.execute_script(
        "var i = document.getElementById('img'); return i.complete && i.naturalWidth"))
    assert driver.execute_script("return document.getElementById('img').naturalWidth") == 768
    assert not driver.find_element(By.ID, "nostore").is_displayed()
    seen = []
    for step in range(16):
        if step == 8:  # midway: reload; the page offers to continue, at the same image
            before = _current(driver)
            driver.refresh()
            assert "8 of 16 answered" in _resume_offer(driver)
            driver.find_element(By.ID, "resume-go").click()
            assert _current(driver) == before and _progress(driver).startswith("Image 9 of 16")
            body = driver.find_element(By.TAG_NAME, "body")
        img = _current(driver)
        seen.append(img)
        edit, clinical = script[img]
        assert driver.find_element(By.ID, "next").get_attribute("disabled")  # both answers needed first
        if step == 3:  # a mouse user: click the labels
            driver.find_element(By.CSS_SELECTOR, f"input[name=edit][value={edit}]").click()
            driver.find_element(By.CSS_SELECTOR, f"input[name=clinical][value={clinical}]").click()
            driver.find_element(By.ID, "next").click()
        else:
            body.send_keys(KEY_OF[edit], KEY_OF[clinical], Keys.ENTER)
    assert sorted(seen) == sorted(script)  # every image once
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_element(By.ID, "done").is_displayed())
    page_text = driver.find_element(By.TAG_NAME, "body").get_attribute("innerText").lower()
    for leak in ("erased", "control", "lesion_free", "target_removal", "nodule"):
        assert leak not in page_text  # nothing about kinds or findings is shown

    driver.find_element(By.ID, "download").click()
    files = wait_for(lambda: glob.glob(str(downloads / "answers-*.json")), "the browser to download the answer file",
                     deadline_s=WAIT_S)
    with open(files[0]) as fh:
        doc = json.load(fh)
    assert os.path.basename(files[0]) == f"answers-A-{key['pack_hash'][:12]}.json"
    assert doc["pack_hash"] == key["pack_hash"] and doc["complete"] is True
    assert doc["reader"] == {"id": "A", "specialty": "Radiology", "years_experience": 12}
    assert doc["order"] == seen
    assert {a["image"]: (a["edit"], a["clinical"]) for a in doc["answers"]} == script

    # the same folder from a static web host: the page and its images load there too
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "pack" / "reading"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        driver.get(f"http://127.0.0.1:{server.server_address[1]}/index.html")
        assert driver.find_element(By.ID, "who").is_displayed()  # another origin: a fresh start
        driver.find_element(By.ID, "reader-id").send_keys("Z")
        Select(driver.find_element(By.ID, "specialty")).select_by_visible_text("Other")
        driver.find_element(By.ID, "specialty-other").send_keys("Pathology")
        driver.find_element(By.ID, "years").send_keys("3")
        driver.find_element(By.ID, "start").click()
        WebDriverWait(driver, WAIT_S).until(lambda d: d.execute_script(
            "var i = document.getElementById('img'); return i.complete && i.naturalWidth == 768"))
    finally:
        server.shutdown()

    b = tmp_path / "answers-B.json"
    b.write_text(answer_file(key, "B", scripted(key, READER_B)))
    out = tmp_path / "analysis"
    analyse([str(tmp_path / "pack")], [files[0], str(b)], str(out))  # the CLI's path: tests/reader/test_pack.py
    res = json.loads((out / "analysis.json").read_text())
    a = res["readers"]["A"]
    # hand-worked in tests/reader/test_pack.py: 39/64, 9/16, residual 1/4, kappa 7/15 and 15/71
    assert a["auc_edited_vs_unmodified"] == pytest.approx(39 / 64)
    assert a["auc_erased_vs_control"] == pytest.approx(9 / 16)
    assert (a["residual"]["k"], a["residual"]["n"]) == (1, 4)
    assert a["residual"]["ci_low"] == pytest.approx(1 - 0.975 ** 0.25)
    assert res["agreement"][0]["kappa_edited"] == pytest.approx(7 / 15)
    assert res["agreement"][0]["kappa_clinical"] == pytest.approx(15 / 71)
    assert not os.path.exists(tmp_path / "pack" / "reading" / KEY_FILE)
