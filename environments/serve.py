"""The one launcher of a task's mock services, whichever domain hosts them:

    python -m environments.serve --services a,b [--host H] [--port P] [--fixtures DIR] [--ready-file F]

asks the domain registry which domain hosts every named service and runs that domain's
launcher with the same arguments (each speaks one protocol: ``{"url", "port", "pid"}`` in
the ready file once listening, ``GET /healthz``). Services no one domain hosts → exit 2 with
one ``error:`` line, as the domains' launchers answer bad arguments. Who starts services
(the runner's :class:`~environments.service_group.ServiceGroup`, ``ClawServer``) spawns
this module, so no one outside the registry picks a domain.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from environments.domain_registry import UnknownServices, domain_for


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m environments.serve", add_help=False)
    parser.add_argument("--services", required=True)
    known, _ = parser.parse_known_args(args)
    services = [s.strip() for s in known.services.split(",") if s.strip()]
    try:
        domain = domain_for(services)
    except UnknownServices as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return importlib.import_module(domain.serve_module).main(args)


if __name__ == "__main__":
    raise SystemExit(main())
