"""The report as a reader sees it: rendered in headless Chromium at 1,300 px, with a
screenshot kept under pytest's tmp dir (its path printed for CI artifacts). Checks: the summary is
on the first screen, no element is wider than the page, every image decoded, every in-page link
resolves to an element, every image has alt text.

Needs Debian's chromium and chromium-driver (cluster/setup-env.sh --dev installs them)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from medscope import images
from medscope.io import layout, records
from medscope.protocols.counterfactual.scoring import score_run
from medscope.protocols.organ_presence.scoring import probe_metrics
from medscope.report.build import build_report
from medscope.testing import synthetic_runs as synthetic

from tests.fixtures import browser as chromium

chromium.require()

# In-page facts the test reads from the rendered page.
PAGE_FACTS = """
const W = document.documentElement.clientWidth;
const wide = [];
for (const el of document.body.querySelectorAll('*')) {
  // inside a horizontal scroller an element may be wider than the page: the reader scrolls it
  if (el.closest('.scroll') && !el.classList.contains('scroll')) continue;
  const r = el.getBoundingClientRect();
  if (r.width > 0 && (r.right > W + 1 || r.left < -1)) wide.push(el.tagName + ' ' + Math.round(r.right));
}
const imgs = [...document.images].map(i => ({ok: i.complete && i.naturalWidth > 0, alt: i.alt}));
const links = [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'));
const dead = links.filter(h => !h.startsWith('#') || !document.getElementById(decodeURIComponent(h.slice(1))));
const s = document.getElementById('summary');
return {W: W, docW: document.documentElement.scrollWidth, wide: wide, imgs: imgs, links: links.length,
        dead: dead, summaryTop: s ? s.getBoundingClientRect().top : null, innerH: window.innerHeight,
        summaryText: s && s.nextElementSibling ? s.nextElementSibling.innerText : ''};
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A report of a small synthetic run with many model columns (to stress table widths):
    random policies, one image reader and one constant policy."""
    root = tmp_path_factory.mktemp("browser")
    rng = np.random.default_rng(3)
    img = (rng.random((40, 40)) * 255).astype(np.uint8)
    mask = np.zeros((40, 40), bool)
    mask[8:18, 8:18] = True
    pix = {k: images.encode_png(img) for k in ("original", "target_removal", "random_removal", "degraded",
                                                "natural_negative")}
    pix["target_removal_mask"] = images.encode_png(mask)
    v = synthetic.views(24, 16, 6, seed=3, width=40, height=40, images=pix)
    zoo = synthetic.model_zoo(7, seed=3)
    zoo["model-06"].update(original=0.97, random_removal=0.97, target_removal=0.02)
    zoo["always-present"] = {k: 1.0 for k in ("original", "random_removal", "target_removal", "natural_negative",
                                              "degraded")}
    e = synthetic.episodes(v, zoo, seed=3)
    records.write_table("views", v, str(root / "views.parquet"))
    records.write_table("episodes", e, str(root / "episodes.parquet"))
    score_run(str(root / "episodes.parquet"), str(root / "views.parquet"), str(root / "run"), n_boot=100)
    _probe_run(str(root / "probe"), rng)
    build_report([str(root / "run"), str(root / "probe")], str(root / "report"), gallery_cases=2)
    return root


def _probe_run(out: str, rng) -> None:
    """A scored organ-presence run from constructed probe scores (the real metrics code): a reader
    that is right 85% of the time and a constant 'absent' policy, 6 cases x 3 strategies."""
    rows = []
    for model, cond in (("reader", "verdict_json"), ("reader", "verdict_json+no_image"), ("always-absent", "verdict_json")):
        for case in range(6):
            for strategy, truth in (("positive", "present"), ("random", "absent"), ("popular", "absent"),
                                    ("adversarial", "absent")):
                for k in range(2):
                    right = model == "always-absent" and truth == "absent" or (
                        model == "reader" and rng.random() < (0.85 if "+" not in cond else 0.5))
                    if model == "always-absent":
                        verdict = "absent"
                    else:
                        verdict = truth if right else {"present": "absent", "absent": "present"}[truth]
                    rows.append({"run_id": "r", "model": model, "condition": cond, "format": "verdict_json",
                                 "image_mode": "no_image" if "+" in cond else "image", "item_id": f"{case}-{strategy}-{k}",
                                 "case_id": f"c{case}", "z": 10, "organ": "liver", "truth": truth, "strategy": strategy,
                                 "stratum": "in_range", "z_distance_mm": 10.0 + k, "absent_from_volume": False,
                                 "render": "gray", "verdict": verdict, "clean": True, "hedged": False,
                                 "hedge_cue": None, "correct": verdict == truth})
    run = layout.ScoredRun(out)
    records.write_table("probe_scores", rows, run.table("probe_scores"))
    records.write_table("metrics", probe_metrics(rows, b=100), run.metrics)
    with open(run.manifest, "w") as fh:
        json.dump({"protocol": "organ_presence"}, fh)


@pytest.fixture
def browser(tmp_path, monkeypatch):
    driver = chromium.start(tmp_path, monkeypatch, flags=["--window-size=1300,900", "--hide-scrollbars"])
    yield driver
    driver.quit()


@pytest.mark.slow
def test_report_in_chromium_fits_loads_links_and_opens_with_the_summary(report, browser, tmp_path):
    browser.get((report / "report" / "report.html").as_uri())
    facts = browser.execute_script(PAGE_FACTS)
    shot = tmp_path / "report_first_screen.png"
    browser.save_screenshot(str(shot))
    print(f"\nreport screenshot (CI artifact): {shot}")
    assert shot.stat().st_size > 10_000
    assert facts["W"] >= 1200
    assert facts["docW"] <= facts["W"] + 1, "the page scrolls sideways"
    assert facts["wide"] == [], f"elements wider than the page: {facts['wide'][:10]}"
    assert len(facts["imgs"]) >= 6, "forest, scatter, size, risk, probe and gallery images expected"
    assert all(i["ok"] for i in facts["imgs"]), "an image did not decode"
    assert all(i["alt"].strip() for i in facts["imgs"]), "an image without alt text"
    assert facts["links"] >= 10 and facts["dead"] == [], f"links that resolve to nothing: {facts['dead'][:10]}"
    # the summary is on the first screen and names the image reader, not the constant policy, as following
    assert facts["summaryTop"] is not None and 0 <= facts["summaryTop"] < facts["innerH"] / 2
    follow = next(ln for ln in facts["summaryText"].splitlines() if ln.startswith("Follow the image"))
    assert "model-06" in follow and "always-present" not in follow
    # the probe's summary lines and POPE's own table are in the page
    assert browser.find_element("id", "summary-probe").is_displayed()
    assert "yes-ratio" in browser.find_element("tag name", "body").text


# Where a wide table's first column sits once its scroller is scrolled to the end, and the
# page's order of sections and gallery captions.
READER_FACTS = """
const wide = [...document.querySelectorAll('.scroll')].filter(s => s.scrollWidth > s.clientWidth + 20);
const s = wide[0];
const first = () => s.querySelector('tr:nth-child(2) td:first-child').getBoundingClientRect().left;
const before = first(), boxLeft = s.getBoundingClientRect().left;
s.scrollLeft = s.scrollWidth;
const second = () => s.querySelector('tr:nth-child(2) td:nth-child(2)').getBoundingClientRect().left;
const after = first(), secondAfter = second();
const h2 = [...document.querySelectorAll('h2')].map(h => h.id);
const figs = [...document.querySelectorAll('.panels figure')].map(f => ({
  caption: f.querySelector('figcaption') ? f.querySelector('figcaption').innerText.trim() : '',
  below: f.querySelector('figcaption') ? f.querySelector('figcaption').getBoundingClientRect().top >=
         f.querySelector('img').getBoundingClientRect().bottom - 1 : false}));
return {wide: wide.length, scrolled: s.scrollLeft, boxLeft: boxLeft, before: before, after: after,
        secondAfter: secondAfter, h2: h2, figs: figs};
"""


@pytest.mark.slow
def test_wide_tables_keep_their_first_column_and_transcripts_close_the_page(report, browser):
    browser.get((report / "report" / "report.html").as_uri())
    facts = browser.execute_script(READER_FACTS)
    # a table wider than the page (nine model columns) scrolled to its end: its first column
    # stays at the scroller's left edge while the second has moved under it
    assert facts["wide"] >= 1 and facts["scrolled"] > 0
    assert abs(facts["after"] - facts["boxLeft"]) <= 1 and abs(facts["before"] - facts["boxLeft"]) <= 1
    assert facts["secondAfter"] < facts["boxLeft"]
    # the transcripts are the page's last section, after the probe's
    assert facts["h2"][-1] == "transcripts" and facts["h2"].index("probe") < len(facts["h2"]) - 1
    # every gallery panel has a caption under it
    assert len(facts["figs"]) == 2 * 3
    assert all(f["caption"] and f["below"] for f in facts["figs"]), facts["figs"]
