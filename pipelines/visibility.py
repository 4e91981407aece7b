"""``medscope visibility``: the §5.4 edit-visibility detectors on a views build.

    medscope visibility --views VIEWS --out visibility.json [--vlm CHECKPOINT_DIR]
        [--ratings EPISODES]   # zero-shot ratings of a sweep with the edit_rating protocol:
    medscope eval --protocol medscope.protocols.edit_rating.protocol:EditRatingProtocol \
        --conditions zero_shot --views VIEWS --models M --out runs/ratings
    medscope report --run RUN --out REPORT --visibility visibility.json

The logic is ``medscope.qc.visibility``.
"""

from __future__ import annotations

import json

from typing import Literal

from pydantic import Field as F

from medscope.io import records, storage
from medscope.config import StrictModel
from medscope.qc import visibility as vis
from pipelines.support.flags import add_config_flags, config_from_args


def run(views_uri: str, out: str, vlm: str | None = None, size: int | None = None, epochs: int = 5, n_boot: int = 2000,
        seed: int = 0, ratings: str | None = None, field: str = "view") -> dict:
    """Run the §5.4 edit-visibility detectors on a views build and write their report as JSON.

    Parameters
    ----------
    views_uri : str
        The views table (needs ``case_id``, ``kind``, ``split``, ``passed``, ``image``, ``edit_mask``;
        train and test splits).
    out : str
        URI of the JSON report written.
    vlm : str or None, optional
        Local Hugging Face VLM checkpoint folder whose frozen vision tower the linear probe reads;
        None: no VLM probe.
    size : int or None, optional
        Side in pixels inputs are resized to; None: the detectors' default for ``field``.
    epochs : int, optional
        Training epochs of each detector.
    n_boot : int, optional
        Bootstrap resamples of the AUC intervals.
    seed : int, optional
        Seed of training and the bootstrap.
    ratings : str or None, optional
        Episodes of an ``edit_rating`` sweep on these views; when given, their zero-shot AUCs are
        added under ``"zero_shot"``.
    field : str, optional
        ``"view"`` (whole views, as §5.4) or ``"crop"`` (crops around the edit).

    Returns
    -------
    dict
        The detectors' report (``medscope.qc.visibility.run_edit_detectors``) with ``views``, ``vlm``
        and, with ``ratings``, ``zero_shot`` added; the same dict is written to ``out``.

    References
    ----------
    .. [1] counterfactual paper, §5.4.
    """
    views = records.read_table("views", views_uri, columns=["case_id", "kind", "split", "passed", "image",
                                                           "edit_mask"]).to_pylist()
    model = None
    if vlm:
        from medscope.models.local_hf import LocalHFModel

        loaded = LocalHFModel("vision-tower", vlm)
        model = (loaded.model, loaded.processor)
    report = vis.run_edit_detectors(views, vlm=model, size=size, epochs=epochs, n_boot=n_boot, seed=seed, field=field)
    report.update(views=views_uri, vlm=vlm)
    if ratings:
        from medscope.protocols.edit_rating.scoring import rating_aucs

        report["zero_shot"] = rating_aucs(records.read_table("episodes", ratings),
                                          records.read_table("views", views_uri, columns=["view_id", "kind"]),
                                          n_boot, seed)
    storage.write_text(out, json.dumps(report, indent=2) + "\n")
    return report


class VisibilityConfig(StrictModel):
    """``medscope visibility``: the §5.4 edit-visibility detectors on a views build."""

    views: str = F(description="views table with train and test splits")
    out: str = F(description="JSON report")
    vlm: str | None = F(None, description="local HF VLM checkpoint whose frozen vision tower the linear probe reads")
    field: Literal[vis.FIELDS] = F("view", description="view: whole views, as §5.4; crop: crops around "  # type: ignore[valid-type]
                                                       "the edit (an option, labelled)")
    size: int | None = F(None, ge=1, description="side in pixels inputs are resized to (default: 224 for views, "
                                           "64 for crops; an addition)")
    epochs: int = F(5, ge=1, description="training epochs of each detector")
    n_boot: int = F(2000, ge=0, description="bootstrap resamples of the AUC intervals")
    seed: int = F(0, description="seed of training and the bootstrap")
    ratings: str | None = F(None, description="episodes of an edit_rating sweep on these views (zero-shot AUCs)")


def register(sub) -> None:
    """Add the ``visibility`` verb.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``visibility`` is added to them.
    """
    p = sub.add_parser("visibility", help="edit-visibility detectors (counterfactual paper §5.4): ResNet-18 and a VLM linear probe",
                       description=VisibilityConfig.__doc__)
    add_config_flags(p, VisibilityConfig)
    p.set_defaults(func=lambda a: _run_cli(config_from_args(a, source="medscope visibility")))


def _run_cli(c: VisibilityConfig) -> None:
    print(vis.report_markdown(run(c.views, c.out, c.vlm, c.size, c.epochs, c.n_boot, c.seed, c.ratings, c.field)))
