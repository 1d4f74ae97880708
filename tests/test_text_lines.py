"""Text files as lines, as `wc -l` counts them: the one rule of the command line's input and the recipes' corpora."""

import pytest

from hf_vanilla.text_lines import line_pieces, read_lines


def test_lines_split_at_newline_only_with_a_windows_line_end_and_a_byte_order_mark_dropped(tmp_path):
    data = "\ufeffone\u2028still one\r\ntwo\fstill two\x85\rthree\u2029\n\nfive".encode()
    file = tmp_path / "text"
    file.write_bytes(data)
    assert read_lines(file) == ["one\u2028still one", "two\fstill two\x85\rthree\u2029", "", "five"]
    assert len(read_lines(file)) == data.count(b"\n") + 1  # no newline after "five": `wc -l` says 3, a line more
    assert len("one\u2028still one\r\ntwo\fstill two\n".splitlines()) == 4  # what the recipes read before
    assert line_pieces(b"a\nb\n") == [b"a", b"b"] and line_pieces(b"") == []


def test_a_byte_that_is_not_utf8_is_named_by_file_line_and_byte(tmp_path):
    file = tmp_path / "train.de"
    file.write_bytes(b"erste Zeile\nzweite\ncaf\xe9 au lait\n")
    with pytest.raises(ValueError) as refused:
        read_lines(file)
    assert str(refused.value) == (
        f"{file} line 3: not UTF-8 (byte 4 of the line, 0xe9: invalid continuation byte); convert the file, e.g. "
        "with iconv -f latin1 -t utf-8"
    )


def test_a_translation_table_with_a_bad_byte_is_refused_with_the_same_line(tmp_path):
    from hf_vanilla.data.corpora import load_translation_corpus

    table = tmp_path / "train.jsonl"
    table.write_bytes(b'{"translation": {"en": "a", "de": "b"}}\n{"translation": {"en": "caf\xe9", "de": "c"}}\n')
    with pytest.raises(ValueError, match=rf"^{table} line 2: not UTF-8 \(byte 28 of the line, 0xe9: invalid "):
        load_translation_corpus(str(table))
