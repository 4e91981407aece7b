"""One exception type whose message is shown to the user as a single line."""


class MedScopeError(Exception):
    """A user-facing error: say what failed, on which input, and what to do about it.

    The CLI prints ``str(err)`` on one line (no traceback) and exits with status 2.
    """
