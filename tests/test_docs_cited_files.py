"""Every JSON file the docs name in backticks is one the code names: a page that tells a reader to
open `summary.json` when the sweep writes `sweep.json` sends them to a file that is not there."""

from __future__ import annotations

import glob
import os
import re

from tests.conftest import REPO_ROOT

CITED = re.compile(r"`([A-Za-z0-9_./<>*-]*\.json)`")
CODE_DIRS = ("medscope", "pipelines", "cluster", "tests")  # tests: the datasets' own files, in their fixtures


def cited_json(root: str) -> dict[str, list[str]]:
    """Each JSON file name cited in README.md and docs/*.md (its last path part, placeholders
    left out) -> the pages citing it."""
    found: dict[str, list[str]] = {}
    for path in [os.path.join(root, "README.md"), *sorted(glob.glob(os.path.join(root, "docs", "*.md")))]:
        with open(path, encoding="utf-8") as f:
            for m in CITED.finditer(f.read()):
                name = m[1].rsplit("/", 1)[-1]
                if "<" not in name and "*" not in name:
                    found.setdefault(name, []).append(os.path.relpath(path, root))
    return found


def code_text(root: str) -> str:
    parts = []
    for d in CODE_DIRS:
        for path in glob.glob(os.path.join(root, d, "**", "*"), recursive=True):
            if path.endswith((".py", ".sh", ".yaml", ".yml")) and os.path.isfile(path):
                with open(path, encoding="utf-8", errors="ignore") as f:
                    parts.append(f.read())
    return "\n".join(parts)


def named_nowhere(root: str) -> list[str]:
    code = code_text(root)
    return [f"{name} (in {', '.join(sorted(set(pages)))})" for name, pages in sorted(cited_json(root).items())
            if not re.search(r"(?<![\w.-])" + re.escape(name) + r"(?!\w)", code)]


def test_every_json_file_the_docs_cite_is_named_by_the_code():
    assert len(cited_json(REPO_ROOT)) > 20  # the pages still cite files
    assert named_nowhere(REPO_ROOT) == []


def test_a_cited_file_no_code_names_is_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "eval.py").write_text('SUMMARY = "sweep.json"\nTRAIN = "train_summary.json"\n')
    (tmp_path / "README.md").write_text("see `sweep.json`\n")
    (tmp_path / "docs" / "evaluation.md").write_text("`summary.json` → `workers_lost`; `E/sweep.json`\n")
    assert named_nowhere(str(tmp_path)) == ["summary.json (in docs/evaluation.md)"]
