"""``dpwidgets curator ...``: the data owner's commands.

``serve``        start the curator (FastAPI on uvicorn) for a configuration file;
``add-analyst``  add an analyst with caps per dataset (and an expiry) and print their token once;
``revoke``       revoke an analyst's token (a running curator refuses it at once);
``audit``        export the audit log (CSV or JSON lines).
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import re
import sys
import time

__all__ = ["main"]


def _caps(items: list[str]) -> dict[str, float]:
    caps = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--cap takes DATASET=EPSILON, got {item!r}")
        try:
            caps[name] = float(value)
        except ValueError:
            raise SystemExit(f"--cap {item!r}: EPSILON must be a number") from None
        if not caps[name] > 0:
            raise SystemExit(f"--cap {item!r}: EPSILON must be > 0")
    return caps


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _expires(text: str, now: float | None = None) -> float:
    """``--expires``: an ISO 8601 date or time (UTC unless it says otherwise), or a duration
    from now (``30d``, ``12h``, ``90m``, ``3600s``, ``2w``, or ISO 8601 ``P30D``, ``PT12H``);
    the POSIX time the token stops working, which must be in the future."""
    now = time.time() if now is None else now
    text = text.strip()
    short = re.fullmatch(r"(\d+(?:\.\d+)?)([smhdw])", text)
    iso = re.fullmatch(r"P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?",
                       text)
    if short:
        when = now + float(short.group(1)) * _UNITS[short.group(2)]
    elif iso and text not in ("P", "PT") and not text.endswith("T"):
        w, d, h, m, sec = (int(g or 0) for g in iso.groups())
        when = now + (((w * 7 + d) * 24 + h) * 60 + m) * 60 + sec
    else:
        try:
            parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise SystemExit(f"--expires {text!r}: give an ISO 8601 date or time "
                             f"(2027-01-31, 2027-01-31T18:00Z) or a duration (30d, 12h, "
                             f"P30D)") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=datetime.UTC)
        when = parsed.timestamp()
    if not when > now:
        raise SystemExit(f"--expires {text!r}: the expiry must be in the future")
    return when


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


DEMO_CONFIG = """\
[curator]
ledger = "ledger.sqlite"

[datasets.visits]
source = "visits.parquet"
description = "web visits: 3,000 people with 1-20 visits each (generated)"
unit = "person"
max_rows = 4
total_epsilon = 4.0
mechanisms = ["top_c", "svt", "laplace_stream", "pegasus", "dpcopula"]
columns.page = { kind = "int", domain = [0, 49] }
columns.day = { kind = "int", domain = [0, 89] }
columns.device = { kind = "category", domain = ["phone", "desktop", "tablet"] }
views.pages = { kind = "counts", columns = ["page"], facts = { monotonic = true } }
views.daily = { kind = "per_step", columns = ["day"] }
views.table = { kind = "rows", columns = ["page", "day", "device"], rows = 5000 }
"""


def _write_demo(folder: str):
    """A generated visits table with repeated people and its curator configuration (kept if
    they exist: the ledger and the analysts of an earlier demo stay)."""
    from pathlib import Path

    import numpy as np
    import pandas as pd

    home = Path(folder).expanduser().resolve()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "visits.parquet").exists():
        rng = np.random.default_rng(11)
        rows = rng.integers(1, 21, 3_000)
        n = int(rows.sum())
        popularity = 1.0 / np.arange(1, 51)
        pd.DataFrame({
            "person": np.repeat(np.arange(rows.size), rows),
            "page": rng.choice(50, n, p=popularity / popularity.sum()),
            "day": rng.integers(0, 90, n),
            "device": rng.choice(["phone", "desktop", "tablet"], n, p=[0.6, 0.3, 0.1]),
        }).to_parquet(home / "visits.parquet")
    config = home / "curator.toml"
    if not config.exists():
        config.write_text(DEMO_CONFIG)
    return config


def _parser() -> argparse.ArgumentParser:
    """``dpwidgets curator <command> ...``: the commands and their options."""
    parser = argparse.ArgumentParser(prog="dpwidgets")
    sub = parser.add_subparsers(dest="group", required=True)
    cur = sub.add_parser("curator", help="the data owner's curator service")
    cmds = cur.add_subparsers(dest="command", required=True)
    serve = cmds.add_parser("serve", help="serve the curator over HTTP")
    serve.add_argument("--config", required=True)
    serve.add_argument("--host", default="127.0.0.1",
                       help="bind address (default: loopback; put TLS in front with a proxy)")
    serve.add_argument("--port", type=int, default=8765)
    add = cmds.add_parser("add-analyst", help="add an analyst and print their token once")
    add.add_argument("name")
    add.add_argument("--config", required=True)
    add.add_argument("--cap", action="append", default=[], metavar="DATASET=EPSILON",
                     help="the analyst's own cap on a dataset (repeat per dataset)")
    add.add_argument("--owner", action="store_true", help="may export the audit log")
    add.add_argument("--expires", metavar="DATE|DURATION",
                     help="when the token stops working: an ISO 8601 date or time (UTC), or a "
                          "duration from now (30d, 12h, P30D)")
    rev = cmds.add_parser("revoke", help="revoke an analyst's token (takes effect at once)")
    rev.add_argument("name")
    rev.add_argument("--config", required=True)
    demo = cmds.add_parser("demo", help="write a demo table and config, add an analyst, serve")
    demo.add_argument("--dir", default="curator-demo", help="where (default: ./curator-demo)")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8765)
    audit = cmds.add_parser("audit", help="export the audit log")
    audit.add_argument("--config", required=True)
    audit.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    return parser


def _demo(args) -> None:
    """``demo``: write the demo table and configuration, add the analyst ``demo`` and say how
    to connect (``serve`` follows)."""
    from .config import load_config
    from .door import Analysts

    args.config = str(_write_demo(args.dir))
    token = Analysts(load_config(args.config).analysts).add("demo", {"visits": 2.0})
    print(f"analyst 'demo', cap 2.0 on 'visits'; in a notebook:\n"
          f"  from dpwidgets import Session\n"
          f"  session = Session.connect('http://{args.host}:{args.port}', token='{token}')",
          flush=True)


def _add_analyst(args, config) -> int:
    from .door import Analysts

    caps = _caps(args.cap)
    unknown = sorted(set(caps) - set(config.datasets))
    if unknown:
        raise SystemExit(f"--cap: unknown dataset(s) {unknown}; "
                         f"configured: {sorted(config.datasets)}")
    expires = None if args.expires is None else _expires(args.expires)
    token = Analysts(config.analysts).add(args.name, caps, owner=args.owner, expires=expires)
    print(token)
    until = ("" if expires is None else ", valid until " + datetime.datetime.fromtimestamp(
        expires, datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"))
    print(f"(the token of {args.name!r}: shown once, stored hashed in {config.analysts}"
          f"{until})", file=sys.stderr)
    return 0


def _revoke(args, config) -> int:
    from .door import Analysts

    try:
        Analysts(config.analysts).revoke(args.name)
    except KeyError:
        raise SystemExit(f"revoke: no analyst named {args.name!r} in "
                         f"{config.analysts}") from None
    print(f"revoked the token of {args.name!r} (a running curator refuses it from its next "
          f"request; their releases and spends stay in the ledger)", file=sys.stderr)
    return 0


def _audit(args, config) -> int:
    from .door import AuditLog

    sys.stdout.write(AuditLog(config.audit).export(args.format))
    return 0


def _serve(args, config) -> int:
    import uvicorn

    from .app import create_app
    from .door import Curator

    if not _loopback(args.host):
        print(f"WARNING: serving on {args.host}, not the loopback. The curator speaks plain "
              f"HTTP: bearer tokens and releases cross the network in clear. Terminate TLS in "
              f"front of it (a reverse proxy: nginx, Caddy, a cloud load balancer) and do not "
              f"expose this port itself; bind to 127.0.0.1 behind the proxy where you can.",
              file=sys.stderr, flush=True)
    print(f"dpwidgets curator on http://{args.host}:{args.port}/v1 "
          f"(datasets: {', '.join(config.datasets)})", file=sys.stderr, flush=True)
    uvicorn.run(create_app(Curator(config)), host=args.host, port=args.port,
                log_level="warning")
    return 0


_COMMANDS = {"add-analyst": _add_analyst, "revoke": _revoke, "audit": _audit,
             "serve": _serve, "demo": _serve}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    from .config import load_config

    if args.command == "demo":
        _demo(args)
    config = load_config(args.config)
    return _COMMANDS[args.command](args, config)


if __name__ == "__main__":
    sys.exit(main())
