"""``GET /health``: whether the service answers, for a load balancer or a start-up script.

It needs no token and says nothing but ``{"status": "ok"}``: no dataset, analyst or budget.
"""

from __future__ import annotations

from fastapi import APIRouter

__all__ = ["router"]

router = APIRouter()


@router.get("/health")
def health():
    return {"status": "ok"}
