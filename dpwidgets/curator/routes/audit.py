"""``GET /audit``: the audit log, for the data owner only.

Every release, replay and refusal the curator answered
(:class:`~dpwidgets.curator.door.AuditLog`), as JSON lines or as CSV that opens safely in a
spreadsheet. An analyst's token is refused (403, itself audited): the log names every analyst
and what they asked.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from .access import Auth, Served, analyst, deny

__all__ = ["router"]

router = APIRouter()


@router.get("/audit")
def audit(curator: Served, format: str = "jsonl", authorization: Auth = None):
    who, record, _ = analyst(curator, authorization)
    if record.get("role") != "owner":
        deny(curator, 403, "the audit log is the data owner's", who=who)
    if format not in ("csv", "jsonl"):
        deny(curator, 400, "format: 'csv' or 'jsonl'", who=who)
    return PlainTextResponse(curator.audit.export(format),
                             media_type="text/csv" if format == "csv" else "text/plain")
