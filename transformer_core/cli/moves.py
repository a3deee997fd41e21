"""The export command's "what attention moves" outputs: ``--stage norms`` and ``--view rollout|flow``.

``--stage norms`` adds the value-weighted norms ‖α_ij f_h(x_j)‖ of ``--layer`` to the trace
(:func:`~transformer_core.analysis.value_norms.with_norms`, W_O read from the model) and is then
exported like any stage. ``--view rollout|flow|flow_raw`` exports one sentence's attention rollout or flow
across every layer (:mod:`~transformer_core.analysis.rollout`; ``flow`` rows normalised as Abnar & Zuidema's
code, ``flow_raw`` the maximum flows in capacity units): PNG/SVG/HTML as the app draws it
(beside the last layer's mean weights), CSV as a labelled matrix, JSON with both matrices.
"""
from __future__ import annotations

import json

import pandas as pd

from ..analysis.rollout import CSV_CORNER, FLOW_KINDS, FLOW_TOKEN_LIMIT, attention_flow, attention_rollout, layer_means
from ..analysis.value_norms import with_norms
from ..figures import stage as figures
from ..figures.moves import VIEW_TITLES, across_layers_figure
from ..records import serialize
from ..records.trace import Trace
from ..text.i18n import _
from .args import ExportError, UsageError
from .slides import render_image, slide_figure
from .traces import describe

VIEWS = tuple(VIEW_TITLES)


def add_norms(trace: Trace, layer: int) -> Trace:
    """``trace`` with ``layers.{layer}.attention.norms``.

    Raises:
        UsageError: no such layer. ExportError: the model's W_O cannot be had.
    """
    if not 0 <= layer < trace.n_layers:
        raise UsageError(_("--layer {layer} out of range: the model has layers 0..{last}").format(
            layer=layer, last=trace.n_layers - 1))
    from ..models import from_settings

    try:
        from_settings(trace.settings)  # its own refusal says "norms" already: asked apart, so the line says it once
    except ValueError as err:
        if type(err) is ValueError:  # no model whose weights can be read (a file's, or an unknown name)
            raise ExportError(_("value-weighted norms need the model's W_O, and model {name} has no weights to "
                                "read here").format(name=repr(trace.settings.get("model")))) from None
        raise ExportError(_("value-weighted norms need the model's W_O: {reason}").format(reason=err)) from None
    except RuntimeError as err:  # PretrainedUnavailable, CausalUnavailable, SmolLM2Unavailable: how to install it
        raise ExportError(_("value-weighted norms need the model's W_O: {reason}").format(reason=err)) from None
    return with_norms(trace, [layer])


def view_output(trace: Trace, view: str, *, batch: int, fmt: str, width: int, height: int,
                scale: float) -> tuple[str, str | bytes]:
    """``(default file name, data)`` of ``--view`` for sentence ``batch`` in format ``fmt``.

    Raises:
        UsageError: unknown view, a bad batch, or flow of more than FLOW_TOKEN_LIMIT tokens.
        ExportError: no Chromium for PNG/SVG.
    """
    if view not in VIEWS:
        raise UsageError(_("unknown view {view!r}: choose one of {choices}").format(view=view, choices=", ".join(VIEWS)))
    if not 0 <= batch < len(trace.tokens):
        raise UsageError(_("--batch {batch} out of range: the text has {n} sentence(s)").format(
            batch=batch, n=len(trace.tokens)))
    n = trace.lengths[batch]
    if view in FLOW_KINDS and n > FLOW_TOKEN_LIMIT:
        raise UsageError(_("--view flow is computed for at most {limit} tokens; sentence {batch} has {n} (--view "
                           "rollout works at any length)").format(limit=FLOW_TOKEN_LIMIT, batch=batch, n=n))
    means = layer_means(trace, batch)  # [layer, n, n]
    values = attention_flow(means, normalise=view == "flow") if view in FLOW_KINDS else attention_rollout(means)
    tokens = trace.tokens[batch][:n]
    name = figures.figure_filename(view, None, None, tokens, fmt)
    labels = [f"{i}: {t}" for i, t in enumerate(tokens)]
    if fmt == "csv":
        return name, pd.DataFrame(values, index=labels, columns=labels).to_csv(float_format="%.9g",
                                                                               index_label=CSV_CORNER)
    if fmt == "json":
        return name, json.dumps({"view": view, "tokens": list(tokens), "rows": "output position after the last layer",
                                 "columns": "input token", "values": values.tolist(),
                                 "unit": FLOW_KINDS.get(view, "share: rows sum to 1"),
                                 "last_layer_mean_weights": means[-1].tolist(), "settings": dict(trace.settings)})
    fig = across_layers_figure(values, means[-1], tokens, view, batch=batch, last_layer=len(means) - 1)
    title = f"{VIEW_TITLES[view]} across {len(means)} layers"
    if fmt == "html":
        return name, serialize.figures_to_html([fig], title, description=describe(trace, batch),
                                               config=figures.chart_config(name.rsplit(".", 1)[0]))
    return name, render_image(slide_figure(fig, title, describe(trace, batch)), fmt, width=width, height=height,
                              scale=scale)
