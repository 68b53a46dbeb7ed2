"""Reaching an API server through a kubeconfig the user names: read as nodefleet reads every file a user names
(a regular file only, bounded, strict YAML), and never echoed.

A kubeconfig holds credentials (tokens, client keys). A value given where a path was expected may be the
content itself (pasted inline), and a parser's error quotes the line it failed on: so no message here carries
the value unless it is a path, and none carries the file's content or the client library's own words about it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cli.exits import InputError

__all__ = ["api_client", "kubeconfig_shown"]


def kubeconfig_shown(value: str | None) -> str:
    """How a message names a kubeconfig: its path, or what it is when the value is not one (never the value)."""
    if value is None:
        return "(the ambient kubeconfig: $KUBECONFIG or ~/.kube/config)"
    from nodefleet.files import looks_like_file_content

    if looks_like_file_content(value) or "\r" in value or len(value) > 1024 or ": " in value:
        return (
            f"(a value of {len(value)} characters that is not a path: it looks like a kubeconfig's content)"
        )
    return value


def _paths(value: str | None) -> list[Path]:
    if value is not None:
        return [Path(value).expanduser()]
    env = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return [Path(p).expanduser() for p in env] or [Path("~/.kube/config").expanduser()]


def _document(path: Path, shown: str, what: str) -> dict[str, Any]:
    """The kubeconfig's document, read through the guarded reader (a regular file, bounded, UTF-8, YAML bounded
    in depth and aliases); every failure names the file, never its content."""
    from nodefleet.files import KUBECONFIG_BYTES, FileProblem, load_yaml, read_text

    where = f"{what}: kubeconfig {shown}"
    try:
        document = load_yaml(read_text(path, what="kubeconfig", limit=KUBECONFIG_BYTES, source=where), where)
    except FileProblem as exc:
        raise InputError(str(exc)) from None
    if not isinstance(document, dict):
        raise InputError(
            f"{where}: is not a kubeconfig (its top level is not a mapping); give a kubeconfig's path"
        )
    return document


def kubeconfig_document(kubeconfig: str, what: str) -> dict[str, Any]:
    """The document of the kubeconfig file ``kubeconfig`` (a path; ``~/`` expanded), read as :func:`api_client`
    reads it; :class:`InputError` naming the file, never its content."""
    return _document(Path(kubeconfig).expanduser(), kubeconfig_shown(kubeconfig), what)


def api_client(kubeconfig: str | None, what: str, context: str | None = None) -> Any:
    """A ``kubernetes.client.ApiClient`` for ``kubeconfig`` (None: ``$KUBECONFIG`` or ``~/.kube/config``), through
    its ``context`` (None: its current context).

    ``what`` says what the client is for (``management cluster mgmt-use1-a``), and starts every message.
    :class:`InputError` when it cannot be loaded, naming the file (never its content) and the fix.
    """
    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    shown = kubeconfig_shown(kubeconfig)
    if kubeconfig is not None and shown != kubeconfig:
        raise InputError(
            f"{what}: the kubeconfig is given as {shown}; give the path of a kubeconfig file instead (nodefleet never "
            "reads credentials inline)"
        )
    paths = _paths(kubeconfig)
    if len(paths) > 1:
        # $KUBECONFIG with several files: the client merges them as kubectl does.
        try:
            return config.new_client_from_config(config_file=None, context=context, persist_config=False)  # type: ignore[no-untyped-call]
        except (ConfigException, OSError, ValueError, TypeError, AttributeError) as exc:
            raise InputError(
                f"{what}: the kubeconfig files of $KUBECONFIG cannot be loaded ({type(exc).__name__}); check them with "
                "`kubectl config view`"
            ) from None
    document = _document(paths[0], str(paths[0]) if kubeconfig is None else shown, what)
    try:
        return config.new_client_from_config_dict(document, context=context, persist_config=False)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
        if context is not None and context not in {
            str(c.get("name")) for c in document.get("contexts") or [] if isinstance(c, dict)
        }:
            raise InputError(
                f"{what}: kubeconfig {shown} has no context '{context}'; list its contexts with `kubectl --kubeconfig "
                "<file> config get-contexts`"
            ) from None
        raise InputError(
            f"{what}: kubeconfig {shown}: not a usable kubeconfig ({type(exc).__name__}: no current context, user or "
            "cluster it names, or a field of the wrong kind); check it with `kubectl --kubeconfig <file> config view`"
        ) from None
