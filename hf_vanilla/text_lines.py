"""Text files as lines, counted as `wc -l` counts them, for the command line's input and the recipes' corpora alike:
split at "\n" only (`str.splitlines` also splits at \r, \v, \f, \x1c-\x1e, \x85, U+2028 and U+2029, which web-crawled
text holds inside its lines: two parallel files would no longer pair up line for line), a byte-order mark at the start
and the "\r" of a Windows line end dropped. Standard library only."""

import codecs
from pathlib import Path


def line_pieces(data: bytes) -> list[bytes]:
    """The lines of `data` as bytes (see the module's rule); the newline that ends the last line starts no new one."""
    pieces = data.removeprefix(codecs.BOM_UTF8).split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    return [piece.removesuffix(b"\r") for piece in pieces]


def read_lines(file: str | Path) -> list[str]:
    """The UTF-8 lines of `file`; a byte that is not UTF-8 is a ValueError naming the file, the line and the byte
    (never replaced: it would become training text or a reference)."""
    lines = []
    for number, piece in enumerate(line_pieces(Path(file).read_bytes()), 1):
        try:
            lines.append(piece.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(undecodable_line(file, number, piece, error)) from None
    return lines


def undecodable_line(file: str | Path, number: int, line: bytes, error: UnicodeDecodeError) -> str:
    """The one line naming the file, the line and the byte that are not UTF-8, and what to do."""
    return (
        f"{file} line {number}: not UTF-8 (byte {error.start + 1} of the line, 0x{line[error.start]:02x}: "
        f"{error.reason}); convert the file, e.g. with iconv -f latin1 -t utf-8"
    )


def check_utf8(file: str | Path) -> None:
    """A ValueError, worded as `read_lines`'s, for the first byte of `file` that is not UTF-8; read a line at a time
    (a newline byte never occurs inside a UTF-8 character), for a table that another reader parses."""
    with Path(file).open("rb") as handle:
        for number, line in enumerate(handle, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(undecodable_line(file, number, line, error)) from None
