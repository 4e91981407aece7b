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
