"""What the side-by-side benches compute from: start-up vs steady split of a map stage, the
per-task peak RSS reset, and the label-value histogram that replaced np.unique."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from medscope.volumes.nifti import label_values
from pipelines.support.jobs import map_timing
from pipelines.support.peak_memory import peak_rss_kib, reset_peak_rss
from tests.conftest import REPO_ROOT


def test_map_timing_splits_startup_from_steady_work():
    # stage begins at t=100; worker 7 starts at 103 (3 s start-up), worker 8 at 104.5;
    # the last item ends at 110 -> steady 7 s, total 10 s, busy = sum of item durations
    stamps = [(103.0, 105.0, 7), (105.0, 107.0, 7), (104.5, 106.5, 8), (107.0, 110.0, 8)]
    t = map_timing(100.0, stamps)
    assert t["startup_s"] == pytest.approx(3.0)
    assert t["steady_s"] == pytest.approx(7.0)
    assert t["total_s"] == pytest.approx(10.0)
    assert t["workers"] == 2 and t["cases"] == 4
    assert t["worker_first_case_s"] == pytest.approx([3.0, 4.5])
    assert t["busy_s"] == pytest.approx(2 + 2 + 2 + 3)
    # 104.5-105 and 105-106.5: two at once; worker 7's hand-over at 105 is not a third
    assert t["most_at_once"] == 2


def test_most_at_once_by_hand():
    from pipelines.support.jobs import most_at_once

    assert most_at_once([(0.0, 1.0, 1), (1.0, 2.0, 1), (2.0, 3.0, 2)]) == 1  # end meets start
    assert most_at_once([(0.0, 4.0, 1), (1.0, 2.0, 2), (1.5, 3.0, 3), (3.5, 5.0, 2)]) == 3  # 1.5-2
    assert most_at_once([]) == 0


@pytest.mark.parametrize("lab", [
    np.array([[0, 3], [3, 9]], dtype=np.int32),
    np.zeros((2, 2, 2), dtype=np.int16),
    np.array([-1, 0, 5], dtype=np.int32),          # negative: falls back to np.unique
    np.array([0, 70000], dtype=np.int32),           # beyond the histogram range
    np.zeros((0,), dtype=np.int32),
])
def test_label_values_match_unique(lab):
    assert label_values(lab) == set(np.unique(lab).tolist())


def test_peak_rss_reset_forgets_an_earlier_task():
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pytest.skip("peak RSS cannot be reset here (not Linux or not permitted)")
    block = np.ones(400 * 2**20 // 8)  # 400 MB touched, then freed
    high = peak_rss_kib() / 1024
    del block
    reset_peak_rss()
    assert high - peak_rss_kib() / 1024 > 300


def test_a_child_reports_its_own_peak_not_its_parents():
    """ru_maxrss of a child started by a 400 MB parent says 400 MB; the benches read
    VmHWM, the child's own peak. The parent holds 400 MB while it starts the child."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("no /proc: VmHWM is Linux's")
    block = np.ones(400 * 2**20 // 8)
    child = ("import resource; from pipelines.support.peak_memory import peak_rss_kib; "
             "print(peak_rss_kib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True, env=env).stdout
    own_kib, inherited_kib = map(int, out.split())
    assert block.sum() > 0  # the parent's 400 MB were resident while the child ran
    assert inherited_kib > 400 * 1024  # what the benches read before: the parent's size
    assert own_kib < 200 * 1024  # a bare interpreter and one small module
