"""zoom and window (counterfactual paper §3.1), and the per-episode limit of three calls."""

import numpy as np
import pytest

from medscope.protocols.counterfactual import prompts
from medscope.answers.actions import ToolCall
from medscope.protocols.counterfactual.viewing_tools import ToolInputError, ToolRunner, window, zoom
from medscope.images import decode_png

TPL = prompts.load_templates()


def _ramp(h=200, w=400):
    # pixel value = column index // 2: lets a crop be located from its values
    return np.tile((np.arange(w) // 2).astype(np.uint8), (h, 1))


def test_zoom_crops_the_box_in_thousandths_of_the_original():
    img = _ramp()
    out = zoom(img, (250, 0, 500, 1000), max_side=768, upscale=1)
    # x 250-500 of 400 px = columns 100..199 -> values 50..99; y 0-1000 = all 200 rows
    assert out.shape == (200, 100)
    assert out.min() == 50 and out.max() == 99


def test_zoom_enlarges_small_crops_but_not_past_max_side():
    img = _ramp()
    out = zoom(img, (0, 0, 100, 100), max_side=768, upscale=4)  # 40x20 crop
    assert out.shape == (80, 160)
    out = zoom(img, (0, 0, 1000, 1000), max_side=300, upscale=4)
    assert max(out.shape) == 300


def test_zoom_box_thinner_than_a_pixel_returns_a_pixel():
    out = zoom(_ramp(), (500, 500, 500.5, 501), max_side=768, upscale=1)
    assert out.shape == (1, 1)


@pytest.mark.parametrize("box", [(0, 0, 1001, 10), (-5, 0, 10, 10), (500, 0, 400, 10), (0, 10, 10, 10), (1, 2, 3)])
def test_zoom_rejects_bad_boxes(box):
    with pytest.raises(ToolInputError):
        zoom(_ramp(), box)


def test_window_maps_center_and_width_linearly():
    img = np.array([[0, 78, 128, 178, 255]], dtype=np.uint8)
    out = window(img, center=128, width=100)
    # low = 78 -> 0, high = 178 -> 255, 128 -> 127.5 -> 128 (round half to even gives 128)
    assert out.tolist() == [[0, 0, 128, 255, 255]]


@pytest.mark.parametrize("c,w", [(300, 50), (-1, 50), (128, 0), (128, -10)])
def test_window_rejects_bad_settings(c, w):
    with pytest.raises(ToolInputError):
        window(np.zeros((4, 4), np.uint8), c, w)


def test_runner_limit_and_errors_never_raise():
    r = ToolRunner(image=_ramp(), max_calls=3)
    ok = r.run(ToolCall("zoom", box=(0, 0, 500, 500)), None, TPL)
    assert ok.ok and ok.png is not None and decode_png(ok.png).shape[:2] == (384, 768)  # 200x100 crop, x4 = 800x400, capped at 768
    bad = r.run(ToolCall("zoom", box=(0, 0, 2000, 10)), None, TPL)
    assert not bad.ok and "outside 0-1000" in bad.text and bad.png is None
    unread = r.run(None, "zoom needs a box", TPL)
    assert not unread.ok and "zoom needs a box" in unread.text
    over = r.run(ToolCall("window", center=100, width=50), None, TPL)
    assert not over.ok and "limit of 3" in over.text
    assert r.calls == 4 and r.executed == 1


def test_runner_tools_off_and_blind():
    off = ToolRunner(image=_ramp(), enabled=False)
    res = off.run(ToolCall("window", center=100, width=50), None, TPL)
    assert not res.ok and res.text == TPL.tools_off and off.executed == 0
    blind = ToolRunner(image=None)
    res = blind.run(ToolCall("zoom", box=(0, 0, 10, 10)), None, TPL)
    assert not res.ok and "no image" in res.text


def test_window_result_covers_full_image_resized():
    r = ToolRunner(image=np.full((1000, 2000), 100, np.uint8), max_side=768)
    res = r.run(ToolCall("window", center=100, width=20), None, TPL)
    img = decode_png(res.png)
    assert img.shape[:2] == (384, 768) and int(img.mean()) == 128
