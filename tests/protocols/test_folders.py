"""Every shipped protocol folder has one shape (docs/design.md "Where new code goes"): ``options.py``
holds its Options model, ``protocol.py`` the class ``PROTOCOL`` names, ``tables.py`` what it writes,
``scoring.py`` and ``report.py`` the functions its ``score`` and ``report_sections`` call."""

import importlib
import inspect
import os

import pytest

from medscope import protocols
from medscope.protocols.base import ProtocolOptions

SHAPE = ("options.py", "protocol.py", "tables.py", "scoring.py", "report.py")


def test_the_shipped_protocols_are_the_six_known_ones():
    assert protocols.names() == ["benchmark_mcq", "counterfactual", "edit_rating", "organ_presence",
                                 "paired_modality", "standard_vqa"]


@pytest.mark.parametrize("name", protocols.names())
def test_a_protocol_folder_has_the_five_files_and_each_holds_its_part(name):
    folder = os.path.dirname(importlib.import_module(f"medscope.protocols.{name}").__file__)
    assert [f for f in SHAPE if not os.path.exists(os.path.join(folder, f))] == []
    cls = protocols.protocol_class(name)
    assert cls.__module__ == f"medscope.protocols.{name}.protocol"
    options = importlib.import_module(f"medscope.protocols.{name}.options")
    declared = [c for _, c in inspect.getmembers(options, inspect.isclass)
                if issubclass(c, ProtocolOptions) and c is not ProtocolOptions and c.__module__ == options.__name__]
    assert declared == [protocols.options_class(cls)]
    for part in ("scoring", "report", "tables"):
        module = importlib.import_module(f"medscope.protocols.{name}.{part}")
        own = [f for _, f in inspect.getmembers(module) if (inspect.isfunction(f) or inspect.isclass(f))
               and getattr(f, "__module__", None) == module.__name__]
        own_values = [v for k, v in vars(module).items() if k.isupper()]
        assert own or own_values, f"{name}/{part}.py defines nothing of its own"
