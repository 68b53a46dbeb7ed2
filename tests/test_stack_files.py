"""Stack files are read as strictly as the Pulumi CLI reads them, and every problem is one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from mockruntime.run import DuplicateURNError, run_program
from tests.conftest import PROJECT

DEV = (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text()
#: The line of the dev cluster's region in the dev stack file (1-based).
REGION_LINE = DEV.splitlines().index("        region: us-east-1") + 1


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["check", "--config-file", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(
            DEV.replace(
                "        region: us-east-1\n", "        region: us-east-1\n        region: us-west-2\n"
            ),
            f"line {REGION_LINE + 1}, column 9: key 'region' appears twice in one mapping (first on line "
            f"{REGION_LINE})",
            id="duplicate-key",
        ),
        pytest.param(
            DEV.replace("        region: us-east-1", "\tregion: us-east-1"),
            "YAML indents with spaces, never tabs",
            id="tab-indentation",
        ),
        pytest.param(DEV.replace("mode: render", "mode: [render"), "line ", id="syntax-error"),
        pytest.param("- config\n- nodefleet:fleet\n", "the top level is a list", id="top-level-list"),
        pytest.param("config: [a, b]\n", "config: is a list", id="config-not-a-mapping"),
    ],
)
def test_malformed_stack_files_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(content)
    code, out, err = _check(path, capsys)
    assert code == 2
    assert out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {path}: ") and expected in line


def test_a_parse_error_never_echoes_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.secret.yaml"
    path.write_text("password: hunter2-do-not-print\n  token: [abc\n")
    code, _, err = _check(path, capsys)
    assert code == 2 and "hunter2" not in err and "abc" not in err


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        pytest.param(lambda p: p.mkdir(), "is a directory, not a file", id="directory"),
        pytest.param(
            lambda p: p.write_bytes(b"\x1f\x8b\x08\x00\x00\x00"), "is gzip-compressed, not text", id="gzip"
        ),
        pytest.param(
            lambda p: p.write_bytes(b"config:\n  x: caf\xe9\n"),
            "line 2, column 9: byte 0xe9 is not UTF-8",
            id="latin-1",
        ),
        pytest.param(lambda p: None, "no such file", id="missing"),
    ],
)
def test_unreadable_stack_files_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, expected: str
) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    make(path)  # type: ignore[operator]
    code, out, err = _check(path, capsys)
    assert (code, out) == (2, "")
    (line,) = err.strip().splitlines()
    assert str(path) in line and expected in line


def test_the_mock_runtime_refuses_a_duplicate_urn_as_the_engine_does(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: dup\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(
        "import pulumi\n"
        "class R(pulumi.CustomResource):\n"
        "    def __init__(self, name):\n"
        "        super().__init__('test:index:R', name, {})\n"
        "R('a')\nR('a')\n"
    )
    with pytest.raises(DuplicateURNError, match=r"Duplicate resource URN .*test:index:R::a"):
        run_program("dup", {}, project_dir=tmp_path)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(
            "config:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"  {n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
                for p, n in zip("abcdef", "bcdefg", strict=True)
            )
            + "  nodefleet:fleet: {clusters: *g}\n",
            id="billion-laughs",
        ),
        pytest.param("config:\n  nodefleet:fleet: &x\n    clusters: [*x]\n", id="alias-in-its-own-anchor"),
    ],
)
def test_an_alias_bomb_is_refused_before_anything_walks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    path = tmp_path / "Pulumi.bomb.yaml"
    path.write_text(content)
    code, out, err = _check(path, capsys)
    assert (code, out) == (2, "")
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {path}: line ") and "anchors and aliases" in line, line
    assert "expand to more than 1,000,000 values" in line or "an alias inside its own anchor" in line, line
