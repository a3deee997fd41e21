"""Export: JSON/CSV/HTML serialisation and the ``attention-export`` command."""
from __future__ import annotations

import io
import json
import pathlib
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transformer_core import EncoderConfig, capture, run_toy  # noqa: E402
from transformer_core.cli import export  # noqa: E402
from transformer_core.figures import stage as figures  # noqa: E402
from transformer_core.records import serialize  # noqa: E402
from transformer_core.nn.embedding import embed_tokens  # noqa: E402
from transformer_core.nn.encoder import Encoder  # noqa: E402
from transformer_core.text.tokenize import batch_tokens  # noqa: E402
from transformer_core.models.toy import build_mask  # noqa: E402

CONFIG = EncoderConfig(d_model=16, n_heads=4, d_ff=32, n_layers=2, seed=3)
SENTENCES = ["the cat saw the cat", "a dog"]  # repeated tokens; the second is padded
CHROMIUM = export.find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (PATH / BROWSER_PATH): "
                                    "PNG/SVG export cannot be tested here")


@pytest.fixture(scope="module")
def trace():
    return run_toy(SENTENCES, CONFIG, causal=True, padding=True)


def bits(a: np.ndarray) -> np.ndarray:
    """float32 bit patterns: equality here is exact (−0.0, inf and NaN included)."""
    assert a.dtype == np.float32
    return np.ascontiguousarray(a).view(np.uint32)


def strict_loads(text: str):
    def reject(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=reject)


# ---------------------------------------------------------------- JSON

def test_json_holds_every_stage_exactly(trace):
    doc = strict_loads(serialize.trace_to_json(trace))
    assert doc["format"] == serialize.FORMAT
    assert list(doc["stages"]) == list(trace.stages)  # every captured stage, in capture order
    for name, array in trace.stages.items():
        entry = doc["stages"][name]
        assert entry["shape"] == list(array.shape) and entry["dtype"] == "float32"
        decoded = np.array(entry["data"], dtype=np.float32)
        assert decoded.shape == array.shape
        np.testing.assert_array_equal(bits(decoded), bits(array), err_msg=name)
    assert doc["tokens"] == [list(t) for t in trace.tokens]
    assert doc["lengths"] == [5, 2] and doc["truncated"] == [False, False]
    assert np.array_equal(np.array(doc["mask"], dtype=bool), trace.mask)
    assert doc["settings"]["seed"] == 3 and doc["settings"]["n_heads"] == 4 and doc["settings"]["causal"] is True


def test_json_writes_minus_inf_as_string(trace):
    doc = strict_loads(serialize.trace_to_json(trace))
    masked = doc["stages"]["layers.0.attention.masked_scores"]["data"]
    assert masked[0][0][0][1] == "-inf"  # causal: query 0 may not see key 1
    assert masked[1][0][0][3] == "-inf"  # padding: key 3 of "a dog" is [PAD]
    assert np.isneginf(trace.stages["layers.0.attention.masked_scores"]).any()


def test_json_equals_a_fresh_capture():
    """Same as what hooks.capture hands back for the same model run (run_toy is deterministic)."""
    text = serialize.trace_to_json(run_toy(SENTENCES, CONFIG, causal=True, padding=True))
    batch = batch_tokens(SENTENCES, "word", 64)
    model = Encoder(CONFIG).eval()
    x = embed_tokens(batch.tokens, CONFIG.d_model, CONFIG.seed)
    with torch.no_grad(), capture(model) as stages:
        model(x, build_mask(batch, causal=True, padding=True))
    doc = strict_loads(text)
    assert set(stages) <= set(doc["stages"]) and len(stages) >= 2 * 10
    for name, tensor in stages.items():
        decoded = np.array(doc["stages"][name]["data"], dtype=np.float32)
        np.testing.assert_array_equal(bits(decoded), bits(tensor.numpy()), err_msg=name)


def test_json_round_trip_reproduces_the_trace(trace):
    back = serialize.trace_from_json(serialize.trace_to_json(trace))
    assert back.tokens == trace.tokens and back.lengths == trace.lengths and back.truncated == trace.truncated
    assert back.mask.dtype == bool and np.array_equal(back.mask, trace.mask)
    assert back.settings == trace.settings
    assert list(back.stages) == list(trace.stages)
    for name, array in trace.stages.items():
        assert back.stages[name].dtype == np.float32
        np.testing.assert_array_equal(bits(back.stages[name]), bits(array), err_msg=name)
    # the rebuilt trace drives the same figures
    a = figures.stage_figure(trace, "weights", batch=1, head=2, layer=1)
    b = figures.stage_figure(back, "weights", batch=1, head=2, layer=1)
    assert a.to_json() == b.to_json()


def test_json_round_trip_without_mask_and_with_nan():
    """Writing is lossless (NaN and inf as strings, −0.0 kept); reading accepts only what a forward pass
    captures: −0.0 comes back bit for bit, NaN and inf are refused with their position."""
    t = run_toy(["hello world"], EncoderConfig(d_model=8, n_heads=2, d_ff=16), padding=False)
    assert t.mask is None
    stages = dict(t.stages)
    odd = stages["layers.0.attention.scores"].copy()
    odd.flat[2] = -0.0
    stages["layers.0.attention.scores"] = odd
    t = type(t)(tokens=t.tokens, lengths=t.lengths, truncated=t.truncated, mask=None, stages=stages,
                settings=t.settings)
    back = serialize.trace_from_json(serialize.trace_to_json(t))
    assert back.mask is None
    np.testing.assert_array_equal(bits(back.stages["layers.0.attention.scores"]), bits(odd))
    odd = odd.copy()
    odd.flat[0], odd.flat[1] = np.nan, np.inf
    stages["layers.0.attention.scores"] = odd
    t = type(t)(tokens=t.tokens, lengths=t.lengths, truncated=t.truncated, mask=None, stages=stages,
                settings=t.settings)
    text = serialize.trace_to_json(t)
    assert '"nan"' in text and '"inf"' in text
    with pytest.raises(ValueError, match=r"^stage 'layers.0.attention.scores' holds NaN at \[0, 0, 0, 0\]; every"):
        serialize.trace_from_json(text)


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", "not a trace document"),
    ('{"format": "something-else"}', "not a trace document"),
    ("{oops", "not JSON"),
    ('{"format": "attention-explorer-trace/1", "tokens": []}', "missing"),
])
def test_trace_from_json_rejects_other_documents(text, message):
    with pytest.raises(ValueError, match=message):
        serialize.trace_from_json(text)


# ---------------------------------------------------------------- CSV

def read_csv(text: str, index_cols=1) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), index_col=list(range(index_cols)), keep_default_na=False,
                       na_values=[""])


def test_csv_labels_keep_repeated_tokens_apart(trace):
    text = serialize.matrix_to_csv(trace, "weights", batch=0, head=1, layer=0)
    assert text.splitlines()[0] == "query \\ key,0: the,1: cat,2: saw,3: the,4: cat"
    frame = read_csv(text)
    labels = ["0: the", "1: cat", "2: saw", "3: the", "4: cat"]
    assert list(frame.index) == labels and list(frame.columns) == labels
    weights = trace.stage("weights", 0)[0, 1]
    visible = trace.visible(0)
    np.testing.assert_allclose(frame.to_numpy()[visible], weights[visible], rtol=1e-6, atol=0)
    assert frame.isna().to_numpy().tolist() == (~visible).tolist()  # causal: blocked cells are empty


def test_csv_blocks_padding_keys_but_keeps_raw_scores(trace):
    masked = read_csv(serialize.matrix_to_csv(trace, "masked_scores", batch=1, head=0, layer=1))
    assert list(masked.index) == ["0: a", "1: dog", "2: [PAD]", "3: [PAD]", "4: [PAD]"]
    assert masked.iloc[:, 2:].isna().all().all()  # [PAD] keys blocked
    assert masked.iloc[1, :2].notna().all()
    scores = read_csv(serialize.matrix_to_csv(trace, "scores", batch=1, head=0, layer=1))
    assert scores.notna().all().all()  # before masking: every cell has a number
    np.testing.assert_allclose(scores.to_numpy(), trace.stage("scores", 1)[1, 0], rtol=1e-6)


def test_csv_feature_stages_have_dimension_columns(trace):
    text = serialize.matrix_to_csv(trace, "q", batch=0, head=3, layer=0)
    frame = read_csv(text)
    assert text.startswith("position \\ dimension,d0,d1,d2,d3\n")
    assert list(frame.columns) == [f"d{j}" for j in range(CONFIG.d_k)]
    assert list(frame.index)[3] == "3: the"
    np.testing.assert_allclose(frame.to_numpy(), trace.stage("q", 0)[0, 3], rtol=1e-6)


def test_csv_all_heads_are_stacked(trace):
    frame = read_csv(serialize.matrix_to_csv(trace, "context", batch=0, head=None, layer=1), index_cols=2)
    assert frame.shape == (CONFIG.n_heads * 5, CONFIG.d_k)
    assert list(frame.index.get_level_values(0).unique()) == list(range(CONFIG.n_heads))
    assert frame.index[5 * 2 + 3] == (2, "3: the")


def test_csv_rejects_bad_selection(trace):
    with pytest.raises(KeyError):
        serialize.matrix_to_csv(trace, "nope", 0, 0, 0)
    with pytest.raises(IndexError, match="head 4 out of range"):
        serialize.matrix_to_csv(trace, "weights", 0, 4, 0)
    with pytest.raises(IndexError, match="batch 2 out of range"):
        serialize.matrix_to_csv(trace, "weights", 2, 0, 0)


# ---------------------------------------------------------------- HTML

def assert_offline_html(text: str) -> None:
    assert "<script src=\"http" not in text and "<script src='http" not in text
    assert "cdn.plot.ly" not in text.split("</head>")[0]
    assert "plotly" in text.lower() and "Plotly.newPlot" in text


def test_figures_to_html_embeds_plotly_once(trace):
    figs = export.head_figures(trace, "weights", batch=0, layer=0)
    text = serialize.figures_to_html(figs, "weights <all heads>")
    assert_offline_html(text)
    assert text.count("Plotly.newPlot") == CONFIG.n_heads
    one = serialize.figures_to_html(figs[:1], "one")
    assert len(text) - len(one) < 1_000_000  # plotly.js (~4.6 MB) is inlined once, not per figure
    assert "<title>weights &lt;all heads&gt;</title>" in text


def test_cli_html(tmp_path, capsys):
    out = tmp_path / "page.html"
    assert export.main(["--text", "the cat saw the cat", "--stage", "masked_scores", "--causal", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    text = out.read_text(encoding="utf-8")
    assert_offline_html(text)
    assert text.count("Plotly.newPlot") == 8  # default: every head
    flat = text.replace(" ", "")
    assert '"width":null,"height":null,"scale":2' in flat  # the camera saves each slide as drawn, at 2×
    assert flat.count('"width":1152,"height":648') == 8  # each head one 16:9 slide (figures/slide.py)


# ---------------------------------------------------------------- CLI: data formats, names, batch

def test_cli_default_name_and_csv(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert export.main(["--text", "the cat saw the cat", "--head", "3", "--causal", "--format", "csv"]) == 0
    name = figures.figure_filename("weights", 3, 0, ("the", "cat", "saw", "the", "cat"), "csv")
    assert (tmp_path / name).exists() and capsys.readouterr().out.strip() == name
    frame = read_csv((tmp_path / name).read_text(encoding="utf-8"))
    assert list(frame.index)[3] == "3: the"


def test_cli_json_batch_from_repeated_and_multiline_text(tmp_path):
    out = tmp_path / "t.json"
    assert export.main(["--text", "the cat sat\n\na dog ran", "--text", "birds fly", "--seed", "5",
                        "--d-model", "32", "--n-heads", "2", "--out", str(out)]) == 0
    back = serialize.trace_from_json(out.read_text(encoding="utf-8"))
    assert [t[:n] for t, n in zip(back.tokens, back.lengths)] == [("the", "cat", "sat"), ("a", "dog", "ran"),
                                                                 ("birds", "fly")]
    assert back.settings["seed"] == 5 and back.n_heads == 2
    expected = run_toy(["the cat sat", "a dog ran", "birds fly"], EncoderConfig(d_model=32, n_heads=2, d_ff=128, seed=5))
    for name, array in expected.stages.items():
        np.testing.assert_array_equal(bits(back.stages[name]), bits(array))


def test_cli_out_folder_uses_default_name(tmp_path):
    assert export.main(["--text", "a dog ran", "--stage", "v", "--head", "0", "--batch", "0", "--format", "csv",
                        "--out", str(tmp_path)]) == 0
    assert (tmp_path / "v_L0_H0_a-dog-ran.csv").exists()


def test_help_exits_zero(capsys):
    assert export.main(["--help"]) == 0
    assert "--stage" in capsys.readouterr().out


# ---------------------------------------------------------------- CLI: bad arguments

BAD = [
    (["--text", "the cat", "--n-heads", "5"], "does not divide", 2),
    (["--text", "the cat", "--stage", "attention"], "invalid choice", 2),
    (["--text", "the cat", "--head", "8"], "--head 8 out of range", 2),
    (["--text", "the cat", "--head", "-1"], "out of range", 2),
    (["--text", "the cat", "--layer", "1"], "--layer 1 out of range", 2),
    (["--text", "the cat", "--batch", "1"], "--batch 1 out of range", 2),
    (["--text", ""], "empty text", 2),
    (["--text", "  \n \n"], "empty text", 2),
    ([], "empty text", 2),
    (["--text", "!!!"], None, 0),  # punctuation is a token: fine
    (["--text", "the cat", "--out", "plot.txt"], "cannot tell the format", 2),
    (["--text", "the cat", "--format", "svg", "--out", "plot.png"], "contradicts", 2),
    (["--text", "the cat", "--d-model", "many"], "invalid int value", 2),
    (["--text", "the cat", "--width", "0", "--format", "html"], "0 is outside 16..4,096", 2),
    (["--text", "the cat", "--model", "gpt"], "invalid choice", 2),
    (["--text", "the cat", "--model", "minilm", "--n-heads", "4"], "only to --model toy", 2),
    (["--text", "the cat", "--format", "csv", "--out", "{missing}/x.csv"], "does not exist", 1),
]


@pytest.mark.parametrize("argv, message, code", BAD)
def test_bad_arguments_give_one_clear_line(argv, message, code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{missing}", str(tmp_path / "missing")) for a in argv]
    if message is None:
        argv += ["--format", "csv"]
    assert export.main(argv) == code
    err = capsys.readouterr().err
    if message is None:
        assert err == ""
        return
    assert err.startswith("export: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_output_paths(tmp_path):
    folder = tmp_path / "taken.csv"
    folder.mkdir()
    with pytest.raises(OSError, match="it is a folder"):
        export.check_writable(folder)
    assert export.resolve_output(str(tmp_path / "x.JSON"), None) == (tmp_path / "x.JSON", "json")
    assert export.resolve_output(str(tmp_path / "x.htm"), "html") == (tmp_path / "x.htm", "html")
    assert export.resolve_output(None, None) == (None, "png")
    with pytest.raises(OSError, match="no such folder"):
        export.resolve_output(str(tmp_path / "nope") + "/", "csv")


def test_bad_arguments_via_python_dash_m():
    result = subprocess.run([sys.executable, "-m", "transformer_core.cli", "--text", "the cat", "--n-heads", "5"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.startswith("export: error: n_heads=5 does not divide d_model=64")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""


# ---------------------------------------------------------------- CLI: images

def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def svg_size(data: bytes) -> tuple[float, float]:
    root = ET.fromstring(data)
    assert root.tag.endswith("svg")
    return float(root.get("width")), float(root.get("height"))


@pytest.fixture(scope="module")
def image_server():
    if CHROMIUM is None:
        pytest.skip("no Chromium found (PATH / BROWSER_PATH): PNG/SVG export cannot be tested here")
    with export.image_server():
        yield


@needs_chromium
@pytest.mark.parametrize("extra, size", [
    ([], (1280, 720)),
    (["--scale", "2"], (2560, 1440)),
    (["--width", "800", "--height", "600", "--head", "1"], (800, 600)),
])
def test_cli_png_has_expected_size(extra, size, tmp_path, image_server, capsys):
    out = tmp_path / "slide.png"
    argv = ["--text", "the cat saw the cat", "--causal", "--out", str(out)] + extra
    if "--head" not in extra:
        argv += ["--head", "3"]
    assert export.main(argv) == 0, capsys.readouterr().err
    assert png_size(out.read_bytes()) == size


@needs_chromium
def test_cli_png_of_every_head_is_a_grid(tmp_path, image_server):
    out = tmp_path / "grid.png"
    assert export.main(["--text", "the cat saw the cat", "--stage", "masked_scores", "--causal", "--out", str(out)]) == 0
    assert png_size(out.read_bytes()) == (1280, 720)
    fig = export.build_figure(run_toy(["the cat saw the cat"], EncoderConfig(), causal=True), "masked_scores",
                              batch=0, layer=0, head=None)
    heatmaps = [t for t in fig.data if isinstance(t, go.Heatmap) and t.name == "values"]  # not the mask overlays
    assert len(heatmaps) == 8 and sum(bool(t.showscale) for t in fig.data if isinstance(t, go.Heatmap)) == 1
    assert len({(t.zmin, t.zmax) for t in heatmaps}) == 1  # one shared colour range


@needs_chromium
def test_cli_svg_has_expected_size(tmp_path, image_server):
    out = tmp_path / "slide.svg"
    assert export.main(["--text", "the cat saw the cat", "--stage", "q", "--head", "0", "--out", str(out)]) == 0
    assert svg_size(out.read_bytes()) == (1280, 720)


@needs_chromium
def test_png_via_python_dash_m(tmp_path):
    """The real command, cold: a fresh process starts its own Chromium."""
    out = tmp_path / "cold.png"
    result = subprocess.run([sys.executable, "-m", "transformer_core.cli", "--text", "the cat sat",
                             "--head", "0", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(out)
    assert png_size(out.read_bytes()) == (1280, 720)


def test_without_chromium_images_fail_clearly_but_data_works(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-chromium"))
    assert export.find_chromium() is None
    for fmt in ("png", "svg"):
        assert export.main(["--text", "the cat", "--head", "0", "--out", str(tmp_path / f"x.{fmt}")]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"export: error: {fmt.upper()} export needs Chromium") and "BROWSER_PATH" in err
        assert err.count("\n") == 1 and not (tmp_path / f"x.{fmt}").exists()
    for fmt in ("html", "csv", "json"):
        assert export.main(["--text", "the cat", "--head", "0", "--out", str(tmp_path / f"x.{fmt}")]) == 0
        assert (tmp_path / f"x.{fmt}").stat().st_size > 0


# ---------------------------------------------------------------- MiniLM

def test_minilm_unavailable_is_a_clear_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "transformer_core.models.minilm_trace", None)  # import fails
    assert export.main(["--model", "minilm", "--text", "the cat", "--format", "csv",
                        "--out", str(tmp_path / "m.csv")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("export: error: MiniLM export is unavailable") and err.count("\n") == 1


def test_minilm_csv(tmp_path):
    pytest.importorskip("transformer_core.models.minilm_trace")
    from transformer_core.models.minilm import PretrainedUnavailable

    out = tmp_path / "m.csv"
    try:
        trace = export.run_minilm_trace(["the bank of the river"])
    except export.ExportError as err:
        pytest.skip(f"MiniLM not available: {err}")
    except PretrainedUnavailable as err:  # pragma: no cover
        pytest.skip(f"MiniLM not available: {err}")
    assert trace.n_layers == 6 and trace.n_heads == 12
    assert export.main(["--model", "minilm", "--text", "the bank of the river", "--layer", "5", "--head", "11",
                        "--out", str(out)]) == 0
    frame = read_csv(out.read_text(encoding="utf-8"))
    assert list(frame.index)[:2] == ["0: [CLS]", "1: the"] and list(frame.index)[-1].endswith(": [SEP]")
    np.testing.assert_allclose(frame.to_numpy(), trace.stage("weights", 5)[0, 11], rtol=1e-6)
