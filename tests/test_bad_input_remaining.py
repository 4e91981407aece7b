"""Issue 32, the items left after the third campaign: each bad input placed beside good ones.

- rejects carry the exception's class (``error_class``), so rows can be grouped by cause;
- NaN / inf / out-of-range lesion fractions are refused on write and on read (views, cases);
- (further items of the issue follow below, one section each).
"""

import io
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests.fixtures.cohort_layouts import _save, gray_image, rect_mask
from medscope import cohorts
from medscope.io import records, tablescan
from medscope.errors import MedScopeError
from medscope.training.synthetic_views import synthetic_views

pytestmark = pytest.mark.timeout(120)


def _png(array) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, "PNG")
    return buf.getvalue()


# --------------------------------------------------------------------------- error_class


def test_rejects_name_the_exception_class_of_each_cause(tmp_path):
    root = tmp_path / "imf"
    m = rect_mask(32, 40, 5, 5, 20, 12).astype(np.uint8) * 255
    _save(f"{root}/images/good.png", gray_image(32, 40, 1))
    _save(f"{root}/masks/good_mask.png", m)
    truncated = _png(gray_image(32, 40, 2))[:60]
    (root / "images" / "cut.png").write_bytes(truncated)
    _save(f"{root}/masks/cut_mask.png", m)
    os.mkfifo(root / "images" / "pipe.png")
    _save(f"{root}/masks/pipe_mask.png", m)
    # what Pillow itself raises on the truncated bytes, worked out here, not by MedScope
    try:
        Image.open(io.BytesIO(truncated)).load()
        raise AssertionError("Pillow read a truncated PNG")
    except Exception as err:  # noqa: BLE001
        pillow_class = type(err).__name__
    cfg = cohorts.dataset_config("image-mask-folder", overrides={"mask_suffix": "_mask"})
    table, rejects = cohorts.load("image-mask-folder", str(root), cfg)
    assert table.column("source_file").to_pylist() == ["images/good.png"]
    got = {r["item_id"]: (r["reason"], r["error_class"]) for r in rejects if r["stage"] == "load"}
    assert got["images/cut.png"] == ("unreadable image", pillow_class)
    assert got["images/pipe.png"] == ("not a regular file", "InputRejected")  # MedScope's own check
    back = records.to_table("rejects", rejects)
    assert "error_class" in back.column_names


# --------------------------------------------------------------------------- NaN lesion fractions


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.1, 1.5])
def test_views_with_a_non_finite_lesion_fraction_are_refused_on_write_and_read(tmp_path, bad):
    rows = synthetic_views(3, seed=1, size=32)
    good = records.to_table("views", rows)  # the good rows are storable
    lesion = next(i for i, r in enumerate(rows) if r["lesion_area_frac"] > 0)
    rows[lesion]["lesion_area_frac"] = bad
    with pytest.raises(MedScopeError, match=r"views.lesion_area_frac must be a finite share in \[0, 1\]; 1 row"):
        records.to_table("views", rows)
    # a table written by another tool is refused when read, naming the file and the view
    frac = good.column("lesion_area_frac").to_pylist()
    frac[lesion] = bad
    written = good.set_column(good.column_names.index("lesion_area_frac"), "lesion_area_frac", pa.array(frac))
    uri = str(tmp_path / "views.parquet")
    pq.write_table(written, uri)
    view = rows[lesion]["view_id"]
    with pytest.raises(MedScopeError, match=f"{uri}.*1 row.*{view}"):
        records.read_table("views", uri)
    with pytest.raises(MedScopeError, match="lesion_area_frac must be a finite share"):
        list(tablescan.iter_rows("views", uri))
    # the same table with the good value reads back whole
    pq.write_table(good, uri)
    assert records.read_table("views", uri).num_rows == len(rows)


# --------------------------------------------------------------------------- pairs build


def test_a_truncated_approved_candidate_is_never_copied_into_a_pair_set(tmp_path):
    import yaml

    from medscope.pairs import review as rv
    from medscope.pairs.generators import ProceduralGenerator
    from tests.pairs.test_construction import _two_condition_spec

    spec = _two_condition_spec()
    work, out = tmp_path / "work", tmp_path / "set"
    rv.generate_round(spec, str(work), ProceduralGenerator(spec.generator))
    rv.decide(str(work), ["all-pending"], "approve", reviewer="dr-a")
    cands = rv.load_review(str(work))["candidates"]
    a, b = spec.conditions[0].condition, spec.conditions[1].condition
    cut = next(c for c in cands if c["condition"] == b and c["photo_type"] == "matched")
    path = work / cut["image"]
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # a copy that stopped half-way
    with pytest.raises(Exception):  # Pillow itself cannot decode it: the premise, checked independently
        Image.open(io.BytesIO(path.read_bytes())).load()
    built = rv.build(spec, str(work), str(out))
    assert built["conditions"] == 1
    [entry] = built["incomplete"]
    assert entry["condition"] == b and entry["missing"] == []
    [bad] = entry["unreadable"]
    assert (bad["photo_type"], bad["candidate"], bad["reason"]) == ("matched", cut["id"], "unreadable image")
    assert bad["error_class"] not in ("", None, "InputRejected")  # Pillow's exception, by name
    manifest = yaml.safe_load(open(built["manifest"]))
    assert [c["condition"] for c in manifest["conditions"]] == [a]
    assert not (out / "photos" / f"{rv.slug(b)}-matched.png").exists()
    for pt in ("matched", "mismatched"):  # the good condition's photographs are whole copies
        rel = manifest["conditions"][0][pt]["image"]
        src = next(c for c in cands if c["condition"] == a and c["photo_type"] == pt)
        assert (out / rel).read_bytes() == (work / src["image"]).read_bytes()


# --------------------------------------------------------------------------- eval run -> score, end to end


@pytest.mark.timeout(600)  # Ray's start-up on a loaded machine, not the test's own work
def test_url_credentials_reach_no_output_and_score_refuses_a_partial_copy(ray_cluster, tmp_path, monkeypatch, capfd):
    """A real sweep (local Ray, loopback OpenAI-wire server) whose base_url carries a user and
    password: the password is in no printed line, no sweep.json, no table. Then half the
    episodes are deleted: ``score`` refuses in one line instead of scoring what is left."""
    import argparse
    import json

    import yaml

    from medscope.testing import providers as fp
    from medscope.testing.views import write_views
    from pipelines import score as scoremod
    from pipelines.support import runcheck
    from pipelines.support.jobs import guarded
    from tests.jobs.test_eval_privacy_budget import PROTOCOL, cli_main
    from tests.jobs.test_eval_sweep import KEY_ENV

    secret = "s3cretPassw0rd"
    monkeypatch.setenv(KEY_ENV, "k")
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes")
    try:
        views = write_views(str(tmp_path / "views.parquet"), 2)
        url = server.url.replace("http://", f"http://alice:{secret}@", 1)
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [{"name": "vault", "kind": "openai", "model": "fake-1",
                                                      "base_url": url, "api_key_env": KEY_ENV, "timeout_s": 5.0}]}))
        out = tmp_path / "eval"
        rc = cli_main(["eval", "run", "--items", views, "--models", str(models), "--conditions", "plain,agent",
                       "--out", str(out), "--protocol", PROTOCOL, "--backoff-s", "0.01"])
        printed = capfd.readouterr()
        assert rc == 0 and len(server.requests) == 4  # the sweep really ran against the server
    finally:
        server.close()
    assert secret not in printed.out + printed.err
    sweep = json.loads((out / "sweep.json").read_text())
    assert secret not in (out / "sweep.json").read_text()
    assert sweep["models"][0]["endpoint"] == url.replace(f"alice:{secret}", "***")
    for path in out.rglob("*"):  # every file the run wrote, tables decoded (Parquet is compressed)
        if path.suffix == ".parquet":
            assert secret not in str(pq.read_table(path).to_pylist()), path
        elif path.is_file():
            assert secret.encode() not in path.read_bytes(), path

    # the whole run passes the completeness check; with half its parts gone, score refuses
    runcheck.require_complete(str(out / "episodes"))
    parts = sorted((out / "episodes").glob("part-*.parquet"))
    assert len(parts) == 4
    for p in parts[:2]:
        p.unlink()
    parser = argparse.ArgumentParser(prog="medscope")
    scoremod.register(parser.add_subparsers(dest="verb"))
    args = parser.parse_args(["score", "--episodes", str(out), "--out", str(tmp_path / "scored")])
    assert guarded(lambda: args.func(args)) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "says 4 episodes were written, but only 2 are there (2 missing" in err[0]
    assert not (tmp_path / "scored").exists()


# --------------------------------------------------------------------------- missing base model


def test_checkpoint_problems_are_found_from_the_folder(tmp_path):
    import ast

    from medscope.models import checkpoints

    # the written-out architectures are tiny_vlm.ARCHS (read from its source: no torch import)
    src = open(os.path.join(os.path.dirname(checkpoints.__file__), "tiny_vlm.py")).read()
    archs = next(ast.literal_eval(n.value) for n in ast.parse(src).body
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "ARCHS")
    assert checkpoints.TINY_ARCHS == archs

    good = tmp_path / "model"
    good.mkdir()
    (good / "config.json").write_text("{}")
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "weights.bin").write_bytes(b"\0")
    assert checkpoints.base_problem("tiny") is None and checkpoints.base_problem("tiny:gemma3") is None
    assert checkpoints.base_problem(str(good)) is None
    assert "does not exist" in checkpoints.base_problem(str(tmp_path / "gone"))
    assert "no config.json" in checkpoints.base_problem(str(empty))
    assert "not a model folder" in checkpoints.base_problem(str(tmp_path / "weights.bin"))
    assert "unknown tiny architecture 'llama'" in checkpoints.base_problem("tiny:llama")
    assert "is a URL" in checkpoints.base_problem("s3://bucket/model")


def _no_ray(monkeypatch):
    """Ray starting is the event the checks must come before: it fails the test if it happens."""
    from pipelines.support import raycluster

    def started(*a, **k):
        raise AssertionError("Ray was started before the missing model was reported")

    monkeypatch.setattr(raycluster, "ensure_ray", started)


def test_train_with_a_missing_base_model_stops_before_ray_in_one_line(tmp_path, monkeypatch):
    from medscope import config as cfgmod
    from pipelines import train

    _no_ray(monkeypatch)
    missing = tmp_path / "models" / "qwen2-vl-7b"
    job = train.TrainJob(recipe=cfgmod.shipped("train", "smoke.yaml"), views=str(tmp_path / "views.parquet"),
                         out=str(tmp_path / "run"), overrides={"base": str(missing)})
    with pytest.raises(MedScopeError) as err:
        train.run(job)
    message = str(err.value)
    assert "smoke.yaml" in message and str(missing) in message and "does not exist" in message
    assert "\n" not in message and not (tmp_path / "run").exists()


def test_eval_with_a_missing_local_checkpoint_stops_before_ray_naming_the_model(tmp_path, monkeypatch):
    import yaml

    from medscope.testing.views import write_views
    from pipelines.eval import EvalConfig, run_sweep

    _no_ray(monkeypatch)
    views = write_views(str(tmp_path / "views.parquet"), 2)
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": [
        {"name": "claims", "kind": "policy", "model": "always-claims"},  # a good entry beside it
        {"name": "mine", "kind": "local_hf", "model": str(tmp_path / "ckpt")}]}))
    with pytest.raises(MedScopeError, match=r"models.yaml: model mine: '.*ckpt' does not exist") as err:
        run_sweep(EvalConfig(items=views, models=str(models), out=str(tmp_path / "eval"), conditions=["plain"]))
    assert "claims" not in str(err.value)
    assert not (tmp_path / "eval").exists()


# --------------------------------------------------------------------------- ChestX-Det, QaTa-COV19 audited


def _load_rows(fmt, root):
    table, rejects = cohorts.load(fmt, str(root))
    records.to_table("rejects", rejects)  # every row storable
    load = {r["item_id"]: r["reason"] for r in rejects if r["stage"] == "load"}
    ignored = {r["item_id"]: r["reason"] for r in rejects if r["stage"] == "ignored"}
    return {r["source_file"] for r in table.to_pylist()}, load, ignored


def test_chestx_det_every_file_and_record_gets_a_row(tmp_path):
    import json

    root = tmp_path / "chestx"
    _save(f"{root}/train/1.png", gray_image(64, 64, 1))
    _save(f"{root}/train/2.png", gray_image(64, 64, 2))
    _save(f"{root}/train/stray.png", gray_image(64, 64, 3))  # on disk, in no record
    (root / "train" / "notes.txt").write_text("export log")
    _save(f"{tmp_path}/outside/secret.png", gray_image(64, 64, 4))  # exists, so only the guard stops it
    _save(f"{root}/train/cut.png", gray_image(64, 64, 5))
    (root / "train" / "cut.png").write_bytes((root / "train" / "cut.png").read_bytes()[:70])
    nodule = {"file_name": "2.png", "syms": ["Nodule"], "boxes": [[0, 0, 1, 1]],
              "polygons": [[[10, 10], [20, 10], [20, 18], [10, 18]]]}
    recs = [{"file_name": "1.png", "syms": [], "boxes": [], "polygons": []}, nodule, dict(nodule),
            {"file_name": "../../outside/secret.png", "syms": [], "boxes": [], "polygons": []},
            {"file_name": "cut.png", "syms": [], "boxes": [], "polygons": []}]
    (root / "ChestX_Det_train.json").write_text(json.dumps(recs))
    kept, load, ignored = _load_rows("chestx-det", root)
    assert kept == {"train/1.png", "train/2.png#Nodule"}  # the repeat did not make a second case
    assert load == {"ChestX_Det_train.json[2]": "duplicate record",
                    "train/../../outside/secret.png": "path leaves the input root",
                    "train/cut.png": "unreadable image",
                    "train/stray.png": "not in the annotations"}
    assert ignored == {"train/notes.txt": "not a png/jpg/jpeg/bmp/tif/tiff file"}


def test_qata_every_file_gets_a_row(tmp_path):
    base = tmp_path / "QaTa-COV19-v2" / "Train Set"
    m = rect_mask(40, 40, 4, 6, 15, 20).astype(np.uint8) * 255
    _save(f"{base}/Images/covid_1.png", gray_image(40, 40, 1))
    _save(f"{base}/Ground-truths/mask_covid_1.png", m)
    _save(f"{base}/Ground-truths/mask_covid_9.png", m)  # no image claims it
    _save(f"{base}/Ground-truths/covid_1_copy.png", m)  # not named mask_<image>
    _save(f"{base}/Previews/covid_1.png", gray_image(40, 40, 2))  # another folder
    _save(f"{base}/Images/covid_2.png", gray_image(40, 40, 3))
    (base / "Images" / "covid_2.png").write_bytes((base / "Images" / "covid_2.png").read_bytes()[:70])
    _save(f"{base}/Ground-truths/mask_covid_2.png", m)
    (base / "Images" / "Thumbs.db").write_bytes(b"\0" * 8)
    kept, load, ignored = _load_rows("qata-cov19", tmp_path)
    t = "QaTa-COV19-v2/Train Set"
    assert kept == {f"{t}/Images/covid_1.png"}
    assert load == {f"{t}/Ground-truths/mask_covid_9.png": "mask without image",
                    f"{t}/Images/covid_2.png": "unreadable image"}
    assert ignored == {f"{t}/Ground-truths/covid_1_copy.png": "in Ground-truths/ but not named mask_<image>",
                       f"{t}/Previews/covid_1.png": "outside the Images/ and Ground-truths/ folders",
                       f"{t}/Images/Thumbs.db": "not a png/jpg/jpeg/bmp/tif/tiff file"}


def test_vqa_release_json_names_match_files_in_nfc(tmp_path):
    """A VQA-RAD JSON written with an NFD name (macOS) beside the file unpacked in NFC: one item,
    the same one as when both agree; a name that matches nothing is still a missing image."""
    import json
    import unicodedata

    from tests.fixtures.replay_layouts import smooth_image, write_vqa_rad

    root = tmp_path / "vqarad"
    write_vqa_rad(root, 2, {}, {})
    _save(f"{root}/VQA_RAD Image Folder/café.jpg", smooth_image(5), "JPEG", quality=95)
    p = root / "VQA_RAD Dataset Public.json"
    data = json.loads(p.read_text())
    nfd = unicodedata.normalize("NFD", "café.jpg")
    data += [{**data[0], "qid": 501, "image_name": nfd}, {**data[0], "qid": 502, "image_name": "nowhere.jpg"}]
    p.write_text(json.dumps(data))
    table, rejects = cohorts.load("vqa-rad", str(root))
    files = table.column("image_file").to_pylist()
    assert "VQA_RAD Image Folder/café.jpg" in files and len(files) == len(data) - 1
    assert {r["item_id"]: r["reason"] for r in rejects} == {"VQA_RAD Image Folder/nowhere.jpg#502": "missing image"}
