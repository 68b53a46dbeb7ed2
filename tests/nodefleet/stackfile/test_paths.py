"""The containment rule for paths a stack file names: every way out is refused, the allowed ways work."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from nodefleet.stackfile.paths import (
    CATALOG_ROOTS_ENV,
    RENDER_ROOTS_ENV,
    PathError,
    catalog_file,
    check_stack_name,
    render_directory,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project" / "rendered").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return tmp_path / "project"


def _render(project: Path, directory: str, stack: str = "dev", **env: str) -> Path:
    return render_directory(directory, stack, project_dir=project, environ=env).path


@pytest.mark.parametrize(
    ("directory", "says"),
    [
        ("../outside", "leads out with '..'"),
        ("../../x", "leads out with '..'"),
        ("rendered/../../outside", "leads out with '..'"),
        ("/etc", "is /etc, outside the project"),
        ("", "is empty"),
        ("   ", "is empty"),
        ("~", "starts with '~'"),
        ("~/gitops/{stack}", "starts with '~'"),
        ("rendered/\0x", "control character U+0000"),
        ("rendered/a\nb", "control character U+000A"),
        ("a/" * 600, "at most 1024"),
        ("rendered/" + "x" * 256, "at most 255"),
        (".", "is the project directory itself"),
        ("rendered/..", "is the project directory itself"),
        # Placeholders nodefleet does not replace were once kept as literal folder names.
        ("rendered/{Stack}", "has the placeholder {Stack}, which nodefleet does not replace"),
        ("rendered/{stack}/{cluster}", "has the placeholder {cluster}"),
        ("gitops/{ stack }", "has the placeholder { stack }"),
    ],
)
def test_every_way_out_is_refused_with_a_fix(project: Path, directory: str, says: str) -> None:
    with pytest.raises(PathError) as err:
        _render(project, directory)
    message = str(err.value)
    assert says in message
    assert "e.g. rendered/{stack}" in message or "--root" in message


def test_a_symlink_out_of_the_project_is_refused(project: Path) -> None:
    (project / "link").symlink_to(project.parent / "outside")
    with pytest.raises(PathError, match=r"resolves through a symlink to .*outside"):
        _render(project, "link/{stack}")


def test_dot_dot_after_a_symlink_is_refused_even_inside(project: Path) -> None:
    # The file system resolves link/.. to rendered/a, the provider's filepath.Join to the project root.
    (project / "rendered" / "a" / "b").mkdir(parents=True)
    (project / "link").symlink_to(project / "rendered" / "a" / "b")
    with pytest.raises(PathError, match=re.escape("'..' after a symlink")):
        _render(project, "link/../x")


def test_a_stack_named_dot_dot_cannot_name_a_folder(project: Path) -> None:
    for stack in ("..", ".", "a/b", "a b", ""):
        with pytest.raises(PathError, match="cannot name a folder"):
            _render(project, "rendered/{stack}", stack=stack)
    check_stack_name("prod-east_2.x")


def test_inside_the_project_is_fine_and_stays_relative_for_the_provider(project: Path) -> None:
    found = render_directory("rendered/./{stack}/", "dev", project_dir=project, environ={})
    assert found.text == "rendered/dev"
    assert found.path == (project / "rendered" / "dev").resolve()
    absolute = render_directory(str(project / "rendered" / "{stack}"), "dev", project_dir=project, environ={})
    assert absolute.path == found.path


def test_a_root_allowed_outside_the_stack_file_lets_output_out(project: Path) -> None:
    outside = project.parent / "outside"
    assert _render(project, f"{outside}/{{stack}}", **{RENDER_ROOTS_ENV: str(outside)}) == outside / "dev"
    # Relative roots and directories are relative to the project, so the provider's path stays portable.
    found = render_directory(
        "../outside/{stack}", "dev", project_dir=project, environ={RENDER_ROOTS_ENV: "../outside"}
    )
    assert (found.text, found.path) == ("../outside/dev", (outside / "dev").resolve())
    # Several roots, the way PATH lists folders; the root itself may be the render directory.
    env = {RENDER_ROOTS_ENV: os.pathsep.join(["/nonexistent", str(outside)])}
    assert _render(project, str(outside), **env) == outside.resolve()
    # Allowing a root does not allow its neighbours.
    with pytest.raises(PathError, match="outside every allowed root"):
        _render(project, str(project.parent), **{RENDER_ROOTS_ENV: str(outside)})


def test_catalogs_follow_the_same_rule_with_their_own_roots(project: Path) -> None:
    outside = project.parent / "outside"
    (outside / "c.yaml").write_text("x")
    with pytest.raises(PathError, match=re.escape("--catalog-root DIR")):
        catalog_file(str(outside / "c.yaml"), project_dir=project, environ={})
    with pytest.raises(PathError, match=re.escape("leads out with '..'")):
        catalog_file("../outside/c.yaml", project_dir=project, environ={})
    # A render root does not open catalogs, and a catalog root does not open output.
    with pytest.raises(PathError):
        catalog_file(str(outside / "c.yaml"), project_dir=project, environ={RENDER_ROOTS_ENV: str(outside)})
    found = catalog_file(
        str(outside / "c.yaml"), project_dir=project, environ={CATALOG_ROOTS_ENV: str(outside)}
    )
    assert found.path == (outside / "c.yaml").resolve()
    with pytest.raises(PathError):
        _render(project, str(outside), **{CATALOG_ROOTS_ENV: str(outside)})
