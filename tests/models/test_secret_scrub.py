"""Secret scrubbing removes whole keys only, and never edits content for a short key."""

from __future__ import annotations

import json

import pytest
import yaml

from medscope.io import records
from medscope.models.api_common import MIN_SCRUB_LEN, scrub, short_secret_warning
from medscope.testing import providers as fp
from medscope.testing.views import write_views
from tests.jobs.test_eval_privacy_budget import PROTOCOL, cli_main

REPLY = "yes: the mass is extending x toward the capsule"


def test_scrub_replaces_whole_long_keys_only():
    key = "sk-abcdefgh1"
    assert len(key) >= MIN_SCRUB_LEN
    assert scrub(f"invalid key {key}.", key) == "invalid key [redacted]."
    assert scrub(f"key={key}&x=1 and '{key}'", key) == "key=[redacted]&x=1 and '[redacted]'"
    assert scrub(f"token x{key}9 is another token", key) == f"token x{key}9 is another token"
    # a one-letter key (the docs say any key works for a local server): content is left alone
    assert scrub("extending x", "x") == "extending x"
    assert scrub("a testing test", "test") == "a testing test"
    assert short_secret_warning("LOCAL_LLM_KEY", "x") is not None and "'x'" not in short_secret_warning("K", "x")
    assert short_secret_warning("K", key) is None


@pytest.mark.slow
def test_one_letter_key_leaves_episode_text_whole(ray_cluster, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("LOCAL_LLM_KEY", "x")
    server = fp.FakeProvider("openai", responder=lambda text, images: REPLY, expected_key="x")
    try:
        views = write_views(str(tmp_path / "views.parquet"), 2)
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [{
            "name": "local-llm", "kind": "openai", "model": "m", "base_url": server.url,
            "api_key_env": "LOCAL_LLM_KEY"}]}))
        out = tmp_path / "eval"
        assert cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "plain",
                         "--out", str(out), "--protocol", PROTOCOL]) == 0
        err = capfd.readouterr().err
        assert "$LOCAL_LLM_KEY is 1 character" in err
        rows = records.read_table("episodes", str(out / "episodes")).to_pylist()
        assert len(rows) == 2 and all(r["raw_text"] == REPLY for r in rows)
        assert all("[redacted]" not in json.dumps(r["turns"]) for r in rows)
        assert server.count() == 2  # the key did travel, in the header
    finally:
        server.close()
