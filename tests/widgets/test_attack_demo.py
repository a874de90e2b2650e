"""AttackDemo, headless: the GPTT attack next to standard SVT; refused in analyst mode."""

from __future__ import annotations

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.widgets import AttackDemo


def small_histogram(domain: int = 512, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.permutation(rng.multinomial(3000, 1 / (np.arange(domain) + 7.0) ** 1.3
                                           / np.sum(1 / (np.arange(domain) + 7.0) ** 1.3)))


def test_attack_plots_true_vs_reconstructed_and_rates():
    s = Session(mode="teaching", seed=1)
    counts = small_histogram()
    s.add_dataset("hist", counts, total_epsilon=10.0)
    a = AttackDemo(s, dataset="hist", debounce=0)
    cells = a.figure.sources["cells"].data
    np.testing.assert_array_equal(cells["true"], counts[:128])
    assert len(cells["attack"]) == len(cells["svt"]) == 128
    rates = a.figure.sources["rates"].data
    assert rates["method"] == ["GPTT attack", "standard SVT"]
    gptt_all, svt_all = rates["overall"]
    # Chen 2018, Table 3.2: the attack recovers most cells; through a correct SVT it cannot.
    assert gptt_all > 0.8 and gptt_all > svt_all + 0.3
    assert s.spent("hist") == pytest.approx(0.5)
    a.epsilon.value = 1.0
    assert s.spent("hist") == pytest.approx(1.5)
    a.window.value = (100, 150)
    np.testing.assert_array_equal(a.figure.sources["cells"].data["x"], np.arange(100, 150))


def test_a_window_beyond_the_cells_is_refused_not_fitted():
    s = Session(mode="teaching", seed=1)
    s.add_dataset("hist", small_histogram(domain=512), total_epsilon=10.0)
    a = AttackDemo(s, dataset="hist", debounce=0)
    a.window.value = (500, 600)  # 512 cells: kept as typed, refused, the plot left as it was
    assert a.window.value == (500, 600)
    assert "Refused" in a.message.value and "cells shown: got 500-600" in a.message.value
    np.testing.assert_array_equal(a.figure.sources["cells"].data["x"], np.arange(128))
    spent = s.spent("hist")
    a.epsilon.value = 1.0  # nothing reruns while the window is wrong
    assert s.spent("hist") == spent and "cells shown" in a.message.value
    a.window.value = (400, 512)  # the ε held back now runs
    assert "Refused" not in a.message.value and s.spent("hist") == pytest.approx(spent + 1.0)
    np.testing.assert_array_equal(a.figure.sources["cells"].data["x"], np.arange(400, 512))


def test_attack_is_refused_in_analyst_mode(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("hist", small_histogram(), total_epsilon=1.0)
    a = AttackDemo(s, dataset="hist")
    assert "Refused in analyst mode" in a.banner.value
    assert a.release_button.disabled
    assert s.spent("hist") == 0.0


def test_default_is_the_attack_setup_not_the_first_dataset():
    """The lesson's session holds Zipf item scores first; attacking those would be meaningless."""
    s = Session(mode="teaching", seed=2)
    s.add_dataset("items", np.arange(1000, 0, -1), total_epsilon=10.0)
    a = AttackDemo(s, debounce=0)
    assert a.dataset == "zipf_histogram"
    small = a.figure.sources["rates"].data["small"]
    assert np.all(np.isfinite(small)) and small[0] > 0.9
