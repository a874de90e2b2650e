"""The public side of the data: what an analyst may know without spending anything.

``GET /datasets`` describes each dataset the analyst holds a cap on -- the owner's declarations
(schema, domains, the privacy unit, facts; never a row count the owner did not declare), the
budget it is charged to and the mechanisms allowed on it. ``GET /datasets/{dataset}/stand_in``
sends the stand-in generated from the public schema (a NumPy ``.npy`` file, no pickles), for
previews on the analyst's side. Neither reads the data nor charges the budget.
"""

from __future__ import annotations

import io

import numpy as np
from fastapi import APIRouter
from fastapi.responses import Response

from ...session import Session
from ..door import Curator
from .access import Auth, Served, analyst, held_dataset

__all__ = ["describe", "router"]

router = APIRouter()


def describe(curator: Curator, door: Session, name: str) -> dict:
    """A dataset's public description, with its budget and allowed mechanisms."""
    ds, _ = curator.config.view(name)
    return {**door.describe(name).as_json(), "budget": ds.name,
            "mechanisms": sorted(ds.mechanisms)}


@router.get("/datasets")
def datasets(curator: Served, authorization: Auth = None):
    who, _, door = analyst(curator, authorization)
    return {"analyst": who, "datasets": [describe(curator, door, n) for n in door.datasets]}


@router.get("/datasets/{dataset:path}/stand_in")
def stand_in(dataset: str, curator: Served, authorization: Auth = None):
    who, _, door = analyst(curator, authorization)
    name = held_dataset(curator, door, who, dataset)
    buf = io.BytesIO()
    np.save(buf, door.stand_in(name), allow_pickle=False)
    return Response(buf.getvalue(), media_type="application/octet-stream")
