"""The shipped cluster specs stay valid: cluster/a100-cluster.yaml under Ray's own cluster-config
validator (the JSON schema `ray up` checks), cluster/rayjob.yaml structurally against what KubeRay's
RayJob needs and what MedScope needs of a job (an existing job module and config whose out: is
kept, no secret values in the spec). The RayJob CRD schema is not shipped here; set KUBERAY_RAYJOB_CRD
to ray-operator/config/crd/bases/ray.io_rayjobs.yaml to check against it too."""

from __future__ import annotations

import copy
import importlib
import os
import shlex

import pytest
import ray
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from tests.conftest import REPO_ROOT


def _load(name: str) -> dict:
    with open(os.path.join(REPO_ROOT, "cluster", name)) as f:
        return yaml.safe_load(f)


def test_a100_cluster_yaml_passes_rays_validator_and_a_broken_copy_does_not():
    config = _load("a100-cluster.yaml")
    # as `ray up` does: fill in the defaults, then validate against ray-schema.json
    validate_config(prepare_config(copy.deepcopy(config)))
    broken = copy.deepcopy(config)
    broken["available_node_types"]["head"]["resources"] = "all of them"  # must be an object
    with pytest.raises(Exception):
        validate_config(prepare_config(broken))
    assert config["head_node_type"] in config["available_node_types"]


def test_rayjob_yaml_names_a_real_job_a_kept_output_and_no_secret_values():
    doc = _load("rayjob.yaml")
    assert doc["apiVersion"] == "ray.io/v1" and doc["kind"] == "RayJob"
    spec = doc["spec"]
    assert spec["rayClusterSpec"]["rayVersion"] == ray.__version__
    argv = shlex.split(spec["entrypoint"])
    assert argv[:2] == ["python", "-m"]
    importlib.import_module(argv[2])  # the job module exists
    config = argv[argv.index("--config") + 1]
    with open(os.path.join(REPO_ROOT, config)) as f:
        out = yaml.safe_load(f)["out"]
    assert out.startswith("s3://") or os.path.isabs(out), f"{config}: out {out!r} would vanish with the job's working dir"
    groups = [spec["rayClusterSpec"]["headGroupSpec"], *spec["rayClusterSpec"]["workerGroupSpecs"]]
    for group in groups:
        for c in group["template"]["spec"]["containers"]:
            assert c["image"] and c["name"]
            for e in c.get("env", []):  # values of keys and credentials only by reference
                if any(w in e["name"].upper() for w in ("KEY", "SECRET", "TOKEN", "PASSWORD")):
                    assert "value" not in e and "valueFrom" in e, e["name"]
    for w in spec["rayClusterSpec"]["workerGroupSpecs"]:
        assert w["minReplicas"] <= w["replicas"] <= w["maxReplicas"]


@pytest.mark.skipif(not os.environ.get("KUBERAY_RAYJOB_CRD"), reason="KubeRay CRD file not given")
def test_rayjob_yaml_against_the_kuberay_crd_schema():
    import jsonschema

    with open(os.environ["KUBERAY_RAYJOB_CRD"]) as f:
        crd = yaml.safe_load(f)
    doc = _load("rayjob.yaml")
    version = doc["apiVersion"].split("/")[1]
    schema = next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]
    errors = [f"{list(e.path)}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
    assert not errors, errors


def _dockerfile() -> list[tuple[str, str]]:
    """cluster/Dockerfile as (INSTRUCTION, arguments), continuation lines joined, comments dropped
    (Docker is not available here; the file is simple enough to read line by line)."""
    out, held = [], ""
    with open(os.path.join(REPO_ROOT, "cluster", "Dockerfile")) as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            held += line[:-1] + " " if line.endswith("\\") else line
            if not line.endswith("\\"):
                word, _, rest = held.partition(" ")
                out.append((word.upper(), rest.strip()))
                held = ""
    return out


def test_dockerfile_builds_both_bases_through_setup_env_for_the_rayjob_image():
    steps = _dockerfile()
    args = dict(a.split("=", 1) for i, a in steps if i == "ARG" and "=" in a)
    froms = [a.split() for i, a in steps if i == "FROM"]
    stages = {f[2]: f[0] for f in froms if len(f) == 3 and f[1].upper() == "AS"}
    assert stages["base-cuda"].startswith("nvidia/cuda:") and "cudnn" in stages["base-cuda"]
    assert stages["base-cpu"].startswith("python:3.")
    # the final stage is the one BASE names, and BASE defaults to a stage that exists
    assert froms[-1] == ["base-${BASE}"] and f"base-{args['BASE']}" in stages
    runs = [a for i, a in steps if i == "RUN"]
    assert any("bash cluster/setup-env.sh" in r for r in runs)  # the README's installer, not a copy of it
    # the CPU base's torch comes from constraints.txt's pin, so setup-env.sh's pin is already met
    with open(os.path.join(REPO_ROOT, "constraints.txt")) as f:
        torch_pin = next(line.strip() for line in f if line.startswith("torch=="))
    with open(os.path.join(REPO_ROOT, "cluster", "setup-env.sh")) as f:
        assert torch_pin in f.read()
    assert any("grep -E '^torch==' constraints.txt" in r for r in runs)
    # the image tag the Dockerfile labels is the one rayjob.yaml runs, on every node
    spec = _load("rayjob.yaml")["spec"]["rayClusterSpec"]
    images = {c["image"] for g in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
              for c in g["template"]["spec"]["containers"]}
    assert images == {args["IMAGE"]}
    labels = " ".join(a for i, a in steps if i == "LABEL")
    assert 'org.opencontainers.image.ref.name="$IMAGE"' in labels
    env = " ".join(a for i, a in steps if i == "ENV")
    assert "PATH=/opt/medscope/.venv/bin:$PATH" in env  # ray and python of the environment
    # the checkout sits where the job's working_dir says
    assert ("COPY", ". /opt/medscope") in steps
    assert _load("rayjob.yaml")["spec"]["runtimeEnvYAML"].count("working_dir: /opt/medscope") == 1
    with open(os.path.join(REPO_ROOT, ".dockerignore")) as f:
        assert ".venv" in f.read().split()  # the local environment never enters the image
