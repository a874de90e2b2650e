"""Personalized differential privacy: one privacy budget per record (Li 2017, Ch. 5), with the
baselines of Jorgensen, Yu & Cormode 2015 and the weighting of Alaggan, Gambs & Kermarrec 2016.

=====================  ==============================================================================
where                  what
=====================  ==============================================================================
:mod:`.params`         the parameters of ``"personalized_histogram"``
                       (:class:`~.params.PersonalizedHistogramParams`), the public privacy vector
                       (:class:`~.params.PrivacyVector`) and the public plan
                       (:func:`~.params.release_plan`) that decides the charge
:mod:`.spec`           the mechanism: cost (the largest per-record loss of the plan), replace-one
                       neighbours, the records left out of the counts (:func:`~.spec.covered`),
                       public outputs
engine                 :mod:`dpwidgets.engine.personalized`: Minimum, Threshold, Sampling
                       (Jorgensen, Yu & Cormode 2015; Li 2017, Def. 5.1.1), privacy-aware and
                       utility-based partitioning (Li 2017, Alg. 10-11, eq. 5.2.3 and 5.2.6),
                       T rounds (§5.2.3), the inverse-variance ensemble (§5.2.4), the one-release
                       weighting (Alaggan, Gambs & Kermarrec 2016)
:mod:`.display`        the Bokeh figure: the privacy vector, the partitions, asked vs enjoyed
                       budgets, the histogram, the relative frequency error against ε_T
                       (Li 2017, Fig. 5.2-5.5)
:mod:`.widget`         :class:`~.widget.PersonalizedWidget`, with its controls (:mod:`.controls`),
                       its public data sets and table facts (:mod:`.sources`), the privacy
                       vector in force (:mod:`.vectors`), its text (:mod:`.text`) and the error
                       measure of its previews and teaching runs (:mod:`.preview`)
:mod:`.standins`       Li 2017, §5.3.1's privacy vectors, census-like count and logistic tasks,
                       the fair survey (Fair 1978), and the public stand-in of a table
                       ``[value, budget]`` (:func:`~.standins.personalized_stand_in`)
=====================  ==============================================================================

A release of ``"personalized_histogram"`` goes: the widget's controls and privacy vector →
:meth:`PersonalizedWidget.params <.widget.PersonalizedWidget.params>` → the door
(:meth:`dpwidgets.Session.release`) → :meth:`PersonalizedHistogramParams.validate
<.params.PersonalizedHistogramParams.validate>` (with the plan, :func:`~.params.release_plan`)
and the spec's cost, the plan's largest per-record loss, charged to the ledger →
:func:`dpwidgets.engine.personalized.personalized_histogram` on the records whose own budget
column covers what the plan gives them → the spec's public outputs
(:func:`~.spec.histogram_outputs`) → the display.
"""
