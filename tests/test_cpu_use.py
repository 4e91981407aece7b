"""tests/fixtures/cpu_use.py's summary, on rows worked out by hand."""

from tests.fixtures.cpu_use import machine_cpu_seconds, run_summary, summarize


def test_summary_of_hand_made_rows():
    rows = [  # two CPUs: a test that kept both busy, one that kept one busy, one that only waited
        {"id": "tests/test_a.py::t1", "wall": 10.0, "busy": 20.0, "total": 20.0},
        {"id": "tests/test_a.py::t2", "wall": 4.0, "busy": 4.0, "total": 8.0},
        {"id": "tests/test_b.py::t3", "wall": 6.0, "busy": 0.0, "total": 12.0},
    ]
    lines = summarize(rows, cpus=2)
    # 20 s of tests; busy 24 of 40 CPU-s (60 %), idle 16; 24 CPU-s packed on 2 CPUs: 12 s
    assert lines[0] == ("cpu use: 3 tests, 20 s of tests on 2 CPUs; the machine was busy 24 CPU-s (60% of its "
                        "capacity), idle 16 CPU-s; all the CPU asked for, packed on 2 CPUs with no idle, would take 12 s")
    # test_b idles 12 CPU-s, test_a 4: most idle first
    assert lines[2].split() == ["6.0", "12.0", "0.0", "tests/test_b.py"]
    assert lines[3].split() == ["14.0", "4.0", "24.0", "tests/test_a.py"]
    assert summarize([], cpus=2) == ["cpu use: no test measured"]


def test_machine_cpu_seconds_grow_and_busy_never_exceeds_total():
    b0, t0 = machine_cpu_seconds()
    sum(i * i for i in range(200_000))
    b1, t1 = machine_cpu_seconds()
    assert 0 <= b0 <= t0 and 0 <= b1 <= t1 and t1 >= t0 and b1 >= b0


def test_whole_run_line_on_hand_made_figures():
    # 600 s on 2 CPUs: 1,200 CPU-s of capacity, 900 busy (75 %), 300 idle; 900 packed on 2: 450 s
    assert run_summary(600.0, 900.0, 1200.0, cpus=2) == (
        "cpu use, the whole run: 600 s on 2 CPUs; the machine was busy 900 CPU-s (75% of its capacity), "
        "idle 300 CPU-s; packed on 2 CPUs with no idle, 450 s")
    assert run_summary(0.0, 0.0, 0.0, cpus=2) == "cpu use: nothing measured"
