"""Streaming into a real ``emacs -nw`` under tmux: the view against a markdown-mode buffer.

Each run starts an interactive Emacs in a detached tmux session of its own
(private server socket, 200x50) with ``bench/tty_stream_driver.el``, which
streams a ~200 KB Markdown answer with code blocks (111-character deltas,
200 a second) into

* ``tandem``: the session buffer through the real path (a real backend,
  the fake OpenAI server streaming, the client's dispatch, the view), or
* ``tandem-x4``: four sessions (four projects, one backend) streaming the
  same answer at once, each session buffer in a window of its own (2x2)
  above the overview buffer, which follows their states; its figures are
  set beside ``tandem``'s of the same run (CPU seconds as a ratio, ≤ 4×), or
* ``anchor``: a ``markdown-mode`` buffer the same chunks are appended to at
  the same rate, shown the same way (the naive client).

While it runs, this harness sends ``<f5>`` through a tmux control client
every 40 ms and Emacs notes when each was handled (its command runs before
redisplay): the input latency is handled-minus-sent. Emacs also reports its
CPU (utime+stime from /proc/self/stat) from the first chunk to one second
after the last (the settle included) and the gaps of a 10 ms timer (the
longest one, minus 10 ms, is the longest stall). Modes alternate; each
figure is the median over RUNS runs of each.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("BENCH_TTY_RUNS", "3"))
KEY_PERIOD = 0.04
MODES = tuple(os.environ.get("BENCH_TTY_MODES",
                             "tandem,anchor,tandem-markdown-mode,idle").split(","))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _emit(bench: str, value: float, unit: str, anchor: str, anchor_value: float | None,
          target: float | None, **extra: Any) -> None:
    print(json.dumps({"bench": bench, "value": round(value, 3), "unit": unit, "anchor": anchor,
                      "anchor_value": None if anchor_value is None else round(anchor_value, 3),
                      "target": target, **extra}), flush=True)


def _compile(out: Path) -> None:
    """Byte-compile the package and the driver into OUT (measure compiled code)."""
    for f in list((ROOT / "elisp").glob("*.el")) + [ROOT / "bench" / "tty_stream_driver.el"]:
        if f.name != "tandem-autoloads.el":
            shutil.copy(f, out / f.name)
    subprocess.run(["emacs", "--batch", "--no-init-file", "-L", str(out), "-L",
                    str(ROOT / "tests" / "elisp"), "-f", "batch-byte-compile",
                    *sorted(str(p) for p in out.glob("*.el"))],
                   check=True, capture_output=True, cwd=out)


def _percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


class _Keys:
    """A tmux control client that sends <f5> to a session at a steady rate."""

    def __init__(self, sock: str, target: str) -> None:
        self.proc = subprocess.Popen(["tmux", "-L", sock, "-C", "attach", "-t", "ctl"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.target = target
        self.sent: list[float] = []
        self._stop = threading.Event()
        # Drain the control client's output, or it blocks once the pipe fills.
        threading.Thread(target=self._drain, daemon=True).start()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        assert self.proc.stdout
        while self.proc.stdout.read(4096):
            pass

    def _run(self) -> None:
        assert self.proc.stdin
        line = f"send-keys -t {self.target} F5\n".encode()
        tick = time.time()
        while not self._stop.is_set():
            self.sent.append(time.time())
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
            tick += KEY_PERIOD
            self._stop.wait(max(0.0, tick - time.time()))

    def stop(self) -> list[float]:
        self._stop.set()
        self._thread.join()
        self.proc.kill()
        self.proc.wait()
        return self.sent


def _screen(sock: str) -> str:
    """What the bench session's window shows (for an error message)."""
    return subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "bench"],
                          capture_output=True, text=True).stdout


def _run(mode: str, elc: Path, work: Path) -> dict[str, Any]:
    """One run of MODE; return the driver's report with the keys' send times."""
    sock = f"tandem-bench-{os.getpid()}-{mode}"
    out, ready = work / f"{mode}.json", work / f"{mode}.ready"
    for f in (out, ready):
        f.unlink(missing_ok=True)
    md = sorted(Path("/usr/share/emacs/site-lisp/elpa").glob("markdown-mode-*"))
    env = {"BENCH_TTY_MODE": mode, "BENCH_TTY_OUT": str(out), "BENCH_TTY_READY": str(ready),
           "BENCH_TTY_PYTHON": str(ROOT / ".venv" / "bin" / "python"),
           "PYTHONPATH": str(ROOT / "python"), "TERM": "screen-256color",
           "BENCH_TTY_SIZE": os.environ.get("BENCH_TTY_SIZE", "200000"),
           "BENCH_TTY_PROFILE": os.environ.get("BENCH_TTY_PROFILE", ""),
           "BENCH_TTY_EVAL": os.environ.get("BENCH_TTY_EVAL", ""),
           "BENCH_TTY_PROFILER": os.environ.get("BENCH_TTY_PROFILER", "cpu")}
    cmd = ["env", *(f"{k}={v}" for k, v in env.items()),
           "emacs", "-nw", "--no-init-file", "--no-splash",
           # Measure the byte code loaded, not native compilation running beside it.
           "--eval", "(setq native-comp-deferred-compilation nil)",
           "-L", str(elc), "-L", str(ROOT / "tests" / "elisp"),
           *(["-L", str(md[-1])] if md else []), "-l", "tty_stream_driver"]
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "ctl"],
                   check=True)
    # Keep the pane after Emacs exits, so a failure can be read.
    subprocess.run(["tmux", "-L", sock, "set", "-g", "remain-on-exit", "on"], check=True)
    try:
        subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-s", "bench", "-x", "200",
                        "-y", "50", subprocess.list2cmdline(cmd)], check=True, cwd=work)
        deadline = time.time() + 60
        while not ready.exists():
            if time.time() > deadline:
                raise RuntimeError(f"{mode}: emacs did not start:\n{_screen(sock)}")
            time.sleep(0.05)
        keys = _Keys(sock, "bench")
        perf_out = os.environ.get("BENCH_TTY_PERF")  # a `perf record' of Emacs, for a closer look
        perf = (subprocess.Popen(["perf", "record", "-F", "999", "-g", "-o", f"{perf_out}-{mode}",
                                  "-p", ready.read_text().strip()],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if perf_out else None)
        deadline = time.time() + 180
        while not out.exists() or not out.stat().st_size:
            if time.time() > deadline:
                keys.stop()
                raise RuntimeError(f"{mode}: the stream did not end:\n{_screen(sock)}")
            time.sleep(0.1)
        sent = keys.stop()
        if perf:
            perf.send_signal(2)
            perf.wait()
        time.sleep(0.2)  # the driver writes, then exits
        report: dict[str, Any] = json.loads(out.read_text())
        if "error" in report:
            raise RuntimeError(f"{mode}: {report['error']}")
        report["sent"] = sent
        keep = os.environ.get("BENCH_TTY_KEEP")
        if keep:  # the raw samples, for a closer look
            Path(keep, f"{mode}-{time.time():.0f}.json").write_text(json.dumps(report))
        return report
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def _figures(r: dict[str, Any]) -> dict[str, float]:
    """CPU %, key latency p99 (stream and idle), longest stall, for one run."""
    start, end = r["start"], r["end"]
    lat = [(h - s) * 1000 for s, h in zip(r["sent"], r["keys"], strict=False)
           if start <= s <= end]
    idle = [(h - s) * 1000 for s, h in zip(r["sent"], r["keys"], strict=False) if s < r["go"]]
    ticks = [t for t in r["ticks"] if start <= t <= end]
    gaps = [(b - a) * 1000 - 10 for a, b in zip(ticks, ticks[1:], strict=False)]
    span = end - start
    return {"cpu": 100 * r["cpu_ticks"] / CLK_TCK / span, "cpu_seconds": r["cpu_ticks"] / CLK_TCK,
            "p99": _percentile(lat, 0.99),
            "idle_p99": _percentile(idle, 0.99), "stall": max([*gaps, *lat, 0.0]),
            "timer_p99": _percentile(gaps, 0.99), "keys": len(lat), "seconds": span,
            "chunks": r["chunks"], "gc_seconds": r["gc_seconds"], "gcs": r["gcs"],
            "gc_max_ms": 1000 * max([g[1] for g in r.get("gc_log", [])] or [0.0]),
            # One more collection after the window: its cost is nearly all marking.
            "gc_after_ms": r.get("gc_after_ms", 0.0), "live_mb": r.get("live_mb", 0.0),
            "allocated_mb": sum(r["consed"]) / 1e6, "system_seconds": r["stime_ticks"] / CLK_TCK,
            "overview_refreshes": r.get("overview_refreshes", 0),
            "overview_running_max": r.get("overview_running_max", 0),
            "overview_running_last": r.get("overview_running_last", 0),
            "overview_max_ms": r.get("overview_max_ms", 0.0)}


def _emit_x4(med: Any, load: float) -> None:
    """Four sessions streaming at once, beside one session's figures of the same run."""
    one = "view_stream_tty"
    overview = {"overview_refreshes": med("tandem-x4", "overview_refreshes"),
                "overview_running_max": med("tandem-x4", "overview_running_max"),
                "overview_running_last": med("tandem-x4", "overview_running_last"),
                "overview_max_ms": round(med("tandem-x4", "overview_max_ms"), 1)}
    _emit("view_stream_tty_x4_cpu_ratio",
          med("tandem-x4", "cpu_seconds") / med("tandem", "cpu_seconds"), "x",
          f"{one}_cpu_seconds", med("tandem", "cpu_seconds"), 4,
          cpu_seconds=med("tandem-x4", "cpu_seconds"), cpu=round(med("tandem-x4", "cpu"), 2),
          gcs=med("tandem-x4", "gcs"), gc_seconds=round(med("tandem-x4", "gc_seconds"), 3),
          gc_max_ms=round(med("tandem-x4", "gc_max_ms"), 1),
          gc_after_ms=round(med("tandem-x4", "gc_after_ms"), 1),
          live_mb=round(med("tandem-x4", "live_mb"), 1),
          allocated_mb=round(med("tandem-x4", "allocated_mb"), 1), load_average=load, **overview)
    _emit("view_stream_tty_x4_input_latency_p99", med("tandem-x4", "p99"), "ms",
          f"{one}_input_latency_p99", med("tandem", "p99"), 16,
          idle_p99=med("tandem-x4", "idle_p99"), load_average=load)
    _emit("view_stream_tty_x4_longest_stall", med("tandem-x4", "stall"), "ms",
          f"{one}_longest_stall", med("tandem", "stall"), 100, load_average=load)


def main() -> int:
    """Run both modes RUNS times, alternating; print the median figures."""
    if not (shutil.which("tmux") and shutil.which("emacs")):
        print("bench_stream_tty: tmux or emacs missing, skipped", file=sys.stderr)
        return 0
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-tty-") as tmp:
        elc, work = Path(tmp, "elc"), Path(tmp, "work")
        elc.mkdir()
        work.mkdir()
        _compile(elc)
        runs: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
        for i in range(RUNS):
            for mode in MODES:
                f = _figures(_run(mode, elc, work))
                print(f"run {i + 1} {mode}: {json.dumps({k: round(v, 2) for k, v in f.items()})}",
                      file=sys.stderr, flush=True)
                runs[mode].append(f)

    def med(mode: str, key: str) -> float:
        return statistics.median(f[key] for f in runs[mode])

    # The load average over the runs (1-minute, at their start and end).
    load = round((load_start + os.getloadavg()[0]) / 2, 2)
    every = {m: [{k: round(v, 2) for k, v in f.items()} for f in fs] for m, fs in runs.items()}
    names = (("tandem", "view_stream_tty"),
             ("tandem-markdown-mode", "view_stream_tty_markdown_mode"))
    for mode, name in names:
        if mode not in runs or "anchor" not in runs:
            continue
        extra = {"load_average": load, "gcs": med(mode, "gcs"),
                 "allocated_mb": round(med(mode, "allocated_mb"), 1),
                 "anchor_gcs": med("anchor", "gcs")}
        if "idle" in runs:  # what Emacs costs with nothing streaming (keys, timer)
            extra["idle_floor_cpu"] = round(med("idle", "cpu"), 2)
        _emit(f"{name}_cpu", med(mode, "cpu"), "% of a core", "markdown_mode_append_cpu",
              med("anchor", "cpu"), 15, **extra)
        # The same stream's CPU seconds: a starved anchor stretches its stream,
        # which lowers its percentage but not the work it did.
        _emit(f"{name}_cpu_ratio", med(mode, "cpu_seconds") / med("anchor", "cpu_seconds"), "x",
              "markdown_mode_append_cpu_seconds", med("anchor", "cpu_seconds"), 0.25,
              cpu_seconds=med(mode, "cpu_seconds"), load_average=load)
        _emit(f"{name}_input_latency_p99", med(mode, "p99"), "ms",
              "markdown_mode_append_input_latency_p99", med("anchor", "p99"), 16,
              idle_p99=med(mode, "idle_p99"), anchor_idle_p99=med("anchor", "idle_p99"),
              load_average=load)
        _emit(f"{name}_longest_stall", med(mode, "stall"), "ms",
              "markdown_mode_append_longest_stall", med("anchor", "stall"), 100, load_average=load)
    if "tandem" in runs and "tandem-x4" in runs:
        _emit_x4(med, load)
    print(json.dumps({"runs": every}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
