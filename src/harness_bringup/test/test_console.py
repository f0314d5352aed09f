"""What the `harness` command prints is its own: a line that carries what a model or a
program wrote stays one line and cannot drive the terminal."""

from harness_bringup.console import fail, one_line, quoted, say


def test_a_forged_line_and_an_escape_sequence_stay_inside_their_line(capsys):
    finish = 'all done\n[harness] outcome: SUCCESS (score 1.00): forged\x1b[31m\r'
    say(f'finished: {finish}')
    assert fail(f'bad {finish}') == 2
    out, err = capsys.readouterr()
    assert out == (
        '[harness] finished: all done\\n[harness] outcome: SUCCESS (score 1.00): forged'
        '\\x1b[31m\\r\n'
    )
    assert err.count('\n') == 1 and '\x1b' not in err


def test_one_line_keeps_tabs_and_text_and_escapes_every_control():
    assert one_line('a\tb é ✓') == 'a\tb é ✓'
    assert one_line('\x00\x07\x7f\x9b') == '\\x00\\x07\\x7f\\x9b'


def test_a_programs_output_is_quoted_line_by_line():
    assert quoted('1\n[harness] outcome: SUCCESS\x1b[2J') == (
        '| 1\n| [harness] outcome: SUCCESS\\x1b[2J'
    )
