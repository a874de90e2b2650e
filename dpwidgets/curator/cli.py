"""``dpwidgets curator ...``: the data owner's commands.

``serve``        start the curator (FastAPI on uvicorn) for a configuration file;
``add-analyst``  add an analyst with caps per dataset and print their token once;
``audit``        export the audit log (CSV or JSON lines).
"""

from __future__ import annotations

import argparse
import sys

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


def main(argv: list[str] | None = None) -> int:
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
    demo = cmds.add_parser("demo", help="write a demo table and config, add an analyst, serve")
    demo.add_argument("--dir", default="curator-demo", help="where (default: ./curator-demo)")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8765)
    audit = cmds.add_parser("audit", help="export the audit log")
    audit.add_argument("--config", required=True)
    audit.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    args = parser.parse_args(argv)

    from .config import load_config

    if args.command == "demo":
        args.config = str(_write_demo(args.dir))
        from .door import Analysts

        token = Analysts(load_config(args.config).analysts).add("demo", {"visits": 2.0})
        print(f"analyst 'demo', cap 2.0 on 'visits'; in a notebook:\n"
              f"  from dpwidgets import Session\n"
              f"  session = Session.connect('http://{args.host}:{args.port}', token='{token}')",
              flush=True)
    config = load_config(args.config)
    if args.command == "add-analyst":
        from .door import Analysts

        caps = _caps(args.cap)
        unknown = sorted(set(caps) - set(config.datasets))
        if unknown:
            raise SystemExit(f"--cap: unknown dataset(s) {unknown}; "
                             f"configured: {sorted(config.datasets)}")
        token = Analysts(config.analysts).add(args.name, caps, owner=args.owner)
        print(token)
        print(f"(the token of {args.name!r}: shown once, stored hashed in {config.analysts})",
              file=sys.stderr)
        return 0
    if args.command == "audit":
        from .door import AuditLog

        sys.stdout.write(AuditLog(config.audit).export(args.format))
        return 0
    import uvicorn

    from .app import create_app
    from .door import Curator

    print(f"dpwidgets curator on http://{args.host}:{args.port}/v1 "
          f"(datasets: {', '.join(config.datasets)})", file=sys.stderr, flush=True)
    uvicorn.run(create_app(Curator(config)), host=args.host, port=args.port,
                log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
