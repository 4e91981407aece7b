"""``views export`` draws each view as the report's gallery does: the same panels, the same
palette (yellow lesion, dashed cyan edit), so one legend reads both."""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from medscope import images
from medscope.io import records
from medscope.render import gallery, palette
from medscope.testing import synthetic_runs as synthetic
from pipelines.views import export_panels


def _views(tmp_path):
    rng = np.random.default_rng(5)
    img = (rng.random((48, 64)) * 120).astype(np.uint8)  # grey, never as bright as the outline colours
    lesion = np.zeros((48, 64), bool)
    lesion[10:22, 8:24] = True
    control = np.roll(lesion, 30, axis=1)
    pix = {k: images.encode_png(img) for k in ("original", "target_removal", "random_removal")}
    pix["target_removal_mask"] = images.encode_png(lesion)
    pix["random_removal_mask"] = images.encode_png(control)
    v = synthetic.views(2, 0, 0, seed=5, width=64, height=48, images=pix)
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", v, uri)
    return uri, v, lesion, control


def test_export_panels_are_the_gallery_panels_in_the_shared_palette(tmp_path):
    uri, views, lesion, control = _views(tmp_path)
    (first, *_) = export_panels(uri, str(tmp_path / "png"), n=1)
    row = images.decode_png(open(first, "rb").read())
    assert row.shape == (48, 3 * 64 + 2 * 4, 3)
    case = sorted(set(views.column("case_id").to_pylist()))[0]
    rows = {r["kind"]: r for r in views.to_pylist() if r["case_id"] == case}
    for i, kind in enumerate(palette.PANEL_KINDS):
        expected = images.decode_png(gallery.panel(rows[kind], lesion, max_side=None))
        assert np.array_equal(row[:, i * (64 + 4):i * (64 + 4) + 64], expected), kind
    colours = {tuple(c) for c in row.reshape(-1, 3)}
    assert tuple(palette.LESION) in colours and tuple(palette.EDIT) in colours
    assert (255, 0, 0) not in colours  # the export's old red outline
    # the control panel's dashed cyan lies on the control's edge (the outline is two pixels wide,
    # one of them outside the region), its yellow on the lesion's
    third = row[:, 2 * (64 + 4):]
    for colour, region in ((palette.EDIT, control), (palette.LESION, lesion)):
        drawn = np.all(third == colour, axis=-1)
        assert drawn.any() and not (drawn & ~ndimage.binary_dilation(region)).any()
