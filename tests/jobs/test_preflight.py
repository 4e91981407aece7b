"""A sweep's pre-flight, before any cluster starts: each API model's key variable is set and its
endpoint answers one model-list request (real loopback servers of every wire, and a closed
port); each failure is one line naming the model and the variable, never the key."""

from __future__ import annotations

import socket

import pytest
import yaml

from medscope.models.config import ModelEntry
from medscope.testing import providers as fp
from medscope.testing.views import write_views
from pipelines.support import preflight
from tests.jobs.test_eval_privacy_budget import PROTOCOL, cli_main

KEY_ENV = "MEDSCOPE_PREFLIGHT_KEY"
SECRET = "sk-preflight-value-never-printed"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(name, kind="openai", base_url=None, env=KEY_ENV) -> ModelEntry:
    return ModelEntry(name=name, kind=kind, model="m", base_url=base_url, api_key_env=env)


@pytest.fixture
def servers():
    made = {w: fp.FakeProvider(w, expected_key=SECRET) for w in ("openai", "anthropic", "gemini", "azure_openai")}
    yield made
    for s in made.values():
        s.close()


def test_every_wire_answers_the_model_list_with_the_key_and_refuses_a_wrong_one(servers, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    entries = [_entry(f"m-{w}", w, s.url) for w, s in servers.items()]
    assert preflight.check(entries) == []
    # one GET each, on the provider's model-list path, with the key where the provider wants it
    paths = {w: s.model_list_requests for w, s in servers.items()}
    assert paths["openai"] == ["/v1/models"] and paths["anthropic"] == ["/v1/models"]
    assert paths["gemini"] == ["/v1beta/models"] and paths["azure_openai"][0].startswith("/openai/models?api-version=")
    assert all(s.requests == [] for s in servers.values())  # nothing sent to a model
    monkeypatch.setenv(KEY_ENV, "sk-wrong-value")
    failures = preflight.check(entries)
    assert [f.model for f in failures] == [e.name for e in entries]
    for f, (w, s) in zip(failures, servers.items()):
        assert f.line() == f"model m-{w}: {s.url} refused the key in {KEY_ENV} (HTTP 401)"


def test_models_on_one_endpoint_share_one_request_and_local_models_are_not_checked(servers, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    url = servers["openai"].url
    entries = [_entry("a", base_url=url), _entry("b", base_url=url),
               ModelEntry(name="always-refer", kind="policy", model="always-refer")]
    assert preflight.check(entries) == []
    assert servers["openai"].model_list_requests == ["/v1/models"]


def test_a_missing_key_and_a_closed_port_are_one_line_each_and_offline_skips_the_request(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    port = _closed_port()
    entries = [_entry("no-key"), _entry("no-env", env=None), _entry("down", base_url=f"http://127.0.0.1:{port}/v1",
                                                                    env="MEDSCOPE_PREFLIGHT_OTHER")]
    monkeypatch.setenv("MEDSCOPE_PREFLIGHT_OTHER", SECRET)
    lines = [f.line() for f in preflight.check(entries)]
    assert lines == [f"model no-key: environment variable {KEY_ENV} is not set (export it before the sweep)",
                     "model no-env: no api_key_env in the models YAML (the NAME of the variable holding its key)",
                     f"model down: http://127.0.0.1:{port}/v1 is not reachable (Connection refused)"]
    # --no-preflight: no request, so the closed port passes; a missing key still stops the sweep
    assert [f.model for f in preflight.check(entries, reach=False)] == ["no-key", "no-env"]


def test_eval_run_stops_before_ray_naming_the_variable_never_the_key(tmp_path, monkeypatch, capfd):
    from pipelines.support import raycluster

    def no_ray(*a, **k):
        raise AssertionError("Ray started before the pre-flight failed")

    monkeypatch.setattr(raycluster, "ensure_ray", no_ray)
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("MEDSCOPE_PREFLIGHT_OTHER", SECRET)
    server = fp.FakeProvider("openai", expected_key=SECRET)
    port = _closed_port()
    try:
        views = write_views(str(tmp_path / "views.parquet"), 2)
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [
            _entry("keyless", base_url=server.url).model_dump(exclude_defaults=True),
            _entry("down", base_url=f"http://127.0.0.1:{port}/v1", env="MEDSCOPE_PREFLIGHT_OTHER").model_dump(exclude_defaults=True),
            _entry("fine", base_url=server.url, env="MEDSCOPE_PREFLIGHT_OTHER").model_dump(exclude_defaults=True)]}))
        out = tmp_path / "eval"
        rc = cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "plain",
                       "--out", str(out), "--protocol", PROTOCOL])
        err = capfd.readouterr().err
        assert rc == 2 and server.requests == []
        assert "medscope: error: pre-flight failed for 2 model(s), nothing was sent:" in err
        assert f"  model keyless: environment variable {KEY_ENV} is not set" in err
        assert f"  model down: http://127.0.0.1:{port}/v1 is not reachable (Connection refused)" in err
        assert "fine" not in err and SECRET not in err and "--no-preflight" in err
        assert not (out / "episodes").exists()
    finally:
        server.close()


def test_an_unknown_kind_stops_the_sweep_before_ray_naming_it(tmp_path, monkeypatch, capfd):
    # issue 51 (sixth campaign): `kind: carrier-pigeon` passed the pre-flight, Ray started, and every
    # unit failed in its worker (exit 4) instead of one line before anything ran
    from pipelines.support import raycluster

    def no_ray(*a, **k):
        raise AssertionError("Ray started before the pre-flight failed")

    monkeypatch.setattr(raycluster, "ensure_ray", no_ray)
    monkeypatch.setenv(KEY_ENV, SECRET)
    known = [ModelEntry(name="always-refer", kind="policy", model="always-refer"),
             ModelEntry(name="outside", kind="my_pkg.adapters:Pigeon", model="x")]
    assert preflight.check(known, reach=False) == []  # a registered kind, and an adapter named by import path
    pigeon = ModelEntry(name="bird", kind="carrier-pigeon", model="x")
    (line,) = [f.line() for f in preflight.check([pigeon], reach=False)]
    assert line.startswith("model bird: unknown kind 'carrier-pigeon' (one of: ")
    assert "anthropic, azure_openai" in line and line.endswith("; or package.module:Class)")
    views = write_views(str(tmp_path / "views.parquet"), 2)
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": [pigeon.model_dump(exclude_defaults=True)]}))
    rc = cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "plain",
                   "--out", str(tmp_path / "eval"), "--protocol", PROTOCOL])
    err = capfd.readouterr().err
    assert rc == 2
    assert "  model bird: unknown kind 'carrier-pigeon'" in err
    assert not (tmp_path / "eval" / "episodes").exists()


@pytest.mark.parametrize("filter_args, models_doc, needle", [
    # issue 51 (seventh campaign): both ran 0 units and exited 0, "results in ..."
    ([], {"models": []}, "models.yaml: lists no model to evaluate"),
    (["--models-filter", "ghost"], {"models": [{"name": "always-refer", "kind": "policy", "model": "always-refer"}]},
     "--models-filter ghost: no such model in"),
])
def test_a_sweep_of_no_model_is_refused_before_ray(tmp_path, monkeypatch, capfd, filter_args, models_doc, needle):
    from pipelines.support import raycluster

    def no_ray(*a, **k):
        raise AssertionError("Ray started for a sweep of no model")

    monkeypatch.setattr(raycluster, "ensure_ray", no_ray)
    views = write_views(str(tmp_path / "views.parquet"), 2)
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump(models_doc))
    rc = cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "plain",
                   "--out", str(tmp_path / "eval"), "--protocol", PROTOCOL, *filter_args])
    err = capfd.readouterr().err
    assert rc == 2
    assert needle in err
    if filter_args:  # the names the file does hold, so the typo can be seen
        assert "(it names always-refer)" in err
    assert not (tmp_path / "eval" / "episodes").exists()


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_model_name_is_refused(blank):
    # issue 51 (seventh campaign): `name: ''` passed and became an empty model column
    with pytest.raises(ValueError, match="name\n.*must not be empty"):
        ModelEntry(name=blank, kind="policy", model="always-refer")


@pytest.mark.parametrize("value, reason", [
    # a key file saved on Windows, read with KEY=$(cat key.txt) kept its line end
    (SECRET + "\r\n", "starts or ends with white space or a line end (\\r\\n?): set it to the key alone"),
    # pasted from a document: the quotes are U+201C / U+201D, the first at position 1
    ("\u201c" + SECRET + "\u201d", "holds a character outside ASCII (U+201C) at position 1, which no issued key has "
                                   "(a smart quote pasted from a document?): set it to the key alone"),
    # a tab inside: 'sk-a' then U+0009 at position 5
    ("sk-a\tkey-value", "holds a control character (U+0009) at position 5: set it to the key alone"),
])
def test_a_key_pasted_with_a_line_end_or_smart_quotes_is_named_by_its_variable_never_quoted(
        servers, monkeypatch, value, reason):
    # issue 51, ninth campaign: SECRET + "\r\n" made the pre-flight print "Invalid header value
    # b'Bearer sk-...\r\n'" (the key in the error); smart quotes gave "ordinal not in range(256)"
    from medscope.errors import MedScopeError
    from medscope.models import api_common

    monkeypatch.setenv(KEY_ENV, value)
    server = servers["openai"]
    lines = [f.line() for f in preflight.check([_entry("m", base_url=server.url)])]
    assert lines == [f"model m: environment variable {KEY_ENV} {reason}"]
    assert server.model_list_requests == [] and server.requests == []  # refused before any request
    assert SECRET not in lines[0] and "sk-a" not in lines[0]
    # the workers read the key the same way: one error naming the variable, not the key
    with pytest.raises(MedScopeError) as err:
        api_common.api_key(KEY_ENV, "m")
    assert str(err.value) == f"model m: environment variable {KEY_ENV} {reason}"


def test_an_unreachable_endpoints_reason_never_quotes_the_key(monkeypatch):
    # defence in depth: whatever an HTTP client's error quotes, the pre-flight line holds no key
    monkeypatch.setenv(KEY_ENV, SECRET)

    def refuses(request, timeout):
        raise ValueError(f"Invalid header value b'Bearer {SECRET}'")

    monkeypatch.setattr(preflight.urllib.request, "urlopen", refuses)
    why = preflight.endpoint_failure(_entry("m", base_url="http://127.0.0.1:9/v1"))
    assert why == "http://127.0.0.1:9/v1 is not reachable (Invalid header value b'Bearer [redacted]')"
