"""Encode the 10k-element reply as the backend does and time it (bench_reply.el).

Usage: ``reply_payload.py N SEXP-OUT JSON-OUT``. Writes the S-expression
payload the server sends for ``debug/big`` and the same data as JSON, then
prints one JSON object: the median milliseconds of building and encoding.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from tandem.server import framing


def _items(n: int) -> list[dict[str, object]]:
    # The same data as the server's debug/big handler.
    return [{"i": i, "name": f"item-{i}", "ok": True} for i in range(n)]


def _median_ms(fn: object, runs: int = 15) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def main() -> None:
    """Write both payloads and print the timings."""
    n, sexp_out, json_out = int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    items = _items(n)
    Path(sexp_out).write_bytes(framing.encode_payload(items))
    Path(json_out).write_text(json.dumps(items), encoding="utf-8")
    print(json.dumps({
        "build_ms": _median_ms(lambda: _items(n)),
        "encode_ms": _median_ms(lambda: framing.encode_payload(items)),
        "json_encode_ms": _median_ms(lambda: json.dumps(items).encode("utf-8")),
    }))


if __name__ == "__main__":
    main()
