"""What a user meets before any capture is read: the bare command, a wrong option,
``--help``.

``main`` runs in-process here (``COLUMNS`` sets the width argparse formats for);
the console script itself is run by the other tests in this directory.
"""

from __future__ import annotations

import itertools
import re

import pytest

from agui_wire._cli import build_parser, main
from agui_wire._cli._parser import MAX_WIDTH

COMMANDS = ("decode", "encode", "convert", "inspect", "validate", "cost", "record", "docs")
REQUIRED = {"encode": ["--to", "sse"], "convert": ["--to", "sse"], "record": ["URL"]}


def test_bare_command_lists_every_command_one_line_each(capsys) -> None:
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    listing = err.split("commands:\n", 1)[1].strip("\n").split("\n")
    names = [line.split()[0] for line in listing]
    assert names[: len(COMMANDS)] == list(COMMANDS)
    for line in listing:
        assert re.match(r"  [a-z]+ +\S", line), line
        assert len(line) <= 80, line


@pytest.mark.parametrize("command", COMMANDS)
def test_a_wrong_option_prints_that_commands_usage(capsys, command) -> None:
    required = REQUIRED.get(command, [])
    assert main([command, *required, "--bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: agui-wire {command} ")
    assert f"agui-wire {command}: error: unrecognized arguments: --bogus" in err


def test_a_wrong_option_before_the_command_is_the_top_levels(capsys) -> None:
    assert main(["--bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: agui-wire [-h]")
    assert "unrecognized arguments: --bogus" in err


def _prose(help_text: str) -> list[list[str]]:
    """The description's paragraphs (between the usage and the first option heading),
    each as its lines; indented blocks are left out (printed as written)."""
    body = help_text.split("\n\n", 1)[1]
    body = re.split(r"\n\n(?:positional arguments|options):\n", body, maxsplit=1)[0]
    return [
        p.split("\n")
        for p in body.split("\n\n")
        if not any(line[:1].isspace() for line in p.split("\n"))
    ]


@pytest.mark.parametrize("columns", [60, 100, 240])
@pytest.mark.parametrize("command", COMMANDS)
def test_help_prose_is_filled_not_broken_where_the_source_broke(
    capsys, monkeypatch, command, columns
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    width = min(columns - 2, MAX_WIDTH)
    paragraphs = _prose(text)
    assert paragraphs, text
    for lines in paragraphs:
        for line, following in itertools.pairwise(lines):
            assert len(line) <= width, line
            # filled: the next word would not have fitted on this line
            assert len(line) + 1 + len(following.split()[0]) > width, (line, following)
    # the exit statuses and the examples are kept as written
    assert "exit status:\n  0  ok\n" in text
    assert "\nexamples:\n  agui-wire " in text


def test_every_command_is_opened_the_same_way() -> None:
    # one add_command(): the shared options, the formatter, the exit epilog and run
    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    for name, parser in sub.choices.items():
        assert "--no-progress" in parser.format_help(), name
        assert parser.epilog.rstrip().endswith("an input over a size limit"), name
        assert parser.get_default("run").__module__ == f"agui_wire._cli.{name}"


SHARED = (
    "--keep-going",
    "--lossy-numbers",
    "--extra-keys",
    "--allow-empty",
    "--verbose",
    "--entry",
    "--format",
    "--unknown-events",
    "--invalid-utf8",
    "--max-frame-size",
)


def test_an_option_means_the_same_on_every_command() -> None:
    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    seen: dict[str, dict[str, str]] = {}
    for name, parser in sub.choices.items():
        for action in parser._actions:
            for option in action.option_strings:
                if option in SHARED:
                    seen.setdefault(option, {})[name] = action.help or ""
    assert set(seen) == set(SHARED)
    for option, helps in seen.items():
        assert len(set(helps.values())) == 1, (option, helps)
    # cost takes the encoders' options, as encode and convert do
    assert {"encode", "convert", "cost"} <= set(seen["--lossy-numbers"])


def test_an_entry_past_the_end_of_a_har_says_so(cli, real) -> None:
    r = cli("decode", real["frameworks.har"], "--entry", 9)
    assert r.returncode == 2
    head = r.stderr.split(b"\n")[0].decode()
    assert head.endswith(
        "frameworks.har: no entry 9: it has 5 entries (0..4); the AG-UI responses are:"
    )
    r = cli("decode", real["frameworks.har"], "--entry", 0)
    assert r.returncode == 2
    assert b"entry 0 is not an AG-UI response; the AG-UI responses are:" in r.stderr


def test_validate_colours_problems_on_a_terminal_only(cli, monkeypatch, tmp_path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b'{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n')
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    tty = cli("validate", path, tty_stdout=True)
    assert tty.returncode == 1
    assert b"\x1b[1;31merror [run.unterminated]\x1b[0m" in tty.stdout
    assert b"\x1b[1;31mINVALID\x1b[0m" in tty.stdout
    piped = cli("validate", path)
    assert b"\x1b[" not in piped.stdout
    assert b"error [run.unterminated]" in piped.stdout
    monkeypatch.setenv("NO_COLOR", "1")
    assert b"\x1b[" not in cli("validate", path, tty_stdout=True).stdout


def test_sort_keys_makes_the_two_transports_diff_cleanly(cli, real, tmp_path) -> None:
    # the same run through both transports: its SSE, and that SSE converted to protobuf
    binary = tmp_path / "run.bin"
    r = cli("convert", real["pydantic-ai.sse"], "--to", "proto", "--lossy-numbers", "-o", binary)
    assert r.returncode == 0, r.stderr
    sse = cli("decode", real["pydantic-ai.sse"], "--sort-keys").stdout.splitlines()
    proto = cli("decode", binary, "--sort-keys").stdout.splitlines()
    differ = [i for i, (a, b) in enumerate(zip(sse, proto, strict=True)) if a != b]
    # only the event whose integer above 2^53 protobuf carries as a double
    assert len(differ) == 1
    assert b'"STATE_SNAPSHOT"' in sse[differ[0]]
    assert b"1152921504606846977" in sse[differ[0]]
    assert b"1.152921504606847e+18" in proto[differ[0]]
    unsorted = cli("decode", binary).stdout.splitlines()
    assert unsorted != proto  # without it, key order alone makes lines differ
