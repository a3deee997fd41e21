"""The export command speaks the asked language — ``--lang zh`` (read before parsing, so a parse error
and ``--help`` are in Chinese too), else the system's locale (LC_ALL, LC_MESSAGES, LANG). Each bad command below
fails with one Chinese line; the same command with ``--lang en`` gives the English line."""
from __future__ import annotations

import re

import pytest
from test_i18n_pages import HAN, english_sentences

from transformer_core.cli.args import language_asked
from transformer_core.text.i18n import language
from transformer_core.cli.export import main

BAD = {
    "no text": ["--text", " "],
    "a size out of range": ["--text", "a b", "--d-model", "0"],
    "an unknown option": ["--text", "a b", "--bogus"],
    "a layer that does not exist": ["--text", "a b", "--layer", "4", "--format", "csv"],
    "a head that does not exist": ["--text", "a b", "--head", "99", "--format", "csv"],
    "a sentence that does not exist": ["--text", "a b", "--batch", "3", "--format", "csv"],
    "a format against the extension": ["--text", "a b", "--format", "csv", "--out", "x.png"],
    "no format from the name": ["--text", "a b", "--out", "x.weird"],
    "png to standard output": ["--text", "a b", "--out", "-"],
    "an image too large": ["--text", "a b", "--width", "4096", "--scale", "4"],
    "toy options on MiniLM": ["--model", "minilm", "--text", "a b", "--d-model", "64"],
    "a step on the toy model": ["--text", "a b", "--step", "3"],
    "a causal token that is a word": ["--model", "causal", "--text", "a"],
    "a head to ablate that does not exist": ["--model", "causal", "--text", "5 6", "--ablate", "L9H1", "--format", "csv"],
    "no checkpoint at that step": ["--model", "causal", "--text", "5 6", "--step", "7", "--format", "csv"],
    "a missing folder": ["--text", "a b", "--out", "/no/such/folder/x.csv"],
    "too much work": ["--text", "a " * 500, "--n-heads", "64", "--d-model", "1024", "--n-layers", "12",
                      "--max-tokens", "512"],
}
# options, quotes, files, shapes and format names stay as written
NAMES = re.compile(r"--[\w-]+|'[^']*'|\"[^\"]*\"|`[^`]*`|\S+\.\w+|\[[^\]]*\]|\b(?:png|svg|html|csv|json)\b")


def run(argv, capsys) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err.strip()


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_command_fails_in_chinese(case, capsys):
    code_en, english = run(BAD[case] + ["--lang", "en"], capsys)
    code_zh, chinese = run(BAD[case] + ["--lang", "zh"], capsys)
    assert code_en == code_zh != 0 and len(chinese.splitlines()) == 1, chinese
    assert chinese.startswith("export：错误：") and HAN.search(chinese[len("export：错误："):]), chinese
    if case != "a size out of range":  # argparse's own words ("argument --d-model:") stay English, said so in Chinese
        assert not english_sentences(NAMES.sub(" ", chinese)), (english_sentences(NAMES.sub(" ", chinese)), chinese)
    assert english.startswith("export: error: ") and not HAN.search(english), english


def test_the_system_locale_chooses_when_lang_is_not_given(monkeypatch, capsys):
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert language_asked([]) == "zh" and language_asked(["--lang", "en"]) == "en"
    assert run(["--text", " "], capsys)[1].startswith("export：错误：")
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")  # LC_ALL comes first, as in gettext
    assert language_asked([]) == "en"
    assert run(["--text", " "], capsys)[1].startswith("export: error: ")


def test_help_in_chinese(capsys):
    assert main(["--lang=zh", "--help"]) == 0
    out = capsys.readouterr().out
    assert "导出注意力图" in out and "填充掩码" in out and "限制，在模型运行前检查" in out


def test_a_chinese_export_leaves_the_callers_language_as_it_was(capsys):
    """main() called from Python (a notebook, a test) sets its language for the call only."""
    assert language() == "en"
    main(["--text", "a b", "--format", "csv", "--out", "-", "--lang", "zh"])
    main(["--text", " ", "--lang", "zh"])
    assert language() == "en"


def test_a_size_error_is_chinese_after_the_chinese_prefix(capsys):
    """A new user's slip (7 heads for d_model 64) is explained in the language of --lang, not English inside 错误."""
    from transformer_core.cli.export import main

    assert main(["--text", "a b", "--n-heads", "7", "--lang", "zh"]) != 0
    err = capsys.readouterr().err
    assert "n_heads=7 不能整除 d_model=64" in err and "does not divide" not in err
