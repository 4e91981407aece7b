"""How tests/xdist_split.py splits the suite between its two pytest-xdist workers."""

from __future__ import annotations

from types import SimpleNamespace

from tests.xdist_split import (SESSION_RAY_GROUP, file_order, files_using_the_sessions_ray, group_of,
                               session_ray_files)


def _item(nodeid: str, fixtures=(), slow: bool = False):
    return SimpleNamespace(nodeid=nodeid, fixturenames=list(fixtures),
                           get_closest_marker=lambda name: object() if slow and name == "slow" else None)


ITEMS = [
    _item("tests/test_a.py::small"),
    _item("tests/test_b.py::uses_ray", ["ray_cluster", "tmp_path"]),
    _item("tests/test_b.py::no_ray"),  # same file: goes with its file to the Ray worker
    _item("tests/test_c.py::runbook", slow=True),
    _item("tests/test_d.py::small"),
    _item("tests/test_e.py::fits", ["ray_cluster"], slow=True),
]


def test_files_whose_tests_use_the_sessions_ray_form_one_group_and_others_their_own():
    used = files_using_the_sessions_ray(ITEMS)
    assert used == {"tests/test_b.py", "tests/test_e.py"}
    assert [group_of(f, used) for f in ("tests/test_a.py", "tests/test_b.py", "tests/test_e.py")] == [
        "tests/test_a.py", SESSION_RAY_GROUP, SESSION_RAY_GROUP]


def test_the_ray_files_first_then_slow_files_then_the_rest_each_in_collection_order():
    order = file_order(ITEMS, {"tests/test_b.py", "tests/test_e.py"})
    assert order == ["tests/test_b.py", "tests/test_e.py", "tests/test_c.py", "tests/test_a.py", "tests/test_d.py"]


def test_the_scan_finds_files_naming_the_fixture_and_only_those(tmp_path):
    (tmp_path / "test_uses.py").write_text("def test_x(ray_cluster):\n    pass\n")
    (tmp_path / "test_other.py").write_text("def test_y(ray_cluster_size):\n    pass\n")  # another name
    (tmp_path / "helper.py").write_text("ray_cluster = None\n")  # not a test file
    (tmp_path / "io").mkdir()  # the suite's files sit in folders by subject: the scan walks them
    (tmp_path / "io" / "test_deep.py").write_text("def test_z(tmp_path, ray_cluster):\n    pass\n")
    assert {p.rsplit("/", 1)[-1] for p in session_ray_files(str(tmp_path))} == {"test_uses.py", "test_deep.py"}
    # and on the real suite: the file of the three-node tests is in, a pure-table file is out
    real = session_ray_files()
    assert "tests/cluster/test_multinode.py" in real and "tests/test_cpu_use.py" not in real
