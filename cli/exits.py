"""The exit-code contract every nodefleet command keeps, so a pipeline can tell a crash from a verdict."""

from __future__ import annotations

#: No mandatory violation (advisories may have been printed).
EXIT_OK = 0
#: At least one mandatory policy violation.
EXIT_VIOLATIONS = 1
#: Invalid input: a stack file, a catalog, an option. One message names the file, the field and the fix.
EXIT_INVALID = 2
#: A defect in nodefleet itself. One line says so and how to report it; ``--debug`` shows the traceback.
EXIT_INTERNAL = 3

CONTRACT = (
    "exit codes: 0 no mandatory violation, 1 mandatory violations, 2 invalid input (the message names the "
    "file, the field and the fix), 3 internal error (rerun with --debug and report the traceback)"
)


class InputError(Exception):
    """Input the user can fix. The message is complete: file, field or option, and the fix."""


#: The longest an option may bound anything (a week): longer is a typo, and past about 24 days the operating
#: system's own waits (``poll``'s milliseconds in an int) cannot be given the value at all.
MAX_SECONDS = 7 * 24 * 3600.0


def seconds(text: str) -> float:
    """An option's number of seconds (argparse ``type``): finite, above 0 and at most :data:`MAX_SECONDS`;
    anything else is refused with exit 2 as argparse refuses a value it cannot read."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0; give one, e.g. 600")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is more than a week ({MAX_SECONDS:.0f} seconds), the longest nodefleet waits for anything; "
            f"give at most {MAX_SECONDS:.0f}"
        )
    return value
