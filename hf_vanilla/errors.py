"""How an error the user can fix is told, for every program of the package (the command line, the recipes, the
tuning script, the benchmarks): `user_exit` ends the program with `PROGRAM: message`, one line on stderr and exit
status 1; `error_line` makes an exception one line of a message (there, and in the errors the app, the converters
and the recipes' start-up checks raise). Standard library only: `hf_vanilla_cli` reads this file before it imports
the package."""


def error_line(error: BaseException) -> str:
    """`error` in one line: an OSError's reason (and file), otherwise the first line of its message (or its type)."""
    if isinstance(error, OSError) and error.strerror:
        files = " -> ".join(str(name) for name in (error.filename, error.filename2) if name is not None)
        return f"{error.strerror}: {files}" if files else error.strerror
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def user_exit(program: str, message: str) -> SystemExit:
    """The exception that ends `program` for an error its user can fix: Python prints `program: message` on stderr
    and exits with status 1 (raise it `from None`: no traceback)."""
    return SystemExit(f"{program}: {message}")
