"""The benchmark anchor: a stock python-epc 0.0.5 server, used as shipped.

epc.el's `epc:call-sync' talks to it exactly as a python-epc based backend
would. Methods: ``echo``, ``items`` (N small plists), ``emit`` (N events
pushed as one call each, as python-epc offers no batching).
"""

from __future__ import annotations

import threading

from epc.server import ThreadingEPCServer


def main() -> None:
    server = ThreadingEPCServer(("127.0.0.1", 0), log_traceback=True)

    def echo(*args):  # type: ignore[no-untyped-def]
        return args[0] if len(args) == 1 else list(args)

    def items(n):  # type: ignore[no-untyped-def]
        return [[":i", i, ":name", f"item-{i}", ":ok", True] for i in range(int(n))]

    def emit(n):  # type: ignore[no-untyped-def]
        handler = server.clients[-1]

        def push() -> None:
            for i in range(int(n)):
                handler.call("bench-event", [i])

        threading.Thread(target=push, daemon=True).start()
        return int(n)

    server.register_function(echo)
    server.register_function(items)
    server.register_function(emit)
    server.print_port()
    server.serve_forever()


if __name__ == "__main__":
    main()
