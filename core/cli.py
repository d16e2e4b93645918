"""`spark core serve`: run the inference core standalone so several terminals can share it."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.cli_support import CliError


def register(subparsers: argparse._SubParsersAction) -> None:
    core = subparsers.add_parser("core", help="the inference core")
    sub = core.add_subparsers(dest="core_command", required=True)
    serve = sub.add_parser("serve", help="run the core's websocket server in the foreground")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1; anything else needs a token)")
    serve.add_argument("--port", type=int, default=8765, help="port (0 = any free port)")
    serve.add_argument("--config", type=Path, default=None,
                       help="config TOML used instead of the user's config.toml")
    serve.add_argument("--project", type=Path, default=Path.cwd(),
                       help="project folder whose .spark.toml applies (default: cwd)")
    serve.add_argument("--record", type=Path, default=None, metavar="DIR",
                       help="record live answers as cassettes into DIR")
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    import asyncio
    import signal
    import sys

    from core.auth import is_loopback, load_or_create_token, token_file
    from core.engine import Engine
    from core.profiles import load_config
    from core.server import CoreServer

    if not 0 <= args.port <= 65535:
        raise CliError(f"--port must be 0..65535, got {args.port}")
    config = load_config(config_file=args.config, project_root=args.project)
    if args.record is not None:
        try:  # say so now, not at the first answer
            args.record.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CliError(f"--record {args.record}: cannot use it as a folder: "
                           f"{exc.strerror or exc}") from None
    token = None
    if not is_loopback(args.host):
        try:
            token = load_or_create_token()
        except OSError as exc:
            raise CliError(f"refusing to bind {args.host} without a token: cannot create the "
                           f"token file {token_file()}: {exc.strerror or exc}") from None
    from hwmodel.online import CalibrationStore

    engine = Engine(config, record_dir=args.record, calibration=CalibrationStore.default())

    async def main() -> None:
        server = CoreServer(engine, host=args.host, port=args.port, token=token)
        try:
            url = await server.start()
        except OSError as exc:
            raise CliError(f"cannot bind {args.host}:{args.port}: {exc.strerror or exc}") from None
        print(f"sparkstation core listening on {url}", file=sys.stderr, flush=True)
        print(f"profiles: {', '.join(config.profiles)}", file=sys.stderr, flush=True)
        if token:
            print(f"token required (stored in {token_file()}, mode 0600); clients send it "
                  "as 'Authorization: Bearer' or via $SPARK_CORE_TOKEN", file=sys.stderr)
        if args.record:
            print(f"recording live answers into {args.record}", file=sys.stderr)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):
                pass
        await stop.wait()
        await server.stop()

    asyncio.run(main())
    return 0
