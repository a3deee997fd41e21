"""AppTest of the explorer page: runs cleanly, controls and URL parameters change the figures."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from apptest_utils import charts, figures, focus, heatmap_z, new_app, tiles


def run(**query):
    at = new_app(**query)
    at.run()
    assert not at.exception, at.exception
    return at


def test_default_page_shows_one_focused_head_and_every_head_tiled_in_two_charts():
    at = run()
    assert len(figures(at)) == 2  # the browser pays per chart: never one per head
    meta = focus(at)["layout"]["meta"]
    assert (meta["stage"], meta["head"]) == ("weights", 0)
    fig, z = tiles(at, "weights")
    assert z.shape[0] == 8
    np.testing.assert_allclose(z[0], heatmap_z(focus(at)), atol=1e-7)  # the tile is the focused head
    assert not at.warning


@pytest.mark.parametrize("stage", ["q", "k", "v", "scores", "masked_scores", "weights", "context"])
def test_every_stage_can_be_focused_from_the_url_and_the_control(stage):
    at = run(text="the cat sat", stage=stage, head="3")
    meta = focus(at)["layout"]["meta"]
    assert (meta["stage"], meta["head"]) == (stage, 3)
    _, z = tiles(at, stage)
    np.testing.assert_allclose(z[3], heatmap_z(focus(at)), atol=1e-7)
    other = "scores" if stage != "scores" else "weights"
    at.segmented_control(key="explorer_stage").set_value(other).run()
    assert focus(at)["layout"]["meta"]["stage"] == other
    assert at.query_params["stage"] == other and at.query_params["head"] == "3"


def test_clicking_a_tile_focuses_its_head_and_frames_its_tile():
    at = run(text="the cat sat on the mat")
    before = tiles(at, "weights")[0]
    at.session_state["explorer_head"] = 5  # what the tile-click callback sets
    at.run()
    assert focus(at)["layout"]["meta"]["head"] == 5 and at.query_params["head"] == "5"
    after = tiles(at, "weights")[0]
    # (was: tiles byte-identical; now the focused head is framed, so only the frame moves)
    assert (before["layout"]["meta"]["focus"], after["layout"]["meta"]["focus"]) == (0, 5)
    assert before["data"] == after["data"]  # same cells: only the frame moved
    (frame,) = after["layout"]["shapes"]
    meta = after["layout"]["meta"]
    (m_r, m_c), (g_r, g_c) = meta["tile"], meta["gutter"]
    r, c = divmod(5, meta["n_cols"])
    assert frame["x0"] < c * (m_c + g_c) <= c * (m_c + g_c) + m_c - 1 < frame["x1"]  # around head 5's tile only
    assert frame["y0"] < r * (m_r + g_r) <= r * (m_r + g_r) + m_r - 1 < frame["y1"]
    assert frame["x1"] < (c + 1) * (m_c + g_c) and frame["x0"] > (c - 1) * (m_c + g_c) + m_c - 1


def test_weights_scale_is_zero_to_largest_visible_weight_unless_fixed():
    at = run(text="a b c d e f g h")
    heat = focus(at)["data"][0]
    _, z = tiles(at, "weights")
    assert heat["zmin"] == 0 and heat["zmax"] == pytest.approx(float(np.nanmax(z)), rel=1e-6) and heat["zmax"] < 1
    at = run(text="a b c d e f g h", scale="fixed")
    assert focus(at)["data"][0]["zmax"] == 1.0
    assert "fixed 0 – 1" in focus(at)["layout"]["title"]["text"]
    assert any(c.value.startswith("All 8 heads, same colours.") for c in at.caption)
    # row by row: only the large head; the tiles' caption says they are not
    at = run(text="a b c d e f g h", scale="row")
    assert any(c.value.startswith("All 8 heads, one colour range for all (not row by row).") for c in at.caption)


def test_masked_equal_to_raw_is_said_in_one_line():
    at = run(text="a b c", stage="masked_scores", causal="0")
    assert any("masked scores = raw scores" in c.value for c in at.caption)
    at = run(text="a b c", stage="masked_scores", causal="1")
    assert not any("masked scores = raw scores" in c.value for c in at.caption)


@pytest.mark.parametrize("query", [{"stage": "nope"}, {"head": "99"}, {"head": "x"}, {"scale": "big"},
                                   {"sentence": "7"}, {"all": "2"}])
def test_malformed_view_parameters_fall_back_with_a_note(query):
    at = run(**query)
    assert any(next(iter(query)) in w.value for w in at.warning)
    assert focus(at)["layout"]["meta"]["head"] == 0


def test_causal_makes_weights_zero_above_diagonal_and_rows_sum_to_one():
    at = run(text="the cat saw the dog", causal="1", n_heads="4")
    _, heads = tiles(at, "weights")
    assert len(heads) == 4
    for z in heads:  # blocked cells are blank (NaN here), never a number
        upper = np.triu_indices(5, k=1)
        assert np.isnan(z[upper]).all()
        np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-5)
        assert np.isfinite(z[np.tril_indices(5)]).all()


def test_toggling_causal_in_the_sidebar_changes_the_figures():
    at = run(text="the cat saw the dog")
    before = heatmap_z(focus(at))
    assert np.isfinite(before).all()
    at.sidebar.toggle(key="shared_causal").set_value(True).run()
    after = heatmap_z(focus(at))
    assert np.isnan(after[0, 1:]).all() and after[0, 0] == pytest.approx(1.0)
    assert at.query_params["causal"] == "1"


def test_n_heads_control_sets_the_number_of_heads_and_only_divisors_are_offered():
    at = run(d_model="48")
    box = at.sidebar.selectbox(key="shared_n_heads")
    assert list(box.options) == ["1", "2", "3", "4", "6", "8", "12", "16"]
    box.set_value(3).run()
    assert len(tiles(at, "weights")[1]) == 3
    assert at.query_params["n_heads"] == "3"


def test_changing_d_model_keeps_n_heads_valid_with_a_note():
    at = run(d_model="64", n_heads="16")
    at.sidebar.selectbox(key="shared_d_model").set_value(96).run()
    assert not at.exception
    assert at.session_state["shared_n_heads"] in (1, 2, 3, 4, 6, 8, 12, 16)
    assert 96 % at.session_state["shared_n_heads"] == 0


def test_padding_hides_pad_keys_of_the_short_sentence():
    at = run(text="one two three four\nshort", padding="1")
    at.selectbox(key="explorer_batch").set_value(1).run()
    z = heatmap_z(focus(at))
    assert z.shape == (4, 4)
    assert np.isnan(z[:, 1:]).all() and np.allclose(z[:, 0], 1.0)


@pytest.mark.parametrize("text", [
    "", "   \n  ", "x", "a" * 2000, "😀 👍🏽 👨‍👩‍👧 猫が好き 我爱猫", "مرحبا بالعالم שלום עולם",
    "<script>alert(1)</script> <b>bold</b> &amp;", "word " * 400,
])
def test_awkward_text_never_raises_or_shows_nan(text):
    at = run(text=text)
    if not text.strip():
        assert "Type at least one sentence" in at.info[0].value and not figures(at)
        return
    for stage in ("scores", "context"):
        at.segmented_control(key="explorer_stage").set_value(stage).run()
        assert not at.exception
        assert np.isfinite(heatmap_z(focus(at))).all()  # nothing blank before masking
    at.segmented_control(key="explorer_stage").set_value("weights").run()
    z = heatmap_z(focus(at))  # blank (NaN) = blocked; every shown row sums to 1
    shown = ~np.isnan(z).all(axis=1)
    np.testing.assert_allclose(np.nansum(z[shown], axis=1), 1.0, atol=1e-5)
    for fig in figures(at):  # no bare NaN/Infinity JSON values (base64 array bytes may contain the letters)
        assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)\b", json.dumps(fig))


def test_html_tokens_are_escaped_in_tick_labels():
    at = run(text="<b>bold</b>")
    labels = focus(at)["layout"]["yaxis"]["ticktext"]
    assert "0: &lt;" in labels and not any("<b>" in t for t in labels)


def test_causal_and_padding_leave_all_padding_query_rows_marked_not_nan():
    at = run(text="a b c\nz", causal="1", padding="1")
    at.selectbox(key="explorer_batch").set_value(1).run()
    z = heatmap_z(focus(at))
    assert np.allclose(z[:, 0], 1.0) and np.isnan(z[:, 1:]).all()


@pytest.mark.parametrize("query, note", [
    ({"d_model": "abc"}, "d_model=abc"),
    ({"n_heads": "5"}, "n_heads=5"),
    ({"causal": "maybe"}, "causal=maybe"),
    ({"seed": "-3"}, "seed=-3"),
])
def test_malformed_url_parameters_fall_back_with_a_visible_note(query, note):
    at = run(**query)
    assert any(note in w.value.replace("\\", "") for w in at.warning)  # notes are Markdown-escaped
    assert focus(at)


def test_url_parameters_set_the_controls():
    at = run(text="hello world", d_model="32", n_heads="2", causal="1", padding="0", seed="7")
    ss = at.session_state
    assert (ss["shared_text"], ss["shared_d_model"], ss["shared_n_heads"], ss["shared_causal"],
            ss["shared_padding"], ss["shared_seed"]) == ("hello world", 32, 2, True, False, 7)
    assert len(tiles(at, "weights")[1]) == 2


def test_seed_changes_the_numbers():
    a = heatmap_z(focus(run(text="a b c", seed="1", stage="scores")))
    b = heatmap_z(focus(run(text="a b c", seed="2", stage="scores")))
    assert not np.allclose(a, b)


def test_every_stage_offers_csv_and_the_page_offers_json_and_html():
    at = run(text="the cat saw the cat", tables="1")  # in the box of tokens and downloads, open
    labels = [b.proto.label for b in at.get("download_button")]
    assert sum("CSV" in label for label in labels) == 1  # the shown stage, every head
    assert any("JSON" in label for label in labels) and any("HTML" in label for label in labels)


def test_a_file_built_on_the_click_does_not_rerun_the_page():
    """CI once saw the CSV button spin forever when clicked as the box opened: Streamlit answers a deferred
    download through the session's message queue, and the click's rerun clears that queue when it starts. So
    the three files built on the click (CSV, JSON, HTML) do not rerun; ui.shell.downloads decides it."""
    at = run(text="the cat saw the cat", tables="1")
    buttons = {b.proto.label: b.proto for b in at.get("download_button")}
    assert len(buttons) == 3
    for label, proto in buttons.items():
        assert proto.deferred_file_id and not proto.url, label  # built on the click
        assert proto.ignore_rerun, label


def test_camera_button_format_follows_the_sidebar_choice():
    at = run(text="a b")
    at.sidebar.radio(key="shared_image_format").set_value("svg").run()
    chart = charts(at)[0].proto
    assert '"format": "svg"' in chart.config.replace('":"', '": "') and "weights" in json.dumps(
        [json.loads(c.proto.config) for c in charts(at)])


def test_the_closed_box_of_tokens_and_downloads_sends_no_table_until_opened():
    """A collapsed expander's data grid is not built or sent (a first visit loaded ~1.2 MB of grid code
    for it); opening the box reruns the page with it, and ``?tables=1`` keeps it open (a rerun, a copied link)."""
    at = run(text="the cat saw the cat")
    box = next(e for e in at.expander if e.label.startswith("Tokens, downloads"))
    assert at.query_params["tables"] == "0" and not at.get("download_button")
    assert not [d for d in at.dataframe if list(d.value.index[:1]) == ["sentence 0"]]
    assert not at.dataframe  # none at all on a first visit: the explain panel's first step is a Markdown table
    assert at.get("file_uploader")  # drawn closed too: an uploaded trace stays while the box is closed
    at.session_state["explorer_tables"] = True  # what opening the box does
    at.run()
    assert not at.exception and at.query_params["tables"] == "1" and box.label
    assert [d for d in at.dataframe if list(d.value.index[:1]) == ["sentence 0"]] and at.get("download_button")
    at = run(text="the cat saw the cat", tables="1")  # a link with the box open
    assert [d for d in at.dataframe if list(d.value.index[:1]) == ["sentence 0"]]


def test_the_focused_head_is_sent_before_the_tiles_and_the_explain_panel(monkeypatch):
    """The focused head's chart is drawn (so sent) first, before the tiles and the explain panel; each is
    placed by its column, not by the order the elements arrive in."""
    from ui.parts import explain_panel, head_view

    order = []
    chart = head_view.chart
    monkeypatch.setattr(head_view, "chart", lambda fig, key, **kw: (order.append(key), chart(fig, key=key, **kw))[1])
    first_line, show = explain_panel.first_line, explain_panel.show
    monkeypatch.setattr(explain_panel, "first_line", lambda *a, **kw: (order.append("answer"), first_line(*a, **kw))[1])
    monkeypatch.setattr(explain_panel, "show", lambda *a, **kw: (order.append("explain"), show(*a, **kw))[1])
    run(text="the cat saw the cat")
    assert order == ["explorer_focus", "answer", "explorer_tiles_weights_0", "explain"], order


def test_a_batch_of_url_bindings_changes_the_address_once(monkeypatch):
    """Streamlit sends a message for every change of ``st.query_params``; the bindings inside
    ``url.batch()`` write theirs in one update (a first visit of the explorer sent 17 such messages)."""
    from streamlit.runtime.state.query_params import QueryParams

    sent = []
    send = QueryParams._send_query_param_msg
    monkeypatch.setattr(QueryParams, "_send_query_param_msg",
                        lambda self: (sent.append(dict(self._query_params)), send(self))[1])
    at = new_app(text="the cat sat", stage="scores").run()
    assert not at.exception
    assert at.query_params["stage"] == "scores" and at.query_params["head"] == "0" and at.query_params["q"] == "0"
    # the head view's stage, head, scale and all come in one message, the explained cell's q and k in one
    assert not any(("head" in a) != ("scale" in a) for a in sent), sent
    assert not any(("q" in a) != ("k" in a) for a in sent), sent
    assert len(sent) <= 8, len(sent)


@pytest.mark.parametrize("stage", ["q", "k", "v", "context", "scores", "masked_scores", "weights"])
def test_the_answer_says_outlined_only_where_the_focused_heatmap_frames_the_cell(stage):
    at = run(stage=stage, q="2", k="1")
    framed = [s for s in focus(at)["layout"].get("shapes", []) if s.get("name") == "chosen cell"]
    answer = [m for m in at.markdown if "→ k" in m.value]
    assert len(answer) == 1 and "weight **0.1359**" in answer[0].value  # the same number on every stage
    assert len(framed) == (stage not in ("q", "k", "v", "context"))
    assert ("(outlined)" in answer[0].value) == bool(framed)
    assert ("outlined" in answer[0].help) == bool(framed)
    # the explain panel's note says a click on the large heatmap picks a cell only where it is query × key
    notes = [c.value for c in at.caption if "address bar now opens this very number" in c.value]
    assert len(notes) == 1 and notes[0].startswith("Or click a cell") == bool(framed), notes


@pytest.mark.parametrize("word, opened", [("yes", True), ("True", True), (" on", True), ("no", False),
                                          ("OFF", False), ("false", False)])
def test_the_on_off_words_read_the_same_for_causal_and_for_every_other_choice(word, opened):
    """The two readers of an on/off URL word: the sidebar's settings (?causal=) and bind_url's (the lazy boxes, ?all=).
    The page itself is run below for one word each way (three runs per word)."""
    from ui.shell.controls import parse_query_params
    from ui.shell.url import BOOL_ALIASES, match

    values, notes = parse_query_params({"causal": word})
    assert values["causal"] is opened and not notes
    assert match(word, [True, False], aliases=BOOL_ALIASES) is opened
    assert match(word, [False, True], aliases=BOOL_ALIASES) is opened


@pytest.mark.parametrize("word, opened", [(" on", True), ("OFF", False)])  # a space, a case: the six words above
def test_a_lazy_box_accepts_the_words_causal_accepts_and_writes_1_or_0(word, opened):
    causal = run(text="the cat saw the cat", causal=word)
    assert not causal.warning and causal.query_params["causal"] == ("1" if opened else "0")
    at = run(text="the cat saw the cat", tables=word)
    assert not at.warning, [w.value for w in at.warning]
    assert at.query_params["tables"] == ("1" if opened else "0")
    assert bool([d for d in at.dataframe if list(d.value.index[:1]) == ["sentence 0"]]) == opened
    every = run(text="the cat saw the cat", all=word)  # every on/off choice, not only the boxes (an attack's find)
    assert not every.warning and every.query_params["all"] == ("1" if opened else "0")


def test_a_repeated_parameter_is_written_back_once_and_a_long_one_is_cut_with_an_ellipsis():
    at = run(text="the cat", tables=["1", "0"])  # ?tables=1&tables=0: the last wins, and the URL says it once
    assert at.query_params["tables"] in ("0", ["0"]) and not at.warning, at.query_params["tables"]
    at = run(text="the cat", stage="x" * 60)
    (note,) = [w.value for w in at.warning]
    assert "stage=" + "x" * 40 + "…" in note


def test_chinese_calls_a_blocked_cell_blocked_and_the_stage_button_after_masking():
    """One English word "masked", two Chinese ones: the stage button 掩码后, a blocked cell's hover 已屏蔽."""
    at = run(lang="zh", causal="1", stage="weights", text="the cat sat")
    assert "掩码后" in at.segmented_control(key="explorer_stage").options
    overlay = next(t for t in focus(at)["data"] if t.get("name") == "已屏蔽")
    assert "已屏蔽" in overlay["hovertemplate"] and "掩码后" not in overlay["hovertemplate"]
    assert heatmap_z({"data": [overlay]})[0, 1] == 1 and np.isnan(heatmap_z({"data": [overlay]})[1, 0])  # causal


def test_a_refused_box_value_is_said_above_the_figures():
    """The box of tokens and downloads sits at the bottom of the page; a refused ``?tables=`` was said there, out of
    view on arrival (an attack's find). It is said above the figures, before the first chart."""
    at = run(text="the cat", tables="maybe")

    def walk(node):
        yield node
        for child in getattr(node, "children", {}).values():
            yield from walk(child)

    kinds = [getattr(n, "type", "") for n in walk(at.main)]
    assert [w.value for w in at.warning] == ["URL parameter tables=maybe ignored (choose one of 0, 1); using 0."]
    assert kinds.index("warning") < kinds.index("bidi_component")  # our chart element
