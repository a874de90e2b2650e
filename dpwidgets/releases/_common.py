"""The helper the family specs once shared from here; it is
:func:`dpwidgets.mechanism.publisher_is_private` now (kept importable for old code)."""

from __future__ import annotations

from ..mechanism import publisher_is_private

__all__ = ["publisher_is_private"]
