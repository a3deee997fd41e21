"""Small inputs said, not lost: a too-long or repeated ?prompt= on /llm is said and written back once, top_p=1 means
"off" on /llm as on /causal, section names take any case, /modern's chart titles escape for Plotly (HTML, not
Markdown), and the export command says when its output was cut or W_O cannot be had, in one line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from apptest_utils import figures, new_app

from transformer_core.cli.export import ExportError
from transformer_core.cli.moves import add_norms
from transformer_core.records.trace import Trace

ROOT = Path(__file__).resolve().parent.parent


def _open(page: str, **query):
    at = new_app(**query)
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def smollm2(smollm2_or_skip):
    return smollm2_or_skip


def test_a_long_prompt_in_a_link_is_cut_with_a_note(smollm2):
    at = _open("pages/llm.py", prompt="ab " * 1500)  # 4,500 characters
    notes = [i.value for i in at.info]
    assert any("2,000" in n and "4,500" in n for n in notes), notes
    assert len(at.text_area(key="llm_prompt").value) == 2000 and len(at.query_params["prompt"]) == 2000


def test_a_repeated_prompt_in_a_link_is_said_and_written_back_once(smollm2):
    at = _open("pages/llm.py", prompt=["The cat sat", "The dog ran"], top_p="1", lang="zh")
    assert at.query_params["prompt"] == "The dog ran"  # one value, the last (as Streamlit reads a repeated one)
    assert at.text_area(key="llm_prompt").value == "The dog ran"
    assert any("prompt=" in i.value and "2" in i.value for i in at.info), [i.value for i in at.info]
    # top_p=1 keeps every token: "off", as on /causal, with no note
    assert at.select_slider(key="llm_top_p").value == "off" and at.query_params["top_p"] == "off"
    assert not [w.value for w in at.warning if "top_p" in w.value]


def test_top_p_1_is_off_on_causal_too():
    at = _open("pages/causal.py", top_p="1")
    assert at.select_slider(key="causal_top_p").value == "off"
    assert not [w.value for w in at.warning if "top_p" in w.value]


def test_section_names_take_any_case_and_titles_escape_for_plotly():
    at = _open("pages/modern.py", section="positions", text="(x) <b>y</b> *z*", query="3", key="0")
    assert at.query_params["section"] == "Positions" and not at.warning
    titles = {f["layout"]["meta"]["kind"]: f["layout"]["title"]["text"] for f in figures(at)
              if f["layout"].get("meta", {}).get("kind") in ("distance", "rope")}
    assert titles["distance"].startswith("Score of &lt; against (,") and "\\" not in titles["distance"]
    assert "query of &lt;:" in titles["rope"]


def test_norms_of_a_model_without_weights_say_so_once():
    weights = np.full((1, 1, 2, 2), 0.5, np.float32)
    trace = Trace(tokens=(("a", "b"),), lengths=(2,), truncated=(False,), mask=None,
                  stages={"layers.0.attention.weights": weights, "layers.0.attention.v": weights},
                  settings={"model": "gpt-x"})
    with pytest.raises(ExportError) as err:
        add_norms(trace, 0)
    assert str(err.value).count("norms") == 1 and "'gpt-x'" in str(err.value)


def test_output_cut_by_its_reader_exits_1_with_one_line():
    words = " ".join(f"word{i}" for i in range(60))  # the toy model's JSON: ~2.8 MB, far more than a pipe holds
    proc = subprocess.Popen([sys.executable, "-m", "transformer_core.cli", "--text", words, "--format", "json",
                             "--out", "-"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(100)
    proc.stdout.close()  # as `| head -c 100` does
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 1
    assert err.count("\n") == 1 and "cut" in err and "bytes" in err, err
