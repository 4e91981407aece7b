"""The I/O modules moved into ``medscope.io``: the 0.1 names still resolve for one release, with a
DeprecationWarning, to the very same module objects (so an outside protocol written for 0.1 runs)."""

import warnings

import pytest

import medscope
from medscope.io import guarded, layout, records, storage


@pytest.mark.parametrize("old, module", [("records", records), ("layout", layout), ("storage", storage),
                                         ("safe_io", guarded)])
def test_old_name_warns_and_is_the_moved_module(old, module):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = getattr(medscope, old)
    assert got is module
    assert [w.category for w in caught] == [DeprecationWarning]
    assert f"medscope.{old} moved to {module.__name__}" in str(caught[0].message)


def test_from_import_of_an_old_name_works():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from medscope import records as old_records  # noqa: PLC0415
    assert old_records is records


def test_a_name_never_there_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'bounded_io'"):
        medscope.bounded_io  # noqa: B018


@pytest.mark.parametrize("module, old, new", [
    ("medscope.io.bounded", "Reject", "InputRejected"), ("medscope.cohorts.common", "Reject", "InputRejected"),
    ("medscope.io.records", "reject", "reject_row")])
def test_renamed_names_warn_and_are_the_new_ones(module, old, new):
    import importlib

    mod = importlib.import_module(module)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = getattr(mod, old)
    assert got is getattr(mod, new)
    assert [w.category for w in caught] == [DeprecationWarning] and f"is now {new}" in str(caught[0].message)
