"""Storage over local paths, file://, memory:// and a real S3 server on loopback."""

import os
import stat
import subprocess
import sys
import threading

import pytest

from medscope.io import storage
from medscope.errors import MedScopeError
from tests.conftest import REPO_ROOT


@pytest.fixture(params=["path", "file", "memory", "s3"])
def root(request, tmp_path):
    if request.param == "path":
        return str(tmp_path / "store")
    if request.param == "file":
        return f"file://{tmp_path}/store"
    if request.param == "memory":
        return f"memory://medscope-{os.getpid()}-{id(request)}"
    return request.getfixturevalue("s3_bucket") + "/store"


def test_roundtrip_list_and_delete(root):
    a, b = storage.join(root, "t", "a.bin"), storage.join(root, "t", "b.txt")
    storage.write_bytes(a, b"\x00\x01payload")
    storage.write_text(b, "hello")
    assert storage.read_bytes(a) == b"\x00\x01payload"
    assert storage.read_utf8(b) == "hello"
    assert storage.list_files(storage.join(root, "t")) == sorted([a, b])
    assert storage.list_files(storage.join(root, "t"), suffix=".txt") == [b]
    assert storage.is_dir(storage.join(root, "t")) and not storage.is_dir(a)
    storage.write_bytes(a, b"replaced")
    assert storage.read_bytes(a) == b"replaced"
    storage.delete(storage.join(root, "t"))
    assert not storage.exists(a)
    assert storage.list_files(storage.join(root, "t")) == []


def test_write_once_never_replaces(root):
    uri = storage.join(root, "parts", "part-0001.parquet")
    assert storage.write_once(uri, b"first") is True
    assert storage.write_once(uri, b"second") is False
    assert storage.read_bytes(uri) == b"first"


def test_missing_file_is_a_clear_error(root):
    with pytest.raises(MedScopeError, match="not found"):
        storage.read_bytes(storage.join(root, "nope.bin"))


def test_local_write_once_race_has_one_winner(tmp_path):
    uri = str(tmp_path / "race" / "part-x.parquet")
    wins = []

    def writer(i):
        wins.append(storage.write_once(uri, f"writer {i}".encode()))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1
    assert storage.read_utf8(uri).startswith("writer ")
    assert os.listdir(tmp_path / "race") == ["part-x.parquet"]  # no temporary files left


def test_local_write_is_atomic_no_partial_file_visible(tmp_path, monkeypatch):
    uri = str(tmp_path / "atomic.bin")
    storage.write_bytes(uri, b"old")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        storage.write_bytes(uri, b"new contents")
    assert storage.read_bytes(uri) == b"old"
    assert os.listdir(tmp_path) == ["atomic.bin"]


def test_unknown_scheme_is_rejected():
    with pytest.raises(MedScopeError, match="unsupported storage scheme"):
        storage.read_bytes("gopher://x/y")


def test_s3_sees_other_writers_immediately(s3_bucket):
    """Listings are uncached: a file another client writes shows up at once."""
    import boto3

    folder = s3_bucket + "/shared"
    storage.write_bytes(folder + "/one.bin", b"1")
    assert len(storage.list_files(folder)) == 1
    boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"]).put_object(
        Bucket="medscope-test", Key="shared/two.bin", Body=b"2"
    )
    assert [u.rsplit("/", 1)[1] for u in storage.list_files(folder)] == ["one.bin", "two.bin"]


def test_absolute_anchors_relative_local_paths_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert storage.absolute("demo-out/views") == str(tmp_path / "demo-out" / "views")
    assert storage.absolute(f"file://{tmp_path}/x") == str(tmp_path / "x")
    assert storage.absolute("s3://bucket/run") == "s3://bucket/run"
    assert storage.absolute("memory://run") == "memory://run"


def test_training_jobs_hand_workers_absolute_paths(tmp_path, monkeypatch):
    """Ray Train and Tune workers run in their trial folder: relative paths would miss."""
    from pipelines.sweep import SweepJob
    from pipelines.train import TrainJob

    monkeypatch.chdir(tmp_path)
    job = TrainJob(recipe="r.yaml", views="out/views.parquet", out="out/train")
    assert (job.views, job.out) == (str(tmp_path / "out" / "views.parquet"), str(tmp_path / "out" / "train"))
    sweep = SweepJob(arms="a.yaml", views="v.parquet", out="s3://b/sweep")
    assert sweep.views == str(tmp_path / "v.parquet") and sweep.out == "s3://b/sweep" and sweep.eval_views is None


WORKER = """
import json, sys
from medscope.io import storage
from pipelines.train import use_driver_storage
cfg, uri = json.loads(sys.argv[1]), sys.argv[2]
use_driver_storage(cfg)
endpoint = storage.s3_endpoint()
if endpoint:  # without one s3fs would go to AWS itself: nothing to learn from that
    storage.write_text(uri, "written by a worker")
print(json.dumps(endpoint))
"""


def test_training_workers_reach_the_endpoint_set_only_through_storage_configure(s3_server, monkeypatch):
    """An endpoint given by ``storage.configure`` (no AWS_ENDPOINT_URL anywhere) reaches the
    Train workers: a fresh process whose environment names no endpoint, given the config the
    driver hands its workers, writes to that server."""
    import json
    import subprocess
    import sys
    import urllib.request

    import boto3

    from pipelines.train import TrainJob, resolve_recipe, worker_config

    urllib.request.urlopen(urllib.request.Request(f"{s3_server}/moto-api/reset", method="POST"))
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").create_bucket(Bucket="medscope-configured")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    storage.configure(s3_endpoint=s3_server)
    try:
        job = TrainJob(recipe="configs/train/smoke.yaml", views="s3://medscope-configured/views.parquet",
                       out="s3://medscope-configured/train", use_gpu=False)
        cfg = worker_config(job, resolve_recipe(job))
    finally:
        storage.configure(s3_endpoint=None)
    root = REPO_ROOT
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")} | {"PYTHONPATH": root}
    done = subprocess.run([sys.executable, "-c", WORKER, json.dumps(cfg), "s3://medscope-configured/train/progress.json"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == s3_server
    body = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").get_object(
        Bucket="medscope-configured", Key="train/progress.json")["Body"].read()
    assert body == b"written by a worker"

def test_only_the_storage_module_reads_the_s3_endpoint_from_the_environment():
    """Every other module asks ``storage.s3_endpoint()``, so ``storage.configure`` is never missed."""
    root = REPO_ROOT
    readers = []
    for top in ("medscope", "pipelines"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                path = os.path.join(folder, name)
                if name.endswith(".py") and "AWS_ENDPOINT_URL" in open(path, encoding="utf-8").read():
                    readers.append(os.path.relpath(path, root))
    assert readers == ["medscope/io/storage.py"]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_local_writes_get_the_mode_the_umask_gives(tmp_path, umask, mode):
    # a fresh process, so the umask set here is the one the write sees
    code = ("import os, sys; os.umask(int(sys.argv[2], 8)); from medscope.io import storage; "
            "storage.write_bytes(os.path.join(sys.argv[1], 'a', 't.parquet'), b'x')\n"
            "with storage.open_write(os.path.join(sys.argv[1], 'b.bin')) as fh: fh.write(b'y')")
    subprocess.run([sys.executable, "-c", code, str(tmp_path), oct(umask)[2:]], check=True)
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "t.parquet").st_mode) == mode
    assert stat.S_IMODE(os.stat(tmp_path / "b.bin").st_mode) == mode


def test_a_write_onto_a_fifo_is_refused_and_the_fifo_kept(tmp_path):
    # issue 51, the eighth campaign: `answers read --out /dev/full` renamed a temporary file onto
    # the device node, replacing /dev/full with a regular file (as root). A path that is a device,
    # FIFO or socket is refused before anything is written; a FIFO stands in for the device here
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(MedScopeError, match=f"{fifo}: a FIFO, not a file MedScope can write"):
        storage.write_text(str(fifo), "x\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary file left beside it
    # a symlink to a regular file is still replaced as before, its target untouched
    target = tmp_path / "target.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    storage.write_text(str(link), "new")
    assert not link.is_symlink() and link.read_text() == "new" and target.read_text() == "old"
