"""Whether the local model a recipe or a models config names is there, checked on the driver
before Ray or any worker starts (a missing base model failed inside every training
worker, 16 lines of traceback after 45 s). One line naming the file's field and the fix.

A local checkpoint is a Hugging Face model folder (``config.json`` inside), read by
``AutoModelForImageTextToText.from_pretrained``; ``tiny`` / ``tiny:<arch>`` is a random tiny
model built in memory (``medscope.models.tiny_vlm``).
"""

from __future__ import annotations

import os

from medscope.errors import MedScopeError

TINY = "tiny"
# tiny_vlm.ARCHS, written out so that the check imports no torch or transformers (as
# pipelines/agent.py's choices); tests/models/test_local.py keeps the two equal
TINY_ARCHS = ("qwen2-vl", "qwen2.5-vl", "gemma3")
CHECKPOINT_KINDS = ("local_hf",)  # model kinds whose ``model`` is a checkpoint folder on this machine


def checkpoint_problem(path: str) -> str | None:
    """Why ``path`` is not a loadable local checkpoint folder (None when it is).

    Parameters
    ----------
    path : str
        The local model folder.

    Returns
    -------
    str or None
        The reason (a URL, missing, a file, no ``config.json``), or None.
    """
    if "://" in path:
        return f"{path!r} is a URL; a local model must be a folder on this machine"
    if not os.path.exists(path):
        return f"{path!r} does not exist"
    if not os.path.isdir(path):
        return f"{path!r} is a file, not a model folder"
    if not os.path.isfile(os.path.join(path, "config.json")):
        return f"{path!r} holds no config.json: not a Hugging Face model folder"
    return None


def base_problem(base: str) -> str | None:
    """Why a training recipe's ``base`` cannot be built (None when it can).

    Parameters
    ----------
    base : str
        ``tiny``, ``tiny:<arch>`` or a local checkpoint folder.

    Returns
    -------
    str or None
        The reason, or None.
    """
    if base == TINY or base.startswith(TINY + ":"):
        arch = base.partition(":")[2] or TINY_ARCHS[0]
        return None if arch in TINY_ARCHS else f"unknown tiny architecture {arch!r} (one of {', '.join(TINY_ARCHS)})"
    return checkpoint_problem(base)


def require_base(base: str, where: str) -> None:
    """MedScopeError naming ``where`` (the recipe) when its ``base`` cannot be built.

    Parameters
    ----------
    base : str
        The recipe's ``base``.
    where : str
        The recipe (file), named in the message.

    Raises
    ------
    MedScopeError
        If ``base`` cannot be built (see `base_problem`).
    """
    problem = base_problem(base)
    if problem:
        raise MedScopeError(f"{where}: base model {problem}; set `base:` to tiny[:arch] or a local Hugging Face "
                            "model folder (`medscope agent tiny-vlm` writes one)")


def require_local_models(entries, where: str) -> None:
    """MedScopeError naming every local-model entry of a models config whose checkpoint (or
    ``options.adapter``) folder is missing, before a sweep starts.

    Parameters
    ----------
    entries : iterable
        Model entries of a models config (``name``, ``kind``, ``model``, ``options``); only
        ``local_hf`` ones are checked.
    where : str
        The config (file), named in the message.

    Raises
    ------
    MedScopeError
        If any checkpoint or adapter folder is missing, naming all of them.
    """
    problems = []
    for e in entries:
        if getattr(e, "kind", None) not in CHECKPOINT_KINDS:
            continue
        opts = dict(getattr(e, "options", None) or {})
        path = getattr(e, "model", None) or opts.get("path")
        problem = checkpoint_problem(str(path)) if path else "names no checkpoint (model: <folder>)"
        if problem:
            problems.append(f"model {e.name}: {problem}")
        adapter = opts.get("adapter")
        if adapter and "://" not in str(adapter) and not os.path.isdir(str(adapter)):
            problems.append(f"model {e.name}: adapter folder {str(adapter)!r} does not exist")
    if problems:
        raise MedScopeError(f"{where}: " + "; ".join(problems) + "; fix the path(s) or build the model first")
