"""Run every fuzz target for a bounded time and print the totals.

Strategy: each target (tests/fuzz/fuzz_*.py) runs in its own process under
atheris/libFuzzer -- a Python exception, a hang (``-timeout``) or runaway memory
(``-rss_limit_mb``) there is a crash -- seeded from seeds.py (written afresh
into ``<workdir>/<target>/seeds`` on every run) plus the corpus the target grew
in earlier runs (``<workdir>/<target>/corpus``) plus the corpus kept in the repo
(``tests/fuzz/corpus/<target>``: the minimized result of the documented campaign,
read only; libFuzzer writes new inputs into the first directory alone). Up to
``--jobs`` targets run at once. Crash inputs land in ``<workdir>/<target>/artifacts/``;
each one found must become a regression test in tests/fuzz/test_regressions.py.

``--replay`` runs no fuzzer: it feeds the seeds, the repo's corpus, the grown
corpus and any crash artifacts through each target's ``test_one_input`` in this process (what
tests/sanitize.sh does under ASan, and a quick way to check a fix).

Output: one line per target (executions, executions/s, corpus size, crashes),
then ``fuzz: N executions in S s over T targets, crashes C``; the exit status
is 1 when C > 0. Usage: ``python -m tests.fuzz.run --seconds 30`` (per target).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TARGETS = (
    "fuzz_framer",
    "fuzz_payload",
    "fuzz_differential",
    "fuzz_sse",
    "fuzz_decode",
    "fuzz_encode",
)
CRASH_PREFIXES = ("crash-", "timeout-", "oom-", "leak-")
KEPT = HERE / "corpus"  # tests/fuzz/corpus/<target>: the campaign's minimized corpus


def kept_corpus(target: str) -> list[Path]:
    """The inputs of ``target``'s corpus kept in the repo, in a stable order."""
    directory = KEPT / target
    return sorted(p for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []


@dataclass
class Result:
    target: str
    executions: int = 0
    seconds: float = 0.0
    corpus: int = 0
    crashes: int = 0
    status: int = 0
    log: Path | None = None


def _artifacts(directory: Path) -> set[Path]:
    if not directory.is_dir():
        return set()
    return {p for p in directory.iterdir() if p.name.startswith(CRASH_PREFIXES)}


def _prepare(target: str, workdir: Path) -> tuple[Path, Path, Path]:
    from tests.fuzz import seeds

    module = importlib.import_module(f"tests.fuzz.{target}")
    base = workdir / target
    seed_dir, corpus, artifacts = base / "seeds", base / "corpus", base / "artifacts"
    for d in (corpus, artifacts):
        d.mkdir(parents=True, exist_ok=True)
    if seed_dir.is_dir():
        for p in seed_dir.iterdir():
            p.unlink()
    seeds.write(module.SEEDS, seed_dir)
    return seed_dir, corpus, artifacts


def _command(
    target: str, args: argparse.Namespace, seed_dir: Path, corpus: Path, artifacts: Path
) -> list[str]:
    """The libFuzzer run of ``target``: new inputs go to ``corpus`` (its first
    directory), seeded from it, the seeds and (unless ``--fresh``) the kept corpus."""
    kept = KEPT / target
    return [
        sys.executable,
        "-m",
        f"tests.fuzz.{target}",
        f"-max_total_time={args.seconds}",
        f"-timeout={args.timeout}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        f"-max_len={args.max_len}",
        f"-artifact_prefix={artifacts}/",
        "-print_final_stats=1",
        str(corpus),
        str(seed_dir),
        *([str(kept)] if kept.is_dir() and not args.fresh else []),
    ]


def fuzz(targets: list[str], args: argparse.Namespace) -> list[Result]:
    pending = list(targets)
    running: list[tuple[Result, subprocess.Popen[bytes], float, set[Path], Path]] = []
    done: list[Result] = []
    while pending or running:
        while pending and len(running) < args.jobs:
            target = pending.pop(0)
            seed_dir, corpus, artifacts = _prepare(target, args.workdir)
            log = args.workdir / target / "fuzz.log"
            cmd = _command(target, args, seed_dir, corpus, artifacts)
            with log.open("wb") as out:
                proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
            result = Result(target, log=log)
            running.append((result, proc, time.monotonic(), _artifacts(artifacts), artifacts))
        time.sleep(0.2)
        for item in list(running):
            result, proc, start, before, artifacts = item
            if proc.poll() is None:
                continue
            running.remove(item)
            result.seconds = time.monotonic() - start
            result.status = proc.returncode
            assert result.log is not None
            text = result.log.read_text(errors="replace")
            m = re.search(r"stat::number_of_executed_units:\s*(\d+)", text)
            runs = re.findall(r"^#(\d+)\s", text, re.MULTILINE)
            result.executions = int(m.group(1)) if m else int(runs[-1]) if runs else 0
            result.corpus = sum(1 for _ in (args.workdir / result.target / "corpus").iterdir())
            new = _artifacts(artifacts) - before
            result.crashes = len(new) or (1 if proc.returncode != 0 else 0)
            for p in sorted(new):
                print(f"  {result.target}: crash input {p}", file=sys.stderr)
            if result.crashes:
                tail = "\n".join(text.splitlines()[-40:])
                print(f"--- {result.target} (exit {proc.returncode}):\n{tail}", file=sys.stderr)
            done.append(result)
    return sorted(done, key=lambda r: targets.index(r.target))


def replay(targets: list[str], args: argparse.Namespace) -> list[Result]:
    from tests.fuzz import seeds

    out = []
    for target in targets:
        module = importlib.import_module(f"tests.fuzz.{target}")
        base = args.workdir / target
        inputs = list(seeds.seeds(module.SEEDS))
        inputs += [p.read_bytes() for p in kept_corpus(target)]
        for sub in ("corpus", "artifacts"):
            d = base / sub
            if d.is_dir():
                inputs += [p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()]
        result = Result(target)
        start = time.monotonic()
        for data in inputs:
            try:
                module.test_one_input(data)
            except Exception as exc:  # every escape is a crash here
                result.crashes += 1
                print(f"  {target}: {type(exc).__name__}: {exc}\n    input {data[:200]!r}")
            result.executions += 1
        result.seconds = time.monotonic() - start
        result.corpus = len(inputs)
        out.append(result)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=30, help="fuzzing time per target")
    parser.add_argument("--targets", nargs="*", default=list(TARGETS), choices=TARGETS)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "fuzz")
    parser.add_argument("--timeout", type=int, default=10, help="seconds per input")
    parser.add_argument("--rss-limit-mb", type=int, default=2048)
    parser.add_argument("--max-len", type=int, default=8192)
    parser.add_argument("--replay", action="store_true", help="replay inputs, do not fuzz")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="seed the fuzzer without the kept corpus (replayed already: libFuzzer reads a "
        "seed corpus whole before -max_total_time counts, minutes under ASan)",
    )
    args = parser.parse_args(argv)
    args.workdir = args.workdir.resolve()
    started = time.monotonic()
    results = replay(args.targets, args) if args.replay else fuzz(args.targets, args)
    mode = "replay" if args.replay else "fuzz"
    print(f"{'target':<20} {'executions':>11} {'exec/s':>8} {'corpus':>7} {'crashes':>8}")
    for r in results:
        rate = r.executions / r.seconds if r.seconds else 0.0
        print(f"{r.target:<20} {r.executions:>11} {rate:>8.0f} {r.corpus:>7} {r.crashes:>8}")
    total = sum(r.executions for r in results)
    crashes = sum(r.crashes for r in results)
    elapsed = time.monotonic() - started
    print(
        f"{mode}: {total} executions in {elapsed:.0f} s over {len(results)} targets, "
        f"crashes {crashes}"
    )
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
