"""`python -m courtier.simweb serve|audit ...`: the `courtier simweb` command on its own.

The subprocess helper starts the server this way, so a simulated web never depends on the
rest of the command line importing cleanly.
"""

import argparse
import logging
import sys

from courtier.cli import simweb


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m courtier.simweb")
    simweb.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["simweb", *sys.argv[1:]])
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return int(args.handler(args))


sys.exit(main())
