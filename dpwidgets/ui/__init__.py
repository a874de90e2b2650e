"""The widget kit: what every family's widget is built from.

==================  ===========================================================================
module              what it holds
==================  ===========================================================================
:mod:`.base`        :class:`~.base.ReleaseWidget`: the Release button, the preview/teaching/
                    release branch, the guarantee banner, the error line, ``last_release``
:mod:`.controls`    the controls (the ε slider with its exact box, sliders that refuse instead
                    of clamping, the budget split), :func:`~.controls.control_for` (a control
                    from a parameter's declaration), the debouncer
:mod:`.figures`     what Bokeh figure builders share: :class:`~.figures.FigureHandle`,
                    :func:`~.figures.update` (a redraw replaces ``ColumnDataSource.data`` only)
:mod:`.bokeh_widget`  a Bokeh layout as one ipywidget, batched into one patch per redraw
:mod:`.accuracy`    the accuracy panel of the widgets that report one
:mod:`.meter`       :class:`~.meter.BudgetMeter`, the budget meter beside every widget
:mod:`.static`      where the front-end files are
==================  ===========================================================================

Nothing here knows an algorithm family: a family's widget (``dpwidgets/families/<family>/
widget.py``) composes these with its door and its display.
"""
