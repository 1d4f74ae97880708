"""The one way an exception becomes one line of a message (`error_line`), for every error the package words for a
user: the recipes' start-up checks, the command line, the app, the converters."""


def error_line(error: BaseException) -> str:
    """`error` in one line: an OSError's reason (and file), otherwise the first line of its message (or its type)."""
    if isinstance(error, OSError) and error.strerror:
        files = " -> ".join(str(name) for name in (error.filename, error.filename2) if name is not None)
        return f"{error.strerror}: {files}" if files else error.strerror
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
