"""The ``azure_openai`` model kind (paired-modality paper App. A ran its GPT model as an Azure OpenAI deployment,
chat-completions API version 2024-12-01-preview) against a loopback server speaking Azure's wire:
POST /openai/deployments/{deployment}/chat/completions?api-version=..., key in ``api-key``."""

from __future__ import annotations

import numpy as np
import pytest

from medscope.errors import MedScopeError
from medscope.images import encode_png
from medscope.models.base import Decoding, Message, Part, PermanentModelError, TransientModelError
from medscope.models.config import ModelEntry
from medscope.models.registry import build_model
from medscope.testing import providers as fp

KEY = "azure-test-key"
PNG = encode_png(np.arange(64, dtype=np.uint8).reshape(8, 8))


@pytest.fixture
def azure(monkeypatch):
    monkeypatch.setenv("MEDSCOPE_AZURE_TEST_KEY", KEY)
    srv = fp.FakeProvider(fp.AZURE, responder=lambda text, images: f"PHOTO FINDINGS: {images} image(s)", expected_key=KEY)
    yield srv
    srv.close()


def entry(srv, **kw) -> ModelEntry:
    base = dict(name="gpt-6-astra", kind="azure_openai", model="gpt-6-astra", base_url=srv.url,
                api_key_env="MEDSCOPE_AZURE_TEST_KEY", timeout_s=5, settings={"api_version": "2024-12-01-preview"})
    return ModelEntry(**{**base, **kw})


def test_a_deployment_is_called_on_azures_path_with_the_api_key_header(azure):
    model = build_model(entry(azure))
    c = model.complete([Message("user", (Part(png=PNG), Part(png=PNG), Part(text="Describe both.")))],
                       Decoding(max_output_tokens=4000))
    req = azure.requests[-1]
    assert req.path == "/openai/deployments/gpt-6-astra/chat/completions?api-version=2024-12-01-preview"
    assert req.headers["api-key"] == KEY and "authorization" not in req.headers  # Azure's header, not a bearer
    assert req.images == 2 and req.body["max_completion_tokens"] == 4000 and "temperature" not in req.body
    assert c.text == "PHOTO FINDINGS: 2 image(s)"
    assert c.input_tokens == fp.tokens_in(req.text, 2)


def test_azure_failures_are_classified_and_settings_checked(azure):
    model = build_model(entry(azure))
    azure.push(fp.status(429, retry_after=0.1))
    with pytest.raises(TransientModelError):
        model.complete([Message.text("user", "hi")], Decoding())
    azure.push(fp.status(404))  # an unknown deployment: permanent, and the key never in the message
    with pytest.raises(PermanentModelError) as err:
        model.complete([Message.text("user", "hi")], Decoding())
    assert KEY not in str(err.value)
    import urllib.request

    bare = urllib.request.Request(f"{azure.url}/openai/deployments/gpt-6-astra/chat/completions", data=b"{}",
                                  headers={"api-key": KEY, "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError, match="404"):  # no api-version: Azure refuses the path
        urllib.request.urlopen(bare, timeout=5)
    with pytest.raises(MedScopeError, match="api_version"):
        build_model(entry(azure, settings={}))
    with pytest.raises(ValueError, match="needs a model id"):
        entry(azure, model=None)


@pytest.mark.slow
def test_an_azure_model_runs_a_paired_sweep(ray_cluster, azure, tmp_path):
    """The paired-modality protocol's sweep through the Azure adapter: every unit reaches the
    deployment path once, both settings, and the replies score."""
    from medscope import config as cfgmod
    from medscope.pairs.embedded import write_embedded_set
    from medscope.protocols.paired_modality import PROTOCOL
    from pipelines.eval import EvalConfig, run_sweep
    from pipelines.pairs import PROTOCOL_SPEC

    manifest = write_embedded_set(str(tmp_path / "set"))["manifest"]
    cfg = cfgmod.parse(EvalConfig, {"views": manifest, "models": "inline", "out": str(tmp_path / "eval"),
                                    "conditions": ["photo_only", "paired"], "protocol": PROTOCOL_SPEC,
                                    "workers": 1, "concurrency": 4})
    done = run_sweep(cfg, PROTOCOL(), [entry(azure)])
    assert (done["units"], done["done"], done["failed"]) == (24, 24, 0)
    paths = {r.path.split("?")[0] for r in azure.requests}
    assert paths == {"/openai/deployments/gpt-6-astra/chat/completions"} and len(azure.requests) == 24
    assert sorted(r.images for r in azure.requests) == [1] * 12 + [2] * 12  # photo only, then paired
    out = str(tmp_path / "scored")
    s = PROTOCOL(PROTOCOL.Options(judge="rule")).score(str(tmp_path / "eval"), manifest, out)
    assert s["labelled"] == 24
