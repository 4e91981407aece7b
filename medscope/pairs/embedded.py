"""The embedded pair set: ``data/embedded.yaml`` built through generate -> review -> build with the
procedural generator, every candidate approved automatically (and said so in its history)."""

from __future__ import annotations

from importlib import resources

from medscope import config as cfgmod
from medscope.io import storage
from medscope.pairs import review as rv
from medscope.pairs.generators import ProceduralGenerator
from medscope.pairs.spec import PairsSpec

AUTO_REVIEWER = "auto: embedded generated set, no human review"


def embedded_spec() -> PairsSpec:
    """The construction spec of the embedded set, ``medscope/pairs/data/embedded.yaml``.

    Returns
    -------
    PairsSpec
        The parsed spec.
    """
    text = resources.files(__package__).joinpath("data/embedded.yaml").read_text()
    import yaml

    return cfgmod.parse(PairsSpec, yaml.safe_load(text), source="medscope/pairs/data/embedded.yaml")


def write_embedded_set(out: str) -> dict:
    """Generate, auto-approve and build the embedded set under ``out`` (manifest.yaml + images).

    Parameters
    ----------
    out : str
        The pair set's folder (path or storage URI); its candidates and review file go to ``<out>/work``.

    Returns
    -------
    dict
        ``review.build``'s summary: ``manifest``, ``conditions``, ``incomplete``.
    """
    spec = embedded_spec()
    work = storage.join(out, "work")
    gen = ProceduralGenerator(spec.generator)
    for _ in range(3):  # edit_from_matched slots need a second round
        made = rv.generate_round(spec, work, gen)["generated"]
        rv.decide(work, ["all-pending"], "approve", reviewer=AUTO_REVIEWER)
        if not made:
            break
    return rv.build(spec, work, out)
