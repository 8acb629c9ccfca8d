"""The README's commands and examples are the ones that work."""

from __future__ import annotations

import re

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, re.S)


def test_readme_opens_with_the_two_commands() -> None:
    commands = [body.strip() for lang, body in BLOCKS[:2]]
    assert "chanctx" in commands[0] and "pytest" in commands[1]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()  # CI runs exactly the README's tests


def test_python_examples_run(capsys: object) -> None:
    examples = [body for lang, body in BLOCKS if lang == "python"]
    assert examples
    for example in examples:
        # Users import the installed namespace; the checkout's folders are not top-level names.
        assert not re.search(
            r"^(from|import) (bot|context|tools|cache|manifest_store)\b", example, re.M
        )
        exec(compile(example, "README.md", "exec"), {})
