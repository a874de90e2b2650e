"""The curator's HTTP routes: one FastAPI ``APIRouter`` per concern, composed by
:func:`dpwidgets.curator.app.create_app` under the version prefix ``/v1``.

================================================  =============================================
:mod:`~dpwidgets.curator.routes.health`           ``GET /health``: is the service up (no token)
:mod:`~dpwidgets.curator.routes.datasets`         ``GET /datasets``, ``GET /datasets/{d}/stand_in``:
                                                  the public side of the data
:mod:`~dpwidgets.curator.routes.budget`           ``GET /budget``: the analyst's budgets and spends
:mod:`~dpwidgets.curator.routes.releases`         ``POST /cost``, ``POST /cached``,
                                                  ``POST /releases``, ``GET /releases/{b}/{key}``:
                                                  what a release costs, the release, its download
:mod:`~dpwidgets.curator.routes.audit`            ``GET /audit``: the audit log (the owner's only)
================================================  =============================================

What the routers share: :mod:`~dpwidgets.curator.routes.access` (who is asking, what they may
touch, every refusal audited), :mod:`~dpwidgets.curator.routes.checks` (a release request's
body, checked before anything is read or charged) and :mod:`~dpwidgets.curator.routes.errors`
(the app's exception handlers). No router holds state: each request reaches the
:class:`~dpwidgets.curator.door.Curator` through ``request.app.state.curator``
(:data:`~dpwidgets.curator.routes.access.Served`, a FastAPI dependency).
"""
