"""``medscope visibility``: the §5.4 edit-visibility probes on a views build.

    medscope visibility --views VIEWS --out visibility.json [--vlm CHECKPOINT_DIR]
        [--ratings EPISODES]   # zero-shot ratings of a sweep with the edit_rating protocol:
    medscope eval --protocol medscope.protocols.edit_rating.protocol:EditRatingProtocol \
        --conditions zero_shot --views VIEWS --models M --out runs/ratings
    medscope report --run RUN --out REPORT --visibility visibility.json

The logic is ``medscope.qc.visibility``.
"""

from __future__ import annotations

import json

from medscope import records, storage
from medscope.qc import visibility as vis


def run(views_uri: str, out: str, vlm: str | None = None, size: int | None = None, epochs: int = 5, n_boot: int = 2000,
        seed: int = 0, ratings: str | None = None, field: str = "view") -> dict:
    views = records.read_table("views", views_uri, columns=["case_id", "kind", "split", "passed", "image",
                                                           "edit_mask"]).to_pylist()
    model = None
    if vlm:
        from medscope.models.local_hf import LocalHFModel

        loaded = LocalHFModel("probe", vlm)
        model = (loaded.model, loaded.processor)
    report = vis.run_probes(views, vlm=model, size=size, epochs=epochs, n_boot=n_boot, seed=seed, field=field)
    report.update(views=views_uri, vlm=vlm)
    if ratings:
        from medscope.protocols.edit_rating.protocol import rating_aucs

        report["zero_shot"] = rating_aucs(records.read_table("episodes", ratings),
                                          records.read_table("views", views_uri, columns=["view_id", "kind"]),
                                          n_boot, seed)
    storage.write_text(out, json.dumps(report, indent=2) + "\n")
    return report


def register(sub) -> None:
    p = sub.add_parser("visibility", help="edit-visibility probes (seed 000 §5.4): ResNet-18 and a VLM linear probe")
    p.add_argument("--views", required=True, help="views table with train and test splits")
    p.add_argument("--out", required=True, help="JSON report")
    p.add_argument("--vlm", help="local HF VLM checkpoint whose frozen vision tower the linear probe reads")
    p.add_argument("--field", choices=list(vis.FIELDS), default="view",
                   help="view: whole views, as §5.4 (default); crop: crops around the edit (an option, labelled)")
    p.add_argument("--size", type=int, default=None,
                   help="side in pixels inputs are resized to (default: 224 for views, 64 for crops; an addition)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--n-boot", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ratings", help="episodes of an edit_rating sweep on these views (zero-shot AUCs)")
    p.set_defaults(func=lambda a: print(vis.report_markdown(run(a.views, a.out, a.vlm, a.size, a.epochs, a.n_boot,
                                                                a.seed, a.ratings, a.field))))
