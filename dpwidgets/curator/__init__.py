"""The curator: the data owner's service that holds confidential tables where they live, their
budgets and an audit log, and answers analysts' release requests over HTTP.

Start one with ``dpwidgets curator serve --config curator.toml`` (see
:mod:`dpwidgets.curator.config` for the file); analysts connect with
``Session.connect(url, token=...)`` (:mod:`dpwidgets.curator.client`).
"""

from .config import CuratorConfig, load_config
from .door import Curator

__all__ = ["Curator", "CuratorConfig", "load_config"]
