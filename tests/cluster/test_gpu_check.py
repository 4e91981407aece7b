"""cluster/gpu-check.sh: the wheel folder it prepares for a bare GPU machine (the pip
commands and the size accounting; the download itself is not repeated here), and its CPU form
end to end, with Ray made unimportable as on the GPU machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from medscope.errors import MedScopeError
from pipelines.bench import gpu, gpu_wheels
from tests.conftest import REPO_ROOT

MiB = 2**20
# not on the GPU machine and not among the prepared wheels (the list of what that machine has)
ABSENT_ON_GPU_MACHINE = ("ray", "nibabel", "imagehash", "statsmodels", "s3fs", "openai", "anthropic", "pydicom", "trl",
                         "matplotlib", "tenacity", "aiolimiter")


def test_prepare_fetches_every_missing_package_at_its_pin_for_the_target_python():
    pinned = gpu_wheels.pins(os.path.join(REPO_ROOT, "constraints.txt"))
    wheel_specs = gpu_wheels.specs(gpu_wheels.WHEELS, pinned)
    assert "diffusers==" + pinned["diffusers"] in wheel_specs and "pydantic==" + pinned["pydantic"] in wheel_specs
    cmd = gpu_wheels.download_command("py", "/w", wheel_specs)
    assert cmd[:4] == ["py", "-m", "pip", "download"] and cmd[-len(wheel_specs):] == wheel_specs
    pairs = list(zip(cmd, cmd[1:]))
    assert ("--python-version", "3.12") in pairs and ("--abi", "cp312") in pairs and ("-d", "/w") in pairs
    assert ("--platform", "manylinux2014_x86_64") in pairs and "--only-binary=:all:" in cmd and "--no-deps" in cmd
    build, env = gpu_wheels.build_command("py", "/w", gpu_wheels.specs(gpu_wheels.SDISTS, pinned))
    assert build[-1] == "deepspeed==" + pinned["deepspeed"] and "--no-build-isolation" in build
    assert env["DS_BUILD_OPS"] == "0"  # no compiled ops: the GPU machine JIT-builds what it needs
    # nothing the GPU machine already has is fetched again
    present = {"torch", "transformers", "peft", "accelerate", "numpy", "pyarrow", "fsspec", "scipy", "pandas"}
    assert not present & {gpu_wheels.canonical(n) for n in gpu_wheels.WHEELS + gpu_wheels.SDISTS}


def test_a_package_without_a_pin_is_an_error(tmp_path):
    c = tmp_path / "constraints.txt"
    c.write_text("pydantic==2.0.0  # comment\n")
    assert gpu_wheels.pins(str(c)) == {"pydantic": "2.0.0"}
    with pytest.raises(MedScopeError, match="diffusers"):
        gpu_wheels.specs(["pydantic", "diffusers"], gpu_wheels.pins(str(c)))


def test_size_accounting_counts_wheels_only_and_refuses_a_folder_over_64_mib(tmp_path):
    sizes = {"a-1-py3-none-any.whl": 40 * MiB, "b-1-cp312-cp312-manylinux2014_x86_64.whl": 20 * MiB, "c-1-py3-none-any.whl": 1}
    for name, n in sizes.items():
        with open(tmp_path / name, "wb") as f:
            f.truncate(n)
    (tmp_path / "wheels.json").write_text("{}")  # not a wheel: not counted
    found = gpu_wheels.folder_bytes(str(tmp_path))
    assert found == sizes
    assert gpu_wheels.check_size(found) == 60 * MiB + 1
    with open(tmp_path / "d-1-py3-none-any.whl", "wb") as f:
        f.truncate(4 * MiB)  # 64 MiB + 1 byte in all
    with pytest.raises(MedScopeError, match=r"64\.0 MiB, over the 64 MiB .*a-1-py3-none-any\.whl 40\.0 MiB"):
        gpu_wheels.check_size(gpu_wheels.folder_bytes(str(tmp_path)))


def test_a_check_over_its_budget_is_a_failure_line_and_a_nonzero_exit(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu, "CPU_HANG_GUARD_S", 0.05)  # the child cannot even import torch in time
    monkeypatch.setitem(gpu.QUICK_BUDGET_S, "local_eval", 0.01)  # off CUDA the hang guard, not this, decides
    code = gpu.main(["--device", "cpu", "--quick", "--out", str(tmp_path), "--only", "local_eval,zero2"])
    assert code == 1
    report = json.load(open(tmp_path / "gpu_check.json"))
    rows = {r["check"]: r for r in report["checks"]}
    assert rows["local_eval"]["status"] == "FAIL" and "over its budget of 0.05 s" in rows["local_eval"]["result"]
    assert rows["zero2"]["status"] == "skipped" and "needs CUDA" in rows["zero2"]["result"]
    assert report["failed"] == ["local_eval"]
    assert "local_eval  FAIL" in capsys.readouterr().out


def test_budget_s_sets_every_checks_budget(tmp_path):
    # 0.05 s is less than a child needs to import torch: the flag, not the CPU hang guard, decides
    code = gpu.main(["--device", "cpu", "--quick", "--out", str(tmp_path), "--only", "local_eval,zero2",
                     "--budget-s", "0.05"])
    rows = {r["check"]: r for r in json.load(open(tmp_path / "gpu_check.json"))["checks"]}
    assert code == 1 and rows["local_eval"]["budget_s"] == 0.05
    assert rows["local_eval"]["status"] == "FAIL" and "over its budget of 0.05 s" in rows["local_eval"]["result"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_cpu_form_runs_every_check_without_ray(tmp_path):
    """`cluster/gpu-check.sh --device cpu --quick` as the suite's guard against rot: every check that
    does not need CUDA runs and passes; Ray, and the other packages the GPU machine lacks and
    --prepare does not ship, cannot be imported."""
    for name in ABSENT_ON_GPU_MACHINE:
        blocker = tmp_path / "noray" / name
        blocker.mkdir(parents=True)
        (blocker / "__init__.py").write_text(f"raise ImportError('{name} is not on the GPU machine')\n")
    out = tmp_path / "gc"
    env = dict(os.environ, PYTHON=sys.executable, PYTHONPATH=str(tmp_path / "noray"), OMP_NUM_THREADS="1")
    # The checks' own budgets are sized for a GPU lease; here each gets a hang guard instead: beside
    # two busy loops on a loaded 2-core machine the CPU form's checks ran past 240 s (2026-12-02)
    r = subprocess.run(["bash", os.path.join(REPO_ROOT, "cluster", "gpu-check.sh"), "--device", "cpu", "--quick",
                        "--budget-s", "540", "--out", str(out)], env=env, capture_output=True, text=True,
                       timeout=1740)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    report = json.load(open(out / "gpu_check.json"))
    rows = {row["check"]: row for row in report["checks"]}
    assert set(rows) == set(gpu.CHECKS) and report["failed"] == []
    assert rows["lora_bf16"]["status"] == rows["zero2"]["status"] == "skipped"
    lora = rows["lora_fp32"]
    losses = lora["losses"]
    assert len(losses) == gpu.SIZES[True]["steps"] and losses[-1] < losses[0]  # falling on the fixed batch
    assert lora["vision_frozen"] is True and lora["adapter_reloaded"] is True and lora["dtype"] == "torch.float32"
    sd = rows["sd_views"]["per_type"]
    assert len(sd) == 3 and all(isinstance(v["contrast_after"], float) for v in sd.values())
    ev = rows["local_eval"]
    assert ev["same_replies"] == ev["episodes"] == gpu.SIZES[True]["episodes"]
    assert "lora_fp32   ok" in r.stdout  # the printed table
