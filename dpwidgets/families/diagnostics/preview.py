"""Analyst mode before spending: the free preview of a diagnostic on the dataset's public
stand-in, and the previews that estimate the accuracy of a release (:mod:`dpwidgets.ui.accuracy`).

Everything here runs on the stand-in (public, same public size as the data) through
``session.preview``: nothing is charged and nothing confidential is read. A DP fit is previewed
too, on the stand-in, so that the preview shows the model a release would diagnose.
"""

from __future__ import annotations

import numpy as np

from ...mechanism import Release
from ...ui.text import fmt

__all__ = ["DiagnosticPreview"]


class DiagnosticPreview:
    """Mixin of the diagnostics widgets (:class:`~dpwidgets.families.diagnostics.base.DiagnosticWidget`): the analyst's
    preview and the accuracy runs. Uses the widget's ``session``, ``dataset``, controls and
    its hooks ``_spec``, ``_truth_of``, ``_draw`` and ``_stats``."""

    def _preview_model(self) -> dict:
        """The model a preview diagnoses: the ordinary fit, or a DP fit previewed on the
        stand-in (once per fit parameters)."""
        if self.model.value == "ordinary":
            return {"model": "ordinary"}
        params = self.fit_params()
        key = repr(sorted((k, repr(v)) for k, v in params.items()))
        if key not in self._preview_fits:
            fitted = self.session.preview(self.dataset, "fit_model", rng=self._rng, **params).result
            self._preview_fits[key] = {"model": "public", "coef": np.asarray(fitted.coef),
                                       "intercept": float(fitted.intercept)}
        return self._preview_fits[key]

    def draw_preview(self) -> None:
        model = self._preview_model()
        output = self._preview_run(self.mechanism, **self._spec(model)).output
        truth = self._truth_of(self.session.stand_in(self.dataset), model)
        self.draw_output(output, truth, where="preview")
        self._stats(output, where="preview")
        fit_note = ""
        if self.model.value == "dp":
            fit_params = self.fit_params()
            if not self.session.is_cached(self.dataset, "fit_model", **fit_params):
                fit_cost = self.session.cost(self.dataset, "fit_model", **fit_params)
                fit_note = f" + ε = {fmt(fit_cost)} for the DP fit"
        # What the door charges (ε times a person's rows on a user-level table), as the button.
        own = self.session.cost(self.dataset, self.mechanism, **self._spec({"model": "ordinary"}))
        self.status.value = (
            "<span class='dpw-preview'>PREVIEW on the public stand-in (same size) — nothing "
            f"spent. Release would charge ε = {fmt(own)}{fit_note} "
            "(nothing for what was already released).</span>"
        )

    # -- accuracy before spending -----------------------------------------------------------
    def _preview_with_fit(self, params: dict, epsilon: float, rng: np.random.Generator) -> Release:
        """One preview of what a release at ``epsilon`` would draw. With a DP fit the fit is
        previewed too, at its ε scaled like the plot's: :meth:`cost` adds the two, so the rest
        of the budget buys both in the same proportion (and the fit's noise is part of the
        spread)."""
        model: dict = {"model": "ordinary"}
        if self.model.value == "dp":
            fit = self.fit_params()
            fit["epsilon"] *= epsilon / float(params["epsilon"])
            fitted = self.session.preview(self.dataset, "fit_model", rng=rng, **fit).result
            model = {"model": "public", "coef": np.asarray(fitted.coef),
                     "intercept": float(fitted.intercept)}
        return self.session.preview(self.dataset, self.mechanism, rng=rng,
                                    **{**params, "epsilon": epsilon, "outcome": self.outcome,
                                       **model})

    def _accuracy_truth(self):
        """The stand-in's own, noiseless reference with the ordinary fit (what the private
        pipeline estimates; public)."""
        return self._truth_of(self.session.stand_in(self.dataset), {"model": "ordinary"})
