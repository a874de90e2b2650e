"""What a new user meets on a fresh clone (issue 22, items 4-6): stand-ins on the table's
scale, budget numbers without float dust, one name per meaning, one argument order, named
missing parameters, and refusals that name the dataset asked for."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpwidgets import Session
from dpwidgets.curator.client import RemoteSession
from dpwidgets.engine.budget import BudgetExceededError
from dpwidgets.engine.errors import ParameterError
from dpwidgets.mechanism import MECHANISMS, is_builtin
from tests import test_session_fuzz as fuzz

ROWS = 20_000
COLUMNS = {"page": {"kind": "int", "domain": [0, 49]}, "day": {"kind": "int", "domain": [0, 29]}}


def _frame(seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"uid": rng.integers(0, 5_000, ROWS), "page": rng.integers(0, 50, ROWS),
                         "day": rng.integers(0, 30, ROWS)})


# -- 4. stand-ins on the owner's scale -------------------------------------------------------
def test_an_undeclared_total_keeps_the_documented_default_scale():
    s = Session()
    s.add_table("visits", _frame(), columns=COLUMNS, unit_column="uid", items="page")
    # About 1,000,000 records (Zipf; documented): the scale a user must override.
    assert abs(s.stand_in("visits/items").sum() - 1_000_000) <= 50


@pytest.mark.parametrize("how", ["totals", "views", "rows"])
def test_a_declared_public_total_sets_the_stand_ins_scale(how):
    s = Session()
    if how == "totals":
        s.add_table("visits", _frame(), columns=COLUMNS, unit_column="uid", items="page",
                    time="day", totals={"items": ROWS, "stream": ROWS})
        names = ["visits/items", "visits/stream"]
    elif how == "views":
        s.add_table("visits", _frame(), columns=COLUMNS, unit_column="uid",
                    views={"items": {"kind": "counts", "columns": ["page"], "total": ROWS},
                           "grid": {"kind": "counts2d", "columns": ["day", "page"],
                                    "total": ROWS}})
        names = ["visits/items", "visits/grid"]
    else:  # the owner's declared row count scales every counting view
        s.add_table("visits", _frame(), columns=COLUMNS, unit_column="uid", items="page",
                    time="day", rows=ROWS)
        names = ["visits/items", "visits/stream"]
    for name in names:
        stand_in = s.stand_in(name)
        assert stand_in.sum() == ROWS, name  # exactly: whole counts apportioned to the total
        assert np.all(stand_in >= 0) and np.all(stand_in == np.round(stand_in))


def test_the_stand_in_is_built_from_the_declaration_never_from_the_data():
    a, b = Session(), Session()
    a.add_table("t", _frame(1), columns=COLUMNS, unit_column="uid", items="page",
                totals={"items": ROWS})
    other = _frame(2).iloc[: ROWS // 3]  # other rows, another size: the same declaration
    b.add_table("t", other, columns=COLUMNS, unit_column="uid", items="page",
                totals={"items": ROWS})
    np.testing.assert_array_equal(a.stand_in("t/items"), b.stand_in("t/items"))


@pytest.mark.parametrize("bad", [0, -5, 2.5, "20000", True])
def test_a_bad_total_is_refused_when_declared(bad):
    s = Session()
    with pytest.raises(ValueError, match="total"):
        s.add_table("t", _frame(), columns=COLUMNS, unit_column="uid", items="page",
                    totals={"items": bad})
    with pytest.raises(ValueError, match="totals: no view named 'pages'"):
        s.add_table("t", _frame(), columns=COLUMNS, unit_column="uid", items="page",
                    totals={"pages": ROWS})
    assert s.datasets == []


# -- 5. numbers without float dust -----------------------------------------------------------
def test_remaining_and_spent_carry_no_float_dust(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("x", np.arange(100.0), total_epsilon=1.0)
    s.release("x", "svt", epsilon=0.1, c=1, threshold=50.0)
    s.release("x", "svt", epsilon=0.2, c=1, threshold=60.0)
    assert s.spent("x") == 0.3  # 0.1 + 0.2 is 0.30000000000000004 in floats
    s.release("x", "svt", epsilon=0.5, c=1, threshold=70.0)
    assert s.spent("x") == 0.8
    assert s.remaining("x") == 0.2  # 1 - 0.8 is 0.19999999999999996 in floats
    # The cap check stays exact: a hair over what is left is refused, exactly it passes.
    with pytest.raises(BudgetExceededError):
        s.release("x", "svt", epsilon=0.2 + 1e-6, c=1, threshold=80.0)
    s.release("x", "svt", epsilon=s.remaining("x"), c=1, threshold=80.0)
    assert s.remaining("x") == 0.0
    with pytest.raises(BudgetExceededError):
        s.release("x", "svt", epsilon=1e-6, c=1, threshold=90.0)


# -- 6. names and flow -----------------------------------------------------------------------
def test_privacy_unit_and_unit_column_are_two_names(tmp_path):
    s = Session()
    s.add_dataset("people", np.arange(50.0), privacy_unit="person")
    assert s.unit("people") == "person"
    names = s.add_table("t", _frame(), columns=COLUMNS, unit_column="uid", max_rows=4,
                        items="page")
    assert s.unit(names[0]) == "person" and s._dataset(names[0]).unit_rows == 4


def test_the_old_unit_spelling_still_works_and_says_what_to_write():
    s = Session()
    with pytest.warns(DeprecationWarning, match="privacy_unit='person'"):
        s.add_dataset("people", np.arange(50.0), unit="person")
    assert s.unit("people") == "person"
    with pytest.warns(DeprecationWarning, match="unit_column='uid'"):
        names = s.add_table("t", _frame(), columns=COLUMNS, unit="uid", max_rows=4, items="page")
    assert s._dataset(names[0]).unit_rows == 4
    with pytest.raises(ValueError, match="not both"):
        s.add_table("u", _frame(), columns=COLUMNS, unit="uid", unit_column="uid", items="page")


def test_cost_takes_the_dataset_first_like_release():
    s = Session()
    s.add_dataset("x", np.arange(100.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new order warns about nothing
        new = s.cost("x", "svt", epsilon=0.3, c=2, threshold=50.0)
        assert s.cost(None, "svt", epsilon=0.3, c=2, threshold=50.0) == new
        assert s.cost(dataset="x", mechanism="svt", epsilon=0.3, c=2, threshold=50.0) == new
    assert new == pytest.approx(0.3)
    with pytest.warns(DeprecationWarning, match=r"write cost\('x', 'svt'"):
        assert s.cost("svt", "x", epsilon=0.3, c=2, threshold=50.0) == new
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert s.cost("svt", epsilon=0.3, c=2, threshold=50.0) == new  # dataset defaulted


def test_a_name_that_is_both_a_dataset_and_a_mechanism_is_refused_in_cost():
    s = Session()
    s.add_dataset("svt", np.arange(100.0))
    s.add_dataset("x", np.arange(100.0))
    with pytest.raises(ParameterError, match="ambiguous"):
        s.cost("svt", "x", epsilon=0.3, c=2, threshold=50.0)
    # The second argument a mechanism and no dataset: the new order, unambiguous.
    assert s.cost("svt", "top_c", epsilon=0.3, c=2) == pytest.approx(0.3)


def test_the_curators_session_answers_cost_in_the_one_order(tmp_path):
    """A curator's session computes costs in its local catalogue (a Session holding the
    curator's public declarations): the same order and the same deprecation as Session."""
    remote = object.__new__(RemoteSession)  # its catalogue only: no curator to reach
    remote._catalogue = Session("analyst", str(tmp_path / "l.sqlite"))
    remote._catalogue.add_dataset("x", np.arange(100.0), stand_in=np.ones(100))
    assert remote.cost("x", "svt", epsilon=0.3, c=2, threshold=50.0) == pytest.approx(0.3)
    with pytest.warns(DeprecationWarning, match=r"write cost\('x', 'svt'"):
        assert remote.cost("svt", "x", epsilon=0.3, c=2, threshold=50.0) == pytest.approx(0.3)


def _base_params():
    return {name: fuzz.BASE[name] for name in MECHANISMS
            if is_builtin(name) and name in fuzz.BASE}


def test_every_builtin_mechanism_is_covered():
    missing = sorted(n for n in MECHANISMS if is_builtin(n) and n not in fuzz.BASE
                     and n not in fuzz.SKIP)
    assert not missing


@pytest.mark.parametrize("mechanism", sorted(_base_params()))
def test_a_missing_required_parameter_is_a_parameter_error_naming_it(tmp_path, mechanism):
    """Drop each parameter of a valid request: either it has a default (the cost is still
    computed) or the refusal is a ParameterError naming it -- never a bare KeyError."""
    s = fuzz.session(tmp_path / "l.sqlite")
    dataset, base = fuzz.BASE[mechanism]
    for key in base:
        params = {k: v for k, v in base.items() if k != key}
        try:
            s.cost(dataset, mechanism, **params)
        except ParameterError as exc:
            assert f"{key}=" in str(exc), (mechanism, key, str(exc))


def test_svt_without_a_threshold_names_it():
    s = Session()
    s.add_dataset("x", np.arange(100.0))
    with pytest.raises(ParameterError, match="threshold="):
        s.release("x", "svt", epsilon=1, c=2)


def test_an_over_budget_refusal_names_the_view_asked_for(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_table("visits", _frame(), columns=COLUMNS, unit_column="uid", max_rows=2,
                items="page", total_epsilon=0.5)
    with pytest.raises(BudgetExceededError) as info:
        s.release("visits/items", "top_c", epsilon=0.5, c=2)  # 2 x 0.5 > 0.5
    assert "'visits/items'" in str(info.value) and info.value.asked == "visits/items"
    assert "'visits/items'" in s.last_refusal
    with pytest.raises(BudgetExceededError, match="'visits/items'"):
        s.check_budget("visits/items", 1.0, "a group")


def test_a_curators_view_declares_its_total_in_the_config(tmp_path):
    from dpwidgets.curator.config import load_config

    _frame().to_csv(tmp_path / "visits.csv", index=False)
    (tmp_path / "curator.toml").write_text(
        '[datasets.visits]\nsource = "visits.csv"\nunit = "uid"\nmax_rows = 4\n'
        'total_epsilon = 2.0\ncolumns.page = { kind = "int", domain = [0, 49] }\n'
        f'views.pages = {{ kind = "counts", columns = ["page"], total = {ROWS} }}\n'
        'views.other = { kind = "counts", columns = ["page"] }\n')
    views = load_config(tmp_path / "curator.toml").datasets["visits"].views
    assert views["pages"].stand_in.sum() == ROWS
    assert abs(views["other"].stand_in.sum() - 1_000_000) <= 50  # undeclared: the default


def test_a_curators_over_budget_refusal_names_the_view_asked_for(tmp_path):
    from tests.curator.conftest import Server, write_curator

    path, tokens = write_curator(tmp_path)
    server = Server(path).start()
    try:
        s = Session.connect(server.url, token=tokens["alice"])
        with pytest.raises(BudgetExceededError) as info:
            s.release("visits/pages", "top_c", epsilon=1.0, c=3)
        assert "'visits/pages'" in str(info.value) and "'visits/pages'" in s.last_refusal
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the one order, inherited: no warning
            assert s.cost("visits/pages", "top_c", epsilon=0.05, c=3) > 0
        s.close()
    finally:
        server.stop()


def test_a_tables_declaration_is_its_public_call_never_its_data():
    s = Session()
    frame = _frame()
    s.add_table("visits", frame, columns=COLUMNS, unit_column="uid", max_rows=4, items="page",
                totals={"items": ROWS})
    text = s.declaration("visits/items")
    assert text.splitlines()[-1].startswith("session.add_table('visits', frame, columns=")
    assert "unit_column='uid'" in text and "max_rows=4" in text and "totals={'items': 20000}" in text
    assert "4999" not in text  # no value of the data (uid runs to 4,999)
    s.add_dataset("x", np.arange(5.0))
    assert s.declaration("x") is None  # add_dataset's data is the user's to add
