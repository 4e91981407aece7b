"""§4.1 crosswalk across cohorts through ``medscope crosswalk``: one image shared by two cohorts
(re-encoded at another size) is found; distinct images are not; identical files count once."""

from __future__ import annotations

import json

import cv2
import numpy as np

from medscope import records
from medscope.images import encode_png
from medscope.protocols.counterfactual import synthetic_runs as synthetic
from pipelines import cli


def _img(seed):
    rng = np.random.default_rng(seed)
    return cv2.GaussianBlur(rng.integers(0, 256, (96, 96), dtype=np.uint8), (0, 0), 3)


def test_crosswalk_finds_the_one_image_two_cohorts_share(tmp_path, capsys):
    shared = _img(1)
    a = synthetic.views(3, 2, 0, seed=0).to_pylist()
    for i, v in enumerate(a):
        v["image"] = encode_png(_img(100 + i))
    a[0]["image"] = encode_png(shared)  # an original view of cohort A
    b = synthetic.views(2, 3, 0, seed=1).to_pylist()
    for i, v in enumerate(b):
        v["image"] = encode_png(_img(200 + i))
    nn = next(i for i, v in enumerate(b) if v["kind"] == "natural_negative")
    b[nn]["image"] = encode_png(cv2.resize(cv2.resize(shared, (64, 64), interpolation=cv2.INTER_AREA), (96, 96)))
    b[nn + 1]["image"] = b[nn]["image"]  # the same file under two question-cases: hashed once
    records.write_table("views", a, str(tmp_path / "a.parquet"))
    records.write_table("views", b, str(tmp_path / "b.parquet"))
    out = tmp_path / "cw.json"
    cli.main(["crosswalk", "--set", f"siim={tmp_path / 'a.parquet'}", "--set", f"nih={tmp_path / 'b.parquet'}",
              "--out", str(out)])
    rep = json.loads(out.read_text())
    # unedited images only: originals and natural negatives (3 + 2 in A, 2 + 3 in B)
    assert rep["images"] == {"siim": 5, "nih": 5} and rep["files"] == 9
    assert len(rep["cross_set_copies"]) == 1
    pair = rep["cross_set_copies"][0]
    assert {pair["sets_a"][0], pair["sets_b"][0]} == {"siim", "nih"} and pair["correlation"] >= 0.97
    assert "1 copies across sets" in capsys.readouterr().out
