"""Every code block of README.md and docs/**/*.md, run as written.

A new document is picked up by itself: every fenced block of every Markdown file
there is a test (id ``docs/cli.md:108``). The block's language says what is done
with it:

``python``   run as a script by the interpreter running the tests; must exit 0.
``sh``       each command (one line, or lines joined by a trailing ``\\``) run by
             ``bash -o pipefail``; must exit 0, or N when the line ends ``# exit N``.
``console``  a transcript: ``$ command`` lines, each followed by what it prints
             (stdout and stderr as a terminal shows them). The command runs and its
             output must match line for line (trailing spaces ignored); a line ``…``
             alone stands for any number of lines. Exit status as for ``sh``.
``json``     must parse.
``text``     output, listings, trees: not run (a ``$ `` line is refused: commands go
             in ``console`` blocks, where they run).
Anything else (``ts``, no language at all) fails unless a ``skip`` directive says why.
Blocks run with the Python running the tests, or the one ``AGUI_WIRE_DOCS_PYTHON``
names (its ``bin`` first on ``PATH``): .ci/packaging.sh points it at a fresh venv
holding only the wheel and the documented extras.

The blocks of one document run in order in one scratch directory, so a block can
make the files later blocks use (the stand-ins the document names: docs/cli.md's
captures are made by a block at its top). A block runs with what a wheel
installs and nothing of the clone: the scratch directory holds no ``examples/``
(only a ``clone`` block sees it), the test interpreter's ``bin`` (``agui-wire``,
``uvicorn``) is first on ``PATH``, and ``AGUI_EXAMPLE_DELAY=0``. A block serving
an app (``post``) must answer ``Vary: Accept``: its body depends on that header.
Every repository file a document names (``src/agui_wire/_negotiation.py``,
``tests/e2e/...``) must exist.

Directives, in an HTML comment right before the fence (invisible on GitHub,
visible in the source), several separated by ``;``:

``<!-- doc-test: server MODULE:APP -->``  uvicorn serves MODULE:APP on a free
    loopback port while the block runs; ``8000`` in the block means that port.
``<!-- doc-test: serves-first -->``  (``sh``) the block's first command starts a
    server on port 8000 (rewritten as above): it runs in the background, the other
    commands run once it answers HTTP, then it is stopped.
``<!-- doc-test: clone -->``  the block is about the clone's ``examples/`` (its
    prose says so): ``examples/`` is linked into the scratch directory while it runs.
``<!-- doc-test: redis -->``  a real ``redis-server`` (tests/redis/harness.py) on a free
    loopback port while the block runs; ``redis://localhost:6379`` in the block means it.
``<!-- doc-test: post PATH [NAME=VALUE] -->``  (``python``) the block defines an ASGI
    ``app``: it is served by uvicorn and a run input is POSTed to PATH asking for SSE,
    then for protobuf (with the header NAME: VALUE, if given); both answers must be
    200, say ``Vary: Accept`` and decode to a run starting RUN_STARTED.
``<!-- doc-test: timing -->``  (``console``) CPU figures vary between machines and
    runs: numbers with two decimals, "N.Nx faster/slower than" / "about as fast as",
    the CPU's name, the busy-machine note and the pure-Python build note are not
    compared; everything else is.
``<!-- doc-test: framework VENV -->``  (``python``) a complete server module (``app``)
    that needs a framework, which lives in its own venv (``.venv-fw/VENV``, ``make
    frameworks``): not run here; tests/frameworks/test_doc_servers.py serves it there and
    sends it a binary and an SSE request.
``<!-- doc-test: ran-by FILE -->``  (``sh``) not run here because FILE (a CI script)
    runs exactly these commands: each must appear in FILE.
``<!-- doc-test: install -->``  (``sh``) what a wheel user runs: ``pip install`` lines of
    ``agui-wire`` with extras. Not run here (they would install from PyPI): .ci/packaging.sh
    runs each with ``agui-wire`` meaning the wheel it built, in a fresh venv, then runs
    the document's blocks with that venv's Python (``AGUI_WIRE_DOCS_PYTHON``, below).
``<!-- doc-test: install VENV -->``  (``sh``) a framework's ``pip install`` line: not run
    here; tests/frameworks/test_doc_servers.py holds it to the pinned
    ``tests/frameworks/requirements/VENV.txt`` (make frameworks).
``<!-- doc-test: save FILE -->``  (``python``) the block is also written to FILE in the
    scratch directory, for later blocks (``server server:app`` serves it from there).
``<!-- doc-test: skip REASON -->``  (last) not run, for the REASON given (required). Keep
    these rare: each shows up as a skip with its reason in every test run.

``test_the_checker_fails_on_broken_blocks`` holds the machinery itself to failing.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

import agui_wire
from tests.redis.harness import RedisServer
from tests.support.live import free_port, start_uvicorn, stop, wait_http

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
RUN_LANGUAGES = ("python", "sh", "console", "json", "text")
DIRECTIVES = (
    "server",
    "serves-first",
    "clone",
    "redis",
    "post",
    "timing",
    "framework",
    "ran-by",
    "install",
    "save",
    "skip",
)
#: the interpreter blocks run with (module doc)
PYTHON = os.environ.get("AGUI_WIRE_DOCS_PYTHON") or sys.executable
PORT = "8000"  # the port documents write; rewritten to a free one
REDIS_URL = "redis://localhost:6379"  # the Redis documents write; rewritten to a real one
TIMEOUT = 120
RUN_INPUT = {
    "threadId": "t1",
    "runId": "r1",
    "state": {},
    "messages": [],
    "tools": [],
    "context": [],
    "forwardedProps": {},
}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<info>[^`]*?)[ \t]*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<text>.*?)\s*-->\s*$")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")


@dataclass
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    language: str
    body: str
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        doc = self.doc.relative_to(ROOT) if self.doc.is_relative_to(ROOT) else self.doc
        return f"{doc}:{self.line}"


def parse(doc: Path, text: str | None = None) -> list[Block]:
    """The fenced blocks of a Markdown document, with their directives."""
    lines = (doc.read_text() if text is None else text).split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m["indent"], m["fence"]
        start, body = i, []
        i += 1
        while i < len(lines) and not (
            lines[i].strip().startswith(fence[0] * len(fence))
            and not lines[i].strip(fence[0]).strip()
        ):
            line = lines[i]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            i += 1
        directives: dict[str, str] = {}
        d = _DIRECTIVE.match(lines[start - 1]) if start else None
        if d:
            text = d["text"]
            skip = re.search(r"(?:^|;)\s*skip\b(.*)$", text)  # its reason may hold ";"
            if skip:
                directives["skip"] = skip.group(1).strip()
                text = text[: skip.start()]
            for part in filter(None, (p.strip() for p in text.split(";"))):
                name, _, arg = part.partition(" ")
                directives[name] = arg.strip()
        language = m["info"].split()[0] if m["info"].split() else ""
        blocks.append(Block(doc, start + 1, language, "\n".join(body) + "\n", directives))
        i += 1
    return blocks


ALL = [b for doc in DOCS for b in parse(doc)]


# -- running ------------------------------------------------------------------------------


def base_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "AGUI_EXAMPLE_DELAY": "0"}
    env["PATH"] = f"{Path(PYTHON).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("AGUI_WIRE_NO_PROGRESS", None)
    return env


@contextmanager
def redis_for(block: Block, cwd: Path) -> Iterator[str]:
    """The block's text with the Redis URL rewritten to a real server's, while it runs."""
    if "redis" not in block.directives:
        yield block.body
        return
    directory = cwd / f"redis-{block.line}"
    directory.mkdir(exist_ok=True)
    server = RedisServer(directory).start()
    try:
        yield block.body.replace(REDIS_URL, server.url)
    finally:
        server.stop()


@contextmanager
def served(block: Block, cwd: Path) -> Iterator[str]:
    """The block's text with port 8000 rewritten to the server's (and the Redis URL
    to a real one), while it runs."""
    with redis_for(block, cwd) as body:
        app = block.directives.get("server")
        if not app:
            yield body
            return
        # a module an earlier block saved (``save``) is served from the scratch directory
        home = cwd if (cwd / f"{app.split(':')[0]}.py").exists() else ROOT
        url, process = start_uvicorn(
            app, cwd=home, env=base_env(), log=cwd / f"server-{block.line}.log", python=PYTHON
        )
        try:
            yield re.sub(rf"\b{PORT}\b", url.rsplit(":", 1)[1], body)
        finally:
            stop(process)


def commands(text: str) -> list[str]:
    """Shell commands of an ``sh`` block: one per line, ``\\`` continues a line."""
    out: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1].strip() + " "
            continue
        line = pending + line.strip()
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line.strip())
    return out


def expected_status(command: str) -> int:
    m = _EXIT.search(command)
    return int(m.group(1)) if m else 0


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=base_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=TIMEOUT,
        check=False,
    )


def run_python(block: Block, cwd: Path) -> list[str]:
    if "save" in block.directives:
        (cwd / block.directives["save"]).write_text(block.body)
    if "post" in block.directives:
        return post_to_app(block, cwd)
    with served(block, cwd) as text:
        script = cwd / f"doc_block_{block.line}.py"
        script.write_text(text)
        r = subprocess.run(
            [PYTHON, script.name],
            cwd=cwd,
            env=base_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    if r.returncode:
        return [f"exited {r.returncode}:\n{r.stdout.decode()}{r.stderr.decode()}"]
    return []


def post_to_app(block: Block, cwd: Path) -> list[str]:
    with redis_for(block, cwd) as body:
        return post_to(body, block.directives["post"], cwd, f"doc_block_{block.line}")


def post_to(body: str, target: str, cwd: Path, module: str) -> list[str]:
    path, _, header = target.partition(" ")
    name, _, value = header.partition("=")
    extra = {name.strip(): value.strip()} if header else {}
    (cwd / f"{module}.py").write_text(body)
    url, process = start_uvicorn(
        f"{module}:app", cwd=cwd, env=base_env(), log=cwd / f"{module}.log", python=PYTHON
    )
    problems = []
    try:
        for accept in ("text/event-stream", "application/vnd.ag-ui.event+proto"):
            r = httpx.post(
                url + path,
                json=RUN_INPUT,
                headers={"accept": accept, **extra},
                timeout=30,
            )
            ctype = r.headers.get("content-type", "")
            events = agui_wire.decode(r.content, ctype) if r.status_code == 200 else []
            vary = {v.strip().lower() for v in r.headers.get("vary", "").split(",")}
            if r.status_code != 200 or ctype.split(";")[0] != accept or not events:
                problems.append(f"Accept {accept}: {r.status_code} {ctype} {r.content[:300]!r}")
            elif "accept" not in vary:  # a cache between would serve one client the other's
                problems.append(f"Accept {accept}: no Vary: Accept ({r.headers.get('vary')!r})")
            elif events[0]["type"] != "RUN_STARTED":
                problems.append(f"Accept {accept}: the run starts with {events[0]['type']}")
    finally:
        stop(process)
    if problems:
        log = (cwd / f"{module}.log").read_text(errors="replace")
        problems.append(f"server log:\n{log}")
    return problems


_PIP_LINE = re.compile(
    r"^pip install (?:'agui-wire(?:\[[a-z0-9,-]+\])?'|agui-wire)(?: [\w'\[\],.=<>-]+)*$"
)


def install_lines(block: Block) -> list[str]:
    """The ``pip install`` lines of an ``install`` block, comments stripped."""
    return [c.split("  #")[0].strip() for c in commands(block.body)]


def run_sh(block: Block, cwd: Path) -> list[str]:
    if "install" in block.directives:
        lines = install_lines(block)
        if block.directives["install"]:  # a framework's: tests/frameworks checks it
            return [f"not a pip line: {c!r}" for c in lines if not c.startswith("pip install ")]
        return [f"not a pip line of agui-wire: {c!r}" for c in lines if not _PIP_LINE.match(c)]
    if "ran-by" in block.directives:
        script = (ROOT / block.directives["ran-by"]).read_text()
        return [
            f"{c!r} is not in {block.directives['ran-by']}"
            for c in commands(block.body)
            if c.split("  #")[0].strip() not in script
        ]
    problems: list[str] = []
    with served(block, cwd) as text:
        todo = commands(text)
        background = None
        if "serves-first" in block.directives:
            port = str(free_port())
            todo = [re.sub(rf"\b{PORT}\b", port, c) for c in todo]
            background = subprocess.Popen(
                ["bash", "-c", f"exec {todo.pop(0)}"],
                cwd=cwd,
                env=base_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            if not wait_http(f"http://127.0.0.1:{port}/", background):
                problems.append("the server (first command) did not answer HTTP")
                todo = []
        try:
            for command in todo:
                r = shell(command, cwd)
                if r.returncode != expected_status(command):
                    problems.append(
                        f"$ {command}\nexited {r.returncode}, not {expected_status(command)}:\n"
                        + r.stdout.decode(errors="replace")[-3000:]
                    )
        finally:
            if background is not None and background.poll() is None:
                os.killpg(background.pid, signal.SIGTERM)
                background.wait(timeout=10)
    return problems


_TIMING = [
    (re.compile(r"\s*\b\d+\.\d\d\b"), " #.##"),  # with the padding: 10.07 is wider than 7.25
    (re.compile(r"\b\d+\.\dx (faster|slower) than|about as fast as"), "<ratio>"),
    (re.compile(r"(?<=passes on ).*$"), "<cpu>"),
    # a note that depends on the build, not the doc: AGUI_WIRE_PURE=1 runs add it
    (re.compile(r" \(This build decodes protobuf in pure Python;[^)]*\)"), ""),
]


def normalise(lines: list[str], timing: bool) -> list[str]:
    out = []
    for line in lines:
        line = line.rstrip()
        if timing:
            if line.lstrip().startswith("(timings varied"):
                continue
            for pattern, mask in _TIMING:
                line = pattern.sub(mask, line)
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` equals ``actual``, a line ``…`` standing for any number of lines."""
    if "…" not in expected:
        return expected == actual
    k = expected.index("…")
    head, rest = expected[:k], expected[k + 1 :]
    if actual[:k] != head:
        return False
    return any(matches(rest, actual[j:]) for j in range(k, len(actual) + 1))


def transcript(text: str) -> list[tuple[str, list[str]]]:
    steps: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:].strip(), []))
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"output before the first '$ ' command: {line!r}")
    return steps


def run_console(block: Block, cwd: Path) -> list[str]:
    problems: list[str] = []
    timing = "timing" in block.directives
    with served(block, cwd) as text:
        for command, output in transcript(text):
            r = shell(command, cwd)
            actual = r.stdout.decode(errors="replace").split("\n")
            want, got = normalise(output, timing), normalise(actual, timing)
            if r.returncode != expected_status(command):
                problems.append(
                    f"$ {command}\nexited {r.returncode}, not {expected_status(command)}"
                )
            if not matches(want, got):
                problems.append(
                    f"$ {command}\nprinted:\n"
                    + "\n".join(got)
                    + "\n\nthe document shows:\n"
                    + "\n".join(want)
                )
    return problems


def check(block: Block, cwd: Path) -> list[str]:
    """What is wrong with ``block`` (empty when it runs as documented)."""
    unknown = set(block.directives) - set(DIRECTIVES)
    if unknown:
        return [f"unknown doc-test directive(s) {sorted(unknown)}; known: {DIRECTIVES}"]
    if block.language not in RUN_LANGUAGES:
        return [
            f"a block in {block.language or 'no language'}: tag it with one of "
            f"{RUN_LANGUAGES} or add <!-- doc-test: skip REASON --> (tests/contract/test_docs.py)"
        ]
    if block.language == "python":
        return run_python(block, cwd)
    if block.language == "sh":
        return run_sh(block, cwd)
    if block.language == "console":
        return run_console(block, cwd)
    if block.language == "json":
        try:
            json.loads(block.body)
        except ValueError as exc:
            return [f"not JSON: {exc}"]
        return []
    prompts = [line for line in block.body.splitlines() if line.startswith("$ ")]
    return [f"commands in a text block (use console, where they run): {prompts}"] if prompts else []


_APP = re.compile(r"tests/frameworks/app_\w+\.py")
_NOT_COMPARED = re.compile(r"^(from |import |async def |def |\)|$)")


def lines_missing_from_the_app(block: Block) -> list[str]:
    """A skipped snippet whose reason names a framework app (run by ``make frameworks``
    in the framework's own venv) must be what that app serves: each of its statement
    lines (imports and function headers aside, as the app types them) is one of the
    app's lines."""
    app = _APP.search(block.directives["skip"])
    if app is None:
        return []
    served = {line.strip() for line in (ROOT / app.group()).read_text().splitlines()}
    lines = (line.strip() for line in block.body.splitlines())
    return [line for line in lines if not _NOT_COMPARED.match(line) and line not in served]


class Workspace:
    """One scratch directory per document; its blocks run there in order."""

    def __init__(self, path: Path, blocks: list[Block]) -> None:
        self.path, self.blocks, self.done = path, blocks, 0

    def run(self, block: Block) -> list[str]:
        index = self.blocks.index(block)
        while self.done < index:  # a block selected alone still gets the files made before it
            earlier = self.blocks[self.done]
            if "skip" not in earlier.directives and "framework" not in earlier.directives:
                self.check(earlier)
            self.done += 1
        self.done = index + 1
        return self.check(block)

    def check(self, block: Block) -> list[str]:
        if "clone" not in block.directives:
            return check(block, self.path)
        link = self.path / "examples"
        link.symlink_to(ROOT / "examples")
        try:
            return check(block, self.path)
        finally:
            link.unlink()


@pytest.fixture(scope="session")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Workspace]:
    made: dict[Path, Workspace] = {}
    for doc in DOCS:
        path = tmp_path_factory.mktemp(doc.name)
        made[doc] = Workspace(path, [b for b in ALL if b.doc == doc])
    return made


@pytest.mark.parametrize("block", ALL, ids=[b.where for b in ALL])
def test_block_runs_as_documented(block: Block, workspaces: dict[Path, Workspace]) -> None:
    if "skip" in block.directives:
        reason = block.directives["skip"]
        assert reason, f"{block.where}: skip needs a reason"
        missing = lines_missing_from_the_app(block)
        assert not missing, f"{block.where}: not what the app it names serves: {missing}"
        pytest.skip(f"{block.where} not run: {reason}")
    if "framework" in block.directives:
        venv = block.directives["framework"]
        assert (ROOT / "tests" / "frameworks" / "requirements" / f"{venv}.txt").exists(), venv
        pytest.skip(
            f"{block.where} runs in .venv-fw/{venv}: tests/frameworks/test_doc_servers.py "
            "serves it there (make frameworks)"
        )
    problems = workspaces[block.doc].run(block)
    assert not problems, f"{block.where} ({block.language}):\n" + "\n\n".join(problems)


def test_every_document_is_collected() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "README.md", "docs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    for name in tracked:
        if name.endswith(".md"):
            assert ROOT / name in DOCS
    assert sum(b.language == "python" for b in ALL) >= 3  # the parser finds blocks at all


_FILE = re.compile(
    r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:py|pyi|pyx|pxi|pxd|md|cjs|h|c|txt|toml|json|sh|yml))"
    r"(?![\w/])"
)


def test_every_file_a_document_names_exists() -> None:
    """``a/b.py`` in a document is a file of the repository (or of ``src/``, or of
    the package, as the docs abbreviate it): no reference to a renamed module. A name
    in capitals (``docs/NAME.md``) stands for any."""
    missing = []
    for doc in DOCS:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for name in _FILE.findall(line):
                if Path(name).stem.isupper():  # a placeholder: docs/NAME.md
                    continue
                if not any((base / name).exists() for base in (ROOT, ROOT / "src")):
                    missing.append(f"{doc.relative_to(ROOT)}:{number}: {name}")
    assert not missing
    assert _FILE.findall("rules in `agui_wire/negotiation.py`") == ["agui_wire/negotiation.py"]


def test_no_block_imports_the_clone() -> None:
    """What a reader copies runs from an installed wheel: no block but a ``clone``
    one names ``examples`` (the scratch directory would not have it anyway)."""
    clone = re.compile(r"\bexamples[./]")
    found = [b.where for b in ALL if clone.search(b.body) and "clone" not in b.directives]
    assert not found


def test_the_checker_fails_on_broken_blocks(tmp_path: Path) -> None:
    doc = tmp_path / "broken.md"
    text = "\n".join(
        [
            "```python",
            "async with open('x') as f:  # top-level async with: a SyntaxError",
            "    pass",
            "```",
            "```python",
            "return StreamingResponse()  # 'return' outside function",
            "```",
            "```sh",
            "agui-wire decode missing.bin",
            "```",
            "```console",
            "$ echo hello",
            "goodbye",
            "```",
            "```console",
            "$ false",
            "```",
            "```",
            "untagged",
            "```",
            "<!-- doc-test: ran-by .ci/run -->",
            "```sh",
            "make something-ci-never-runs",
            "```",
            "```json",
            "{'single': 'quotes'}",
            "```",
        ]
    )
    blocks = parse(doc, text)
    assert len(blocks) == 8
    for block in blocks:
        assert check(block, tmp_path), f"{block.line}: {block.body!r} passed"
    good = parse(
        doc,
        "```console\n$ echo a; echo b; echo c\na\n…\nc\n```\n```sh\nfalse  # exit 1\n```\n",
    )
    assert [check(b, tmp_path) for b in good] == [[], []]


def test_commands_and_transcripts_are_parsed_as_a_reader_reads_them() -> None:
    assert commands("a \\\n  --b\n# comment\n\nc  # note\n") == ["a --b", "c  # note"]
    assert transcript("$ x\none\n$ y\n") == [("x", ["one"]), ("y", [])]
    assert expected_status("agui-wire validate x.sse  # exit 1") == 1
