"""Every shell block of README.md and docs/*.md: the ones fenced ```bash run are run as written on a
fresh copy of the checkout in a shell where nothing is activated; the rest parse
(`bash -n`). Every command quoted in a config file's comments is one of those blocks' lines."""

from __future__ import annotations

import glob
import os
import re
import subprocess

import pytest
import yaml

from medscope.io import records
from tests.conftest import REPO_ROOT
from tests.fixtures.docs_blocks import MARKERS, can_isolate, fresh_copy, plain_env, run_block, shell_blocks

BLOCKS = shell_blocks()
RUNBOOK = [b for b in BLOCKS if "start-local-head.sh" in b.text and "submit.sh demo" in b.text]
QUICK = [b for b in BLOCKS if b.marker == "run" and b not in RUNBOOK]

# What a quick block must leave behind, worked out from its own arguments (block text -> table, rows).
EXPECT = {
    "cohort phantom --out cohorts/phantom --cases 24 --volumes 2": [
        ("cases", "cohorts/phantom/cases.parquet", 24), ("volumes", "cohorts/phantom/volumes.parquet", 2)],
    "pipelines.cohort --config configs/cohort/phantom.yaml": [  # cases: 48, volumes: 4 in the config
        ("cases", "demo-out/cohort/cases.parquet", 48), ("volumes", "demo-out/cohort/volumes.parquet", 4)],
}

# configs/models/pairs.yaml: its commands are checked with the pairs tests.
NOT_MINE: set[str] = set()
_COMMAND = re.compile(r"^(?:\.venv/bin/|python3? |medscope |ray |bash |cluster/|OUT=|kubectl |docker )")


def test_every_shell_block_has_a_known_marker_and_parses():
    assert len(BLOCKS) > 20 and RUNBOOK and QUICK  # the docs still hold what this test is about
    for block in BLOCKS:
        assert block.marker in MARKERS, f"{block.id}: unknown fence marker {block.marker!r} (use one of {MARKERS})"
        r = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True)
        assert r.returncode == 0, f"{block.id} does not parse: {r.stderr}"


def test_a_block_that_does_not_parse_is_caught(tmp_path):
    """The syntax check can fail: a placeholder such as <submission id> is a redirection."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("```bash gpu\nray job logs --follow <submission id>\n```\n")
    (block,) = shell_blocks(str(tmp_path))
    assert block.marker == "gpu" and block.line == 1
    assert subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True).returncode != 0


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("docs-blocks"))
    return fresh_copy(os.path.join(tmp, "medscope")), tmp


@pytest.mark.slow
@pytest.mark.ray  # the blocks run verbs, which start a local Ray of their own
@pytest.mark.parametrize("block", QUICK, ids=[b.id for b in QUICK])
def test_runnable_block_runs_as_written(block, clone):
    root, tmp = clone
    env = plain_env(root, tmp)
    assert not any(p.startswith(os.path.join(root, ".venv")) for p in env["PATH"].split(":"))
    r = run_block(block.text, root, env, timeout=300)
    assert r.returncode == 0, f"{block.id} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    for key, expected in EXPECT.items():
        if key in block.text:
            for table, rel, rows in expected:
                assert records.read_table(table, os.path.join(root, rel)).num_rows == rows, rel


@pytest.mark.slow
def test_a_bare_command_fails_where_nothing_is_activated(clone):
    """The shell really has no venv on PATH: `medscope` alone is not found (rc 127)."""
    root, tmp = clone
    r = run_block("medscope --help\n", root, plain_env(root, tmp), timeout=60)
    assert r.returncode == 127 and "not found" in r.stderr


def _config_comment_commands() -> list[tuple[str, str]]:
    """(file, command) for each command quoted in a config comment: a `backticked` span or a
    comment line's text that starts like a command and carries an option or a script."""
    found = []
    for path in sorted(glob.glob(os.path.join(REPO_ROOT, "configs", "**", "*.yaml"), recursive=True)):
        rel = os.path.relpath(path, REPO_ROOT)
        if rel in NOT_MINE:
            continue
        for line in open(path, encoding="utf-8"):
            if "#" not in line:
                continue
            comment = line.split("#", 1)[1].strip()
            for text in [*re.findall(r"`([^`]+)`", comment), re.sub(r"\s{2,}\(.*$", "", comment)]:
                text = text.strip()
                if _COMMAND.match(text) and re.search(r" --?\w|\.sh\b", text):
                    found.append((rel, text))
    return found


def _block_lines() -> set[str]:
    lines = set()
    for block in BLOCKS:
        for line in block.text.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line:
                lines.add(" ".join(line.split()))
    return lines


def test_every_command_in_a_config_comment_is_a_docs_block_line():
    commands = _config_comment_commands()
    assert len(commands) >= 6  # the job configs still say how to run them
    lines = _block_lines()
    missing = [f"{rel}: {cmd}" for rel, cmd in commands if " ".join(cmd.split()) not in lines]
    assert not missing, "config comments quote commands no docs block holds:\n" + "\n".join(missing)


# The runbook's demo at test size (the full-size demo as a Ray job was the suite's
# slowest test, ~4 min of its 23). The copy's configs, not the runbook, change: every step still
# runs, in the same order, as the same Ray job. 48 cases is the smallest phantom cohort whose test
# split fills a reading pack (24 cases: "not enough eligible test cases"); the training smoke run
# keeps its checkpoint at its last step. Measured on the loaded 2-core machine, back to back
# (n = 1 each): 585 s at full size, 472 s at test size (ratio 0.81).
TEST_SIZE = {"configs/demo.yaml": {"cases": 48}, "configs/train/smoke.yaml": {"max_steps": 2, "n_views": 8}}


def demo_at_test_size(root: str) -> None:
    """Shrink the demo's own configs in the copy ``root`` (TEST_SIZE), keeping every other key."""
    for rel, over in TEST_SIZE.items():
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
        assert set(over) <= set(cfg), f"{rel} no longer has {sorted(set(over) - set(cfg))}"
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump({**cfg, **over}, f, sort_keys=False)


@pytest.mark.slow
@pytest.mark.ray  # a `ray start` head and the demo as a Ray job
@pytest.mark.timeout(2700)  # the demo: ~2-3 min on an idle 2-core machine, far longer on a loaded one
def test_workstation_runbook(tmp_path):
    """docs/cluster.md "One workstation" as written, nothing activated: the head starts, the demo
    is submitted as a Ray job, its report lands in ./demo-out, and cluster/stop-local-head.sh leaves
    no Ray process. In its own PID + network namespace: the runbook's fixed ports would otherwise
    meet other Ray clusters here (the stop script itself stops only its own head:
    tests/cluster/test_workstation.py).
    Every demo step runs, at test size (demo_at_test_size)."""
    if not can_isolate():
        pytest.skip("needs unshare (PID + network namespace) to run `ray stop` without touching other Ray processes")
    (block,) = RUNBOOK
    root = fresh_copy(str(tmp_path / "medscope"))
    demo_at_test_size(root)
    epilogue = ("test -s demo-out/report/report.html && test -s demo-out/report/report.md\n"
                "if pgrep -x raylet || pgrep -x gcs_server; then echo 'Ray still running after the stop script' >&2; exit 3; fi\n")
    r = run_block(block.text + epilogue, root, plain_env(root, str(tmp_path)), timeout=2400)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-5000:]
    assert f"medscope: results in {root}/demo-out" in log
    assert "Ray head stopped (process group" in log  # the stop script's own account
