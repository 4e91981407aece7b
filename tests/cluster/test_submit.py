"""The main job through `ray job submit` against a real Ray head on loopback, writing to S3."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from medscope.io import records, storage
from tests.conftest import REPO_ROOT, free_port

RAY = os.path.join(os.path.dirname(sys.executable), "ray")


def _head_env() -> dict:
    """Environment of the head and the submitting client: no inherited cluster address, and
    token auth off explicitly (Ray turns it on when a ~/.ray/auth_token exists)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_AUTH_MODE"] = "disabled"
    return env


def _wait_for_dashboard(url: str, proc: subprocess.Popen, timeout_s: float = 300, log: str | None = None) -> None:
    """Until the head's dashboard answers; a head that exits first fails with its own output."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            said = open(log, errors="replace").read()[-3000:] if log and os.path.exists(log) else "(not captured)"
            raise HeadExitedEarly(f"ray head exited early with {proc.returncode}; it said:\n{said}")
        try:
            with urllib.request.urlopen(f"{url}/api/version", timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers (e.g. 401 where a Ray auth token is configured): it is up
        except OSError:
            time.sleep(1)
    raise TimeoutError("ray dashboard did not come up")


class HeadExitedEarly(RuntimeError):
    pass


def _start_head() -> tuple[subprocess.Popen, str]:
    """One `ray start --head --block` on free loopback ports; the dashboard URL once it answers."""
    gcs, dash = free_port(), free_port()
    temp_dir = tempfile.mkdtemp(prefix="rh", dir="/tmp")
    proc = subprocess.Popen(
        [RAY, "start", "--head", "--block", "--port", str(gcs), "--node-ip-address", "127.0.0.1",
         "--dashboard-host", "127.0.0.1", "--dashboard-port", str(dash), "--include-dashboard", "true",
         "--num-cpus", "2", "--temp-dir", temp_dir, "--disable-usage-stats",
         "--ray-client-server-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
         "--metrics-export-port", str(free_port()), "--runtime-env-agent-port", str(free_port())],
        env=_head_env(), start_new_session=True, stdout=open(os.path.join(temp_dir, "head.log"), "w"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{dash}"
    try:
        _wait_for_dashboard(url, proc, log=os.path.join(temp_dir, "head.log"))
    except BaseException:
        stop_head(proc)
        raise
    return proc, url


@pytest.fixture
def ray_head():
    """`ray start --head --block` on loopback ports, in its own process group, torn down after.

    A port free_port() found free can be taken by another process before the head binds it (a
    fresh-clone run beside a `medscope demo`: the head's GCS failed to start); a head that exits
    before its dashboard answers is started again on new ports, up to three times."""
    for attempt in range(3):
        try:
            proc, url = _start_head()
            break
        except HeadExitedEarly:
            if attempt == 2:
                raise
    try:
        yield url
    finally:
        stop_head(proc)


def stop_head(proc: subprocess.Popen) -> None:
    """End a test head and every process it started (they share its process group). SIGKILL at
    once: on SIGTERM `ray start --block` drains for up to 30 s, which a throwaway head does not
    need, and a SIGTERM followed by a 5 s grace spent those 5 s at every stop."""
    with contextlib.suppress(ProcessLookupError):  # a head that failed to start may have no group left
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


@pytest.mark.slow
@pytest.mark.ray  # its own `ray start` head (the ray_head fixture)
def test_demo_runs_through_ray_job_submit_into_s3(ray_head, s3_bucket, s3_server, tmp_path):
    out = f"{s3_bucket}/demo"
    config = tmp_path / "demo.yaml"
    # the counterfactual path end to end (the other steps are tested on their own); 24 cases: at 12
    # the test split of seed 3 kept no view through QC with the demo's tools (the demo now says so)
    n_cases = 24
    config.write_text(f"out: {out}\nseed: 3\ncases: {n_cases}\nsteps: [report]\n")
    runtime_env = {
        "working_dir": REPO_ROOT,
        "excludes": [".git", ".venv", "demo-out", "runs", "**/__pycache__"],
        "env_vars": {
            "AWS_ENDPOINT_URL": s3_server,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "PYTHONUNBUFFERED": "1",
        },
    }
    env = _head_env()
    # the head's dashboard answers before its job agent is up (a loaded fresh-clone run got "No
    # available agent to submit job"); like cluster/submit.sh, that one answer means not submitted yet
    for _ in range(24):
        result = subprocess.run(
            [RAY, "job", "submit", "--address", ray_head, "--submission-id", "medscope-demo-test",
             "--runtime-env-json", json.dumps(runtime_env), "--",
             sys.executable, "-m", "pipelines.demo", "--config", str(config)],
            env=env, capture_output=True, text=True, timeout=600,
        )
        log = result.stdout + result.stderr
        if "No available agent to submit job" not in log:
            break
        time.sleep(5)
    assert result.returncode == 0, log[-4000:]

    from ray.job_submission import JobStatus, JobSubmissionClient

    assert JobSubmissionClient(ray_head).get_job_status("medscope-demo-test") == JobStatus.SUCCEEDED
    cases = records.read_table("cases", storage.join(out, "cohort", "cases.parquet"))
    assert cases.num_rows == n_cases
    assert "demo finished" in log


def test_submit_script_forwards_settings_but_never_keys(tmp_path):
    """cluster/submit.sh parses, ships the checkout and the job's command, and keeps secrets out
    of the runtime env (Ray keeps env_vars in its job table, shown by `ray job list`)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "args.json"
    fake = bin_dir / "ray"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\njson.dump(sys.argv[1:], open({str(seen)!r}, 'w'))\n")
    fake.chmod(0o755)
    env = dict(os.environ, RAY=str(fake), RAY_ADDRESS="http://127.0.0.1:1",  # (not the checkout's .venv/bin/ray)
               AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_SECRET_ACCESS_KEY="sentinel-secret-1",
               OPENAI_API_KEY="sentinel-secret-2")
    r = subprocess.run(["bash", os.path.join(REPO_ROOT, "cluster", "submit.sh"), "demo", "configs/demo.yaml"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    args = json.loads(seen.read_text())
    assert args[:3] == ["job", "submit", "--address"] and args[-6:] == [
        "--", "python", "-m", "pipelines.demo", "--config", "configs/demo.yaml"]
    runtime_env = json.loads(args[args.index("--runtime-env-json") + 1])
    assert runtime_env["working_dir"] == "." and runtime_env["env_vars"]["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9"
    assert "sentinel-secret" not in json.dumps(args)


def test_submit_script_passes_flags_after_a_double_dash_to_the_job(tmp_path):
    """`-- --set cases=64`: a small demo without a config file written into the checkout; the
    flags before `--` still go to `ray job submit`."""
    seen = tmp_path / "args.json"
    fake = tmp_path / "ray"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\njson.dump(sys.argv[1:], open({str(seen)!r}, 'w'))\n")
    fake.chmod(0o755)
    env = dict(os.environ, RAY=str(fake), RAY_ADDRESS="http://127.0.0.1:1", OUT=str(tmp_path / "small"))
    r = subprocess.run(["bash", os.path.join(REPO_ROOT, "cluster", "submit.sh"), "demo", "configs/demo.yaml",
                        "--submission-id", "small-1", "--", "--set", "cases=64"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    args = json.loads(seen.read_text())
    entry = args[args.index("--", args.index("--runtime-env-json")):]
    assert args[args.index("--submission-id") + 1] == "small-1" and args.index("--submission-id") < len(args) - len(entry)
    assert entry == ["--", "python", "-m", "pipelines.demo", "--config", "configs/demo.yaml",
                     "--out", str(tmp_path / "small"), "--set", "cases=64"]


def _counting_fake_ray(tmp_path, answers: list[tuple[int, str]]):
    """A stand-in `ray` that gives the n-th call's (exit status, output) and counts its calls."""
    fake = tmp_path / "ray"
    calls = tmp_path / "calls"
    fake.write_text(f"#!{sys.executable}\nimport os, sys\nanswers = {answers!r}\npath = {str(calls)!r}\n"
                    "n = int(open(path).read()) if os.path.exists(path) else 0\nopen(path, 'w').write(str(n + 1))\n"
                    "rc, text = answers[min(n, len(answers) - 1)]\nprint(text, file=sys.stderr)\nsys.exit(rc)\n")
    fake.chmod(0o755)
    return fake, calls


NO_AGENT = ("RuntimeError: Request failed with status code 500: No available agent to submit job, "
            "please try again later.")


@pytest.mark.parametrize("answers, calls, rc", [
    ([(1, NO_AGENT), (1, NO_AGENT), (0, "Job 'raysubmit_1' succeeded")], 3, 0),  # agent up on the third try
    ([(1, NO_AGENT), (4, "Job 'raysubmit_1' failed")], 2, 4),  # the job's own failure passes through
    ([(1, "ConnectionError: no head at that address")], 1, 1),  # any other answer: not retried
    ([(1, NO_AGENT)], 3, 1),  # retries bounded (SUBMIT_AGENT_RETRIES=2: three tries), then its status
])
def test_submit_retries_only_the_answer_of_a_head_whose_job_agent_is_starting(tmp_path, answers, calls, rc):
    """Each retry is said on stderr; the calls counted by the stand-in are the tries made."""
    fake, counter = _counting_fake_ray(tmp_path, answers)
    env = dict(os.environ, RAY=str(fake), RAY_ADDRESS="http://127.0.0.1:1", SUBMIT_AGENT_RETRIES="2",
               SUBMIT_RETRY_WAIT_S="0")
    r = subprocess.run(["bash", os.path.join(REPO_ROOT, "cluster", "submit.sh"), "demo", "configs/demo.yaml"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == rc, r.stderr
    assert int(counter.read_text()) == calls
    assert r.stderr.count("job agent is not up yet") == calls - 1


def _scripted_fake_ray(tmp_path, script: dict[str, list[tuple[int, str]]]):
    """A stand-in `ray` whose n-th `job <verb>` call gives ``script[verb][n]`` (the last one again past
    the end) as (exit status, output with ``{id}`` the submission id it was given), and logs each call
    as a JSON line (verb, submission id) to the returned file."""
    fake, calls = tmp_path / "ray", tmp_path / "calls.jsonl"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\nscript = {script!r}\npath = {str(calls)!r}\n"
        "verb = sys.argv[2]\nargs = sys.argv[3:]\n"
        "sid = args[args.index('--submission-id') + 1] if verb == 'submit' else args[-1]\n"
        "done = [json.loads(l)['verb'] for l in open(path)] if os.path.exists(path) else []\n"
        "open(path, 'a').write(json.dumps({'verb': verb, 'id': sid}) + '\\n')\n"
        "answers = script[verb]\nrc, text = answers[min(done.count(verb), len(answers) - 1)]\n"
        "print(text.replace('{id}', sid), file=sys.stderr)\nsys.exit(rc)\n")
    fake.chmod(0o755)
    return fake, calls


DROPPED = ("requests.exceptions.ConnectionError: ('Connection aborted.', "
           "RemoteDisconnected('Remote end closed connection without response'))")


@pytest.mark.parametrize("script, submits, follows, rc", [
    # the dropped request had landed: the head holds the job, which is followed, not submitted again
    ({"submit": [(1, DROPPED)], "status": [(0, "Status for job '{id}': RUNNING"), (0, "Job '{id}' succeeded")],
      "logs": [(0, "demo finished")]}, 1, True, 0),
    # it had not: submitted again under the same id
    ({"submit": [(1, DROPPED), (0, "Job '{id}' succeeded")], "status": [(1, "Job {id} does not exist")],
      "logs": [(0, "")]}, 2, False, 0),
    # the head could not say; the second submission finds the first ("already exists"): followed, and
    # the job's failure is the exit status
    ({"submit": [(1, DROPPED), (1, "Job with submission_id {id} already exists. Please use a different submission_id.")],
      "status": [(1, DROPPED), (0, "Job '{id}' failed")], "logs": [(0, "Traceback ...")]}, 2, True, 1),
])
def test_a_dropped_submission_is_never_run_twice(tmp_path, script, submits, follows, rc):
    fake, calls = _scripted_fake_ray(tmp_path, script)
    env = dict(os.environ, RAY=str(fake), RAY_ADDRESS="http://127.0.0.1:1", SUBMIT_AGENT_RETRIES="3",
               SUBMIT_RETRY_WAIT_S="0")
    r = subprocess.run(["bash", os.path.join(REPO_ROOT, "cluster", "submit.sh"), "demo", "configs/demo.yaml"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == rc, r.stderr
    made = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [c["verb"] for c in made].count("submit") == submits
    assert ("logs" in [c["verb"] for c in made]) == follows
    ids = {c["id"] for c in made}
    assert len(ids) == 1 and ids.pop().startswith("medscope-demo-")  # one id for every try and query
