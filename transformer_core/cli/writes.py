"""The export command's "what the heads write" views on SmolLM2: ``--view dla|logit-lens|patching|routes``.

``dla``: each head's and MLP's direct share of ``--target``'s logit (minus ``--contrast``'s), the final norm's scale
frozen (:mod:`~transformer_core.analysis.logit_attribution`); ``logit-lens``: each layer's residual stream through
the final norm and W_U (:mod:`~transformer_core.analysis.logit_lens`); ``patching``: each head's output and the
residual stream at each position patched from the prompt into ``--corrupt`` (:mod:`~transformer_core.analysis.
patching`). JSON keys: ``dla`` → ``heads`` [layer][head], ``mlps`` [layer], ``embed``, ``total``, ``logit_diff``;
``logit_lens`` → ``target_prob`` [row][position] (row 0 the embeddings, the last row the model's output) and
``top_tokens``; ``patching`` → ``heads`` [layer][head] and ``positions`` [layer][position], normalised; ``routes``
→ ``position``, ``threshold`` and ``edges`` (``block``, ``kind``, ``layer``, ``from``, ``to``, ``weight``,
``heads``, ``residual``), the
information-flow route into the last token (:mod:`~transformer_core.analysis.routes`). CSV: the main matrix with
labelled rows and columns (routes: one row an edge). PNG/SVG/HTML: the page's figure.
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from ..figures import stage as figures
from ..figures.writes import dla_figure, lens_figure, patching_figure
from ..records import serialize
from ..text.i18n import _
from .args import ExportError, UsageError
from .slides import render_image, slide_figure

VIEWS = ("dla", "logit-lens", "patching", "routes")
MAX_PATCH_TOKENS = 32


def _token(tokenizer, text: str, flag: str) -> int:
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    if len(ids) != 1:
        raise UsageError(_("{flag} {text!r} must be exactly one SmolLM2 token; it is {n}").format(
            flag=flag, text=text, n=len(ids)))
    return int(ids[0])


def view_output(args: argparse.Namespace, sentences: list[str], fmt: str) -> tuple[str, str | bytes]:
    """``(default file name, data)`` of ``--view dla|logit-lens|patching`` for the one prompt in ``sentences``.

    Raises:
        UsageError: ``--ablate`` given, not ``--model smollm2``, more than one prompt, a target or contrast that is
            not one token, a missing contrast for patching, or a corrupted prompt of another length.
        ExportError: SmolLM2 is not installed, or no Chromium for PNG/SVG.
    """
    from ..analysis.logit_attribution import direct_logit_attribution, head_outputs
    from ..analysis.logit_lens import logit_lens
    from ..analysis.patching import patch_heads, patch_residual
    from ..models import Decoder
    from ..models.gguf_weights import SmolLM2Unavailable
    from ..models.smollm2_trace import encode_labels, run_smollm2
    from ..text.tokenize import normalize_text
    from .traces import model_of

    if args.ablate:  # these views run the intact model: an ablated figure's numbers would be the intact model's
        raise UsageError(_("--ablate does not apply to --view {view}: it runs the intact model").format(
            view=args.view))
    face = model_of(args)
    if not isinstance(face, Decoder):  # the residual stream and an unembedding: the decoders have both
        raise UsageError(_("--view {view} is computed on --model smollm2").format(view=args.view))
    if len(sentences) != 1:
        raise UsageError(_("--model smollm2 reads one prompt, got {n}: pass it in one --text on one line").format(
            n=len(sentences)))
    try:
        model, tokenizer = face.module, face.tokenizer
        trace, prediction = run_smollm2(sentences[0], max_tokens=args.max_tokens or 128, residuals=True,
                                        only=lambda n: False, checkpoint=face.checkpoint)
    except SmolLM2Unavailable as err:
        raise ExportError(_("SmolLM2 export is unavailable: {reason}").format(reason=err)) from err
    label = lambda i: encode_labels([tokenizer.id_to_token(int(i))])[0]  # noqa: E731
    target = _token(tokenizer, args.target, "--target") if args.target else int(prediction["top"][-1][0][1])
    contrast = _token(tokenizer, args.contrast, "--contrast") if args.contrast else None
    tokens = list(trace.tokens[0])
    what = label(target) if contrast is None else f"{label(target)} − {label(contrast)}"
    view = args.view.replace("-", "_")
    name = figures.figure_filename(view, None, None, tokens, fmt)
    if args.view == "dla":
        parts = prediction["parts"]
        out = direct_logit_attribution(model, {**parts, "heads": head_outputs(model, parts["contexts"])}, target,
                                       contrast)
        data = {"heads": out["heads"].tolist(), "mlps": out["mlps"].tolist(), "embed": out["embed"],
                "total": out["total"], "logit_diff": out["logit_diff"]}
        frame = pd.DataFrame(np.concatenate([out["heads"], out["mlps"][:, None]], axis=1),
                             index=[f"layer {i}" for i in range(len(out["mlps"]))],
                             columns=[f"head {h}" for h in range(out["heads"].shape[1])] + ["MLP"])
        if out["bias"] is not None:  # attention_bias=True: b_O belongs to no head, a term of its own (in the total)
            data["bias"], data["bias_layers"] = out["bias"], out["bias_layers"].tolist()
            frame["attention output bias"] = out["bias_layers"]
        fig = dla_figure(out["heads"], out["mlps"], title=_("Direct logit attribution: {what}").format(what=what))
    elif args.view == "logit-lens":
        out = logit_lens(model, prediction["stream"], target)
        names = {int(i): label(i) for i in np.unique(out["top_ids"])}
        top = [[names[int(i)] for i in row] for row in out["top_ids"]]
        data = {"target_prob": out["target_prob"].tolist(), "top_tokens": top}
        rows = ["embeddings"] + [f"after layer {i}" for i in range(len(top) - 1)]
        frame = pd.DataFrame(out["target_prob"], index=rows, columns=[f"{j}: {t}" for j, t in enumerate(tokens)])
        fig = lens_figure(out["target_prob"], top, tokens, target=label(target))
    elif args.view == "routes":
        data, frame, fig = _routes(model, face.checkpoint, prediction["stream"], tokens, args.threshold)
    else:
        if contrast is None:
            raise UsageError(_("--view patching measures a logit difference: give --contrast"))
        clean = list(trace.settings["ids"])
        corrupt_text = args.corrupt or _swap_last(sentences[0], label(contrast), label(target))
        dirty = face.encode(normalize_text(corrupt_text))[0]
        if len(clean) > MAX_PATCH_TOKENS or len(dirty) != len(clean):
            raise UsageError(_("--corrupt must have as many tokens as the prompt (at most {n}): {a} and {b}").format(
                n=MAX_PATCH_TOKENS, a=len(dirty), b=len(clean)))
        heads, positions = (f(model, clean, dirty, target, contrast) for f in (patch_heads, patch_residual))
        data = {"heads": heads["heads"].tolist(), "positions": positions["positions"].tolist(),
                "ld_clean": heads["ld_clean"], "ld_corrupt": heads["ld_corrupt"], "corrupt": corrupt_text}
        frame = pd.DataFrame(heads["heads"], index=[f"layer {i}" for i in range(heads["heads"].shape[0])],
                             columns=[f"head {h}" for h in range(heads["heads"].shape[1])])
        fig = patching_figure(heads["heads"], of="heads", x_labels=[str(h) for h in range(heads["heads"].shape[1])],
                              x_title=_("head"), title=_("Each head's output patched in"))
    if fmt == "json":
        return name, json.dumps({"view": view, "tokens": tokens, "target": label(target),
                                 "contrast": None if contrast is None else label(contrast), view: data},
                                ensure_ascii=False)
    if fmt == "csv":
        return name, frame.to_csv(float_format="%.9g")
    if fmt == "html":
        return name, serialize.figures_to_html([fig], what, description=sentences[0],
                                               config=figures.chart_config(name.rsplit(".", 1)[0]))
    return name, render_image(slide_figure(fig, what, sentences[0]), fmt, width=args.width, height=args.height,
                              scale=args.scale)


def _routes(model, checkpoint, stream: np.ndarray, tokens: list[str], threshold: float):
    """``(data, frame, figure)`` of the information-flow route into the last token."""
    from ..analysis.routes import decoder_tables, edge_rows, route_graph
    from ..figures.routes import routes_figure

    if not 0.0 <= threshold < 1.0:
        raise UsageError(_("--threshold must be in [0, 1), got {t}").format(t=threshold))
    n_layers = stream.shape[0] - 1
    tables = decoder_tables(model, stream, checkpoint)
    graph = route_graph(tables["attn"], tables["attn_residual"], tables["mlp"], tables["mlp_residual"],
                        len(tokens) - 1, threshold)
    rows = edge_rows(graph)
    data = {"position": len(tokens) - 1, "threshold": threshold, "edges": rows}
    frame = pd.DataFrame([{**r, "heads": " ".join(f"H{h}:{w:.4f}" for h, w in r["heads"].items())} for r in rows],
                         columns=["layer", "block", "kind", "from", "to", "weight", "residual", "heads"])
    fig = routes_figure(graph, tokens, n_layers, title=_("Route into {token} (threshold {t})").format(
        token=f"{len(tokens) - 1}: {tokens[-1]}", t=threshold))
    return data, frame, fig


def _swap_last(prompt: str, old: str, new: str) -> str:
    """``prompt`` with the last occurrence of ``old`` (a token label, ␣ for a space) replaced by ``new``."""
    old, new = old.replace("␣", " ").strip(), new.replace("␣", " ").strip()
    at = prompt.rfind(old) if old else -1
    return prompt if at < 0 else prompt[:at] + new + prompt[at + len(old):]
