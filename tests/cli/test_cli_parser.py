"""What a user meets before any capture is read: the bare command, a wrong option,
``--help`` (issue 25 item 6).

``main`` runs in-process here (``COLUMNS`` sets the width argparse formats for);
the console script itself is run by the other tests in this directory.
"""

from __future__ import annotations

import itertools
import re

import pytest

from agui_wire._cli import build_parser, main
from agui_wire._cli._parser import MAX_WIDTH

COMMANDS = ("decode", "encode", "convert", "inspect", "validate", "cost")


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
    required = ["--to", "sse"] if command in ("encode", "convert") else []
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
