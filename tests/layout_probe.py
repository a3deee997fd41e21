"""The layout probe, shared by tests/test_browser_class_view.py and scripts/layout_audit.py: every
drawn text of every Plotly chart on a page, and the pairs of a chart's texts that lie over each other."""
from __future__ import annotations

# Every drawn text of every chart on the page, per chart (tick labels, axis titles, annotations), as
# tests/test_slide_layout.py measures them: [left, top, right, bottom, text, class, font px]; and the chart's own
# box [left, top, right, bottom] (its first SVG layer).
CHART_TEXTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => ({
    meta: (d.layout && d.layout.meta) || {},
    box: (s => [s.left, s.top, s.right, s.bottom])(d.querySelector('.main-svg').getBoundingClientRect()),
    texts: Array.from(d.querySelectorAll('text')).filter(t => t.textContent.trim()
            && t.getBoundingClientRect().width > 0 && getComputedStyle(t).visibility !== 'hidden'
            && !t.closest('.hoverlayer, .modebar, .legend'))
        .map(t => { const r = t.getBoundingClientRect();
                    return [r.left, r.top, r.right, r.bottom, t.textContent, t.getAttribute('class') || '',
                            parseFloat(getComputedStyle(t).fontSize)]; })
}))"""


def overlapping(texts: list, slack: float = 0.5) -> list[tuple]:
    """Pairs ``(text, text)`` of boxes that overlap by more than ``slack`` px both across and down."""
    pairs = []
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            if min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack:
                pairs.append((a[4], b[4]))
    return pairs


def probe(page) -> tuple[list[dict], dict[int, list[tuple]]]:
    """``(charts, found)``: every chart's meta and texts on ``page``, and ``{chart index: overlapping pairs}`` of the
    charts that have any."""
    charts = page.evaluate(CHART_TEXTS)
    found = {i: overlapping(c["texts"]) for i, c in enumerate(charts)}
    return charts, {i: p for i, p in found.items() if p}


def small(texts: list, min_px: float = 10) -> list[str]:
    """Texts drawn in a font under ``min_px`` px (every label must be ≥ 10 px)."""
    return [t[4] for t in texts if len(t) > 6 and t[6] < min_px - 0.01]


def clipped(chart: dict, width: float = 1280, slack: float = 0.5) -> list[str]:
    """Texts that leave their chart's box or the viewport's width (cut at the chart's edge or off screen)."""
    left, top, right, bottom = chart.get("box") or (0, -1e9, width, 1e9)
    return [t[4] for t in chart["texts"] if t[0] < max(left, 0) - slack or t[2] > min(right, width) + slack
            or t[1] < top - slack or t[3] > bottom + slack]


# Each chart's box on the first screen and, for a heatmap, the share of its colour range its finite values use.
FIRST_SCREEN = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => {
    const r = d.getBoundingClientRect(), t = (d._fullData || []).find(t => t.type === 'heatmap');
    let used = null;
    if (t && Number.isFinite(t.zmin) && Number.isFinite(t.zmax) && t.zmax > t.zmin) {
        let lo = Infinity, hi = -Infinity;
        for (const row of t.z || []) for (const v of row || [])
            if (Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
        if (hi >= lo) used = (Math.min(hi, t.zmax) - Math.max(lo, t.zmin)) / (t.zmax - t.zmin);
    }
    return {meta: (d.layout && d.layout.meta) || {}, top: r.top, bottom: r.bottom, used: used};
})"""


def first_screen(charts: list[dict], height: float = 720, header: float = 60, min_used: float = 0.25) -> dict:
    """``{"cut": […], "faint": […]}`` of :data:`FIRST_SCREEN`'s rows: charts the screen's bottom edge cuts although
    they would fit under the header (they start in view and end below it), and heatmaps whose values use less than
    ``min_used`` of their colour range (a panel that looks nearly empty)."""
    def name(c):
        return c["meta"].get("stage") or c["meta"].get("kind") or "chart"

    cut = [name(c) for c in charts
           if header <= c["top"] < height < c["bottom"] and c["bottom"] - c["top"] <= height - header]
    faint = [(name(c), round(c["used"], 2)) for c in charts if c.get("used") is not None and c["used"] < min_used]
    return {"cut": cut, "faint": faint}


# A control and the figure it changes, by their Streamlit keys (``.st-key-…``; our chart element's is ``<key>-chart``):
# each one's box in page coordinates (the main area's scroll added) and whether it sticks under the header as the page
# scrolls (a sticky ancestor: it stays over what it changes). Absent keys are left out.
CONTROL_BOXES = """keys => { const main = document.querySelector('[data-testid="stMain"]');
    const scroll = main ? main.scrollTop : 0, out = {};
    for (const key of keys) {
        const e = document.querySelector('.st-key-' + CSS.escape(key));
        if (!e || !e.getClientRects().length) continue;
        const r = e.getBoundingClientRect();
        let sticky = false;
        for (let a = e; a && a !== main; a = a.parentElement)
            if (getComputedStyle(a).position === 'sticky') sticky = true;
        out[key] = {top: r.top + scroll, bottom: r.bottom + scroll, sticky: sticky};
    }
    return out; }"""

FAR_PX = 400  # more than this between a control and its figure: not seen together while the control is used


def control_distances(boxes: dict, pairs, far_px: float = FAR_PX) -> dict:
    """Classify ``pairs`` of ``(control key, figure key[, "into view"])`` by the vertical gap (px) between their
    :data:`CONTROL_BOXES` boxes (0 when they sit side by side). ``{"far": [(control, figure, gap)], "stuck": […],
    "into_view": […], "near": […], "missing": [(control, figure)]}``: far when the gap exceeds ``far_px`` and the
    control neither sticks under the header nor is declared to bring its figure into view on a change (the page's
    browser tests check that it does); stuck, into_view and near with their gaps, for the report."""
    found = {"far": [], "stuck": [], "into_view": [], "near": [], "missing": []}
    for control, figure, *how in pairs:
        a, b = boxes.get(control), boxes.get(figure)
        if a is None or b is None:
            found["missing"].append((control, figure))
            continue
        gap = round(max(0.0, b["top"] - a["bottom"], a["top"] - b["bottom"]))
        kind = ("near" if gap <= far_px else "stuck" if a.get("sticky") else
                "into_view" if "into view" in how else "far")
        found[kind].append((control, figure, gap))
    return found
