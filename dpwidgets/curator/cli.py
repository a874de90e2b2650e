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
    audit = cmds.add_parser("audit", help="export the audit log")
    audit.add_argument("--config", required=True)
    audit.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    args = parser.parse_args(argv)

    from .config import load_config

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
