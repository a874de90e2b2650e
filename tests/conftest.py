"""Fixtures shared across the test tree."""

from __future__ import annotations

import os

import pytest

# No progress bars in test logs, nor in the notebooks the tests execute (their kernels inherit
# this environment); tests/test_progress.py sets it as it needs.
os.environ.setdefault("DPWIDGETS_PROGRESS", "0")


@pytest.fixture(autouse=True)
def close_new_widgets():
    """Close the widgets a test made, so the leak checks of later tests (which serialize every
    live widget) scan only their own. For every test: a module that forgets it otherwise
    leaves widgets whose public numbers a later leak check may match by chance."""
    from ipywidgets.widgets.widget import _instances

    before = set(_instances)
    yield
    for key in set(_instances) - before:
        widget = _instances.get(key)
        if widget is not None:
            widget.close()
            # jupyter_bokeh's BokehModel.close is not idempotent (its __del__ closes again and
            # raises): closed once is enough.
            widget.close = lambda: None
