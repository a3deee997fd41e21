"""Every page and every lesson tab in Chinese: ``?lang=zh`` runs without an exception, and no visible
English sentence is left outside code and formulas. Prints the share of visible texts that hold Chinese.

Visible texts: titles, headers, Markdown, captions, notes (info, warning, error), widget labels and help texts, tab
and expander labels, in the page and the sidebar. Code (``…``, code blocks) and formulas ($…$) are taken out first;
an "English sentence" is then three or more English words in a row.
"""
from __future__ import annotations

import re

import pytest
from apptest_utils import charts, new_app

from ui.shell import nav
from ui.shell.i18n import _

TEXT = "我们今天学习注意力机制\n猫坐在垫子上"
CODE = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|```.*?```|`[^`]*`", re.S)
ENGLISH = re.compile(r"(?<![\w/.-])[A-Za-z][a-z]+(?:[ ,;:-]+[A-Za-z][a-z]+){2,}")
HAN = re.compile(r"[\u4e00-\u9fff]")
# Names and phrases that stay in English in both languages (a model's name, the example sentence, citations)
ALLOWED = ("Hi there", "et al", "Olsson et al", "Elhage et al", "BERT uncased", "Kobayashi et al")
WIDGETS = ("selectbox", "toggle", "radio", "number_input", "slider", "select_slider", "text_area", "text_input",
           "button", "checkbox", "multiselect")
# each registered page: the session key of its tabs and the tabs to open (none: the page as it opens); every page of
# nav.PAGES must be here (tests/test_page_registry.py)
PAGES = {
    "pages/explorer.py": ("step", []),
    "pages/minilm.py": ("step", []),
    "pages/causal.py": ("step", []),
    "pages/masks_lab.py": ("section", ["Causal and padding", "Two conventions", "Cached prefix", "Keys vs queries",
                                       "Dropout"]),
    "pages/pipeline.py": ("step", ["Projections", "Split heads", "Attention", "Concat and W_O", "Feed-forward",
                                   "A vs B"]),
    "pages/modern.py": ("modern_section", ["Positions", "Shared KV heads", "KV cache", "Long inputs", "Online softmax"]),
    "pages/llm.py": ("step", []),
    "pages/guided.py": ("step", []),
}


def visible_texts(at) -> list[str]:
    texts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success"):
        texts += [str(e.value) for e in getattr(at, kind)]
    for kind in WIDGETS:
        for w in getattr(at, kind):
            texts += [t for t in (getattr(w, "label", None), getattr(w, "help", None)) if t]
    texts += [str(e.label) for e in at.tabs] + [str(e.label) for e in at.expander]
    for group in at.get("button_group"):
        texts.append(group.proto.label)
        texts += [o.content for o in group.proto.options]
    return [t for t in texts if t.strip()]


LINK_TARGET = re.compile(r"\]\([^)\s]*\)")  # a Markdown link's target (#ae-steps-explorer) is not shown


def english_sentences(text: str) -> list[str]:
    prose = LINK_TARGET.sub("]", CODE.sub(" ", text))
    for name in ALLOWED:
        prose = prose.replace(name, " ")
    return ENGLISH.findall(prose)


def run_zh(page: str, tab_key: str, tab: str | None):
    at = new_app(lang="zh", text=TEXT)
    at.run()
    if page != "pages/explorer.py":
        at.switch_page(page).run()
    if tab is not None:
        at.session_state[tab_key] = _(tab, "zh")
        at.run()
    return at


CASES = [(p.script, PAGES[p.script][0], tab) for p in nav.PAGES for tab in (PAGES[p.script][1] or [None])]


@pytest.mark.parametrize("page, tab_key, tab", CASES, ids=[f"{p.split('/')[-1][:-3]}-{t or 'page'}" for p, _k, t in CASES])
def test_page_in_chinese(page, tab_key, tab, capsys):
    at = run_zh(page, tab_key, tab)
    assert not at.exception, at.exception
    texts = visible_texts(at)
    chinese = [t for t in texts if HAN.search(t)]
    with capsys.disabled():
        print(f"\n{page} {tab or ''}: {len(chinese)} of {len(texts)} visible texts hold Chinese "
              f"({len(chinese) / max(len(texts), 1):.0%})")
    assert len(texts) > 10
    left = {t[:120]: english_sentences(t) for t in texts if english_sentences(t)}
    assert left == {}


def test_the_detector_finds_english():
    assert english_sentences("Type at least one sentence in the sidebar to begin.")
    assert english_sentences("注意力 · Largest difference from the captured scores: 1e-7")
    assert not english_sentences("请先在侧边栏输入至少一个句子。 `scores = torch.matmul(Q, K)` $\\text{head} = A V$")
    assert not english_sentences("MultiHeadAttention(d_model=64, n_heads=8) 共有 **33,024 个参数**")
    assert not english_sentences("权重 **0.1163** · [每一步见下方 ↓](#ae-steps-explorer)")  # a link's target
    assert english_sentences("[see every step below](#ae-steps-explorer)")  # its visible text still counts


def test_a_cached_figure_is_not_served_in_the_other_language():
    """Figures are shared between sessions (ui/cache.per_trace): the same trace seen in English, then in Chinese,
    gives each session a figure in its own language (the language is part of the key)."""
    import json

    english = new_app(lang="en", text=TEXT)
    english.run()
    chinese = new_app(lang="zh", text=TEXT)  # new_app clears caches: build the English one again first
    english.run()
    chinese.run()
    assert not english.exception and not chinese.exception

    def tile_titles(at):  # the all-heads figure: its cache key names no title, only the view
        figs = [json.loads(c.proto.spec) for c in charts(at)]
        tiles = next(f for f in figs if f["layout"].get("meta", {}).get("stage") == "heads")
        return [a["text"] for a in tiles["layout"]["annotations"]]

    assert tile_titles(english)[:2] == ["head 0", "head 1"]
    assert tile_titles(chinese)[:2] == ["头 0", "头 1"]


def test_export_command_in_chinese(tmp_path):
    from transformer_core.cli.export import main

    out = tmp_path / "slide.html"
    assert main(["--text", TEXT.splitlines()[0], "--head", "2", "--format", "html", "--out", str(out),
                 "--lang", "zh"]) == 0
    html = out.read_text(encoding="utf-8")
    assert "注意力权重 softmax(·) —— 第 0 层，头 2" in html
    assert "玩具编码器" in html and "句子 0" in html
    from transformer_core.text.i18n import language

    assert main(["--text", "the cat", "--format", "csv", "--out", str(tmp_path / "x.csv")]) == 0
    assert language() == "en"  # the default sets English back


def test_a_download_built_on_the_click_speaks_the_pages_language():
    """The offline-HTML button's file is built when it is clicked, in a server thread outside the script run (no
    language set there: English). ``ui.i18n.later`` carries the run's language to it."""
    import json
    import threading

    from transformer_core.figures.slide import trace_html
    from transformer_core.models.toy import run_toy
    from transformer_core.nn.config import EncoderConfig
    from transformer_core.text import i18n as core
    from ui.shell.i18n import later

    trace = run_toy(["the cat sat"], EncoderConfig(d_model=16, n_heads=2))
    with core.use_language("zh"):
        build = later(lambda: trace_html(trace, ("weights",)))
    built: list[str] = []
    click = threading.Thread(target=lambda: built.append(build()))  # a fresh thread: the language's default
    click.start()
    click.join()
    page = built[0]
    assert '<html lang="zh">' in page and "填充掩码" in page  # the page's language, the settings line
    # figure titles (JSON in the page: escaped by the standard library, raw when plotly finds orjson installed)
    assert ("注意力权重" in page or json.dumps("注意力权重").strip('"') in page) and "Attention weights" not in page
