// Our Plotly element (ui/shell/chart.py): plotly.js loaded once per page, each figure drawn into the light DOM.
const loads = (window.__attentionPlotly ||= {});

function load(src) {
  return (loads[src] ||= new Promise((done, fail) => {
    const tag = document.createElement("script");
    tag.src = src;
    tag.onload = done;
    tag.onerror = () => { delete loads[src]; fail(new Error("cannot load " + src)); };
    document.head.appendChild(tag);
  }));
}

async function plotly(data) {
  await load(data.base + data.bundle);
  if (data.locale) await load(data.base + data.locale);  // registers zh-CN with window.Plotly
  return window.Plotly;
}

// plotly.js's event points, small: what Streamlit's selection keeps (ui/shell/chart.py turns them snake_case)
const FIELDS = ["x", "y", "z", "curveNumber", "pointNumber", "pointIndex", "pointIndices", "customdata", "text",
                "hovertext"];

function points(event) {
  return ((event && event.points) || []).map(p => {
    const out = {};
    for (const f of FIELDS) if (p[f] !== undefined) out[f] = p[f];
    if (p.data && p.data.legendgroup) out.legendgroup = p.data.legendgroup;
    return out;
  });
}

// the index of the category or value of ``values`` drawn nearest to pixel ``px`` of ``axis`` (-1: none)
function nearest(axis, values, px) {
  let best = -1, gap = Infinity;
  values.forEach((v, i) => {
    const d = Math.abs(axis.d2p(v) - px);
    if (d < gap) { gap = d; best = i; }
  });
  return best;
}

// a click on a query × key heatmap's cell (ui/shell/chart.py cell_clicks), sent as the cell marker's point would be.
// The cell is the one under the pointer: plotly.js names the cell of its last hover, which is throttled, so a click
// at the end of a fast move named the cell before.
function cell(event, host) {
  const p = event && event.points && event.points[0];
  if (!p || !p.data || p.data.type !== "heatmap" || !Array.isArray(p.pointNumber)) return null;
  let [query, key] = p.pointNumber;  // z[row][column]: row = query position, column = key position
  const xs = p.data.x || [], ys = p.data.y || [], e = event.event, xa = p.xaxis, ya = p.yaxis;
  if (e && xa && ya && xa.d2p && ya.d2p && xs.length && ys.length) {
    const r = host.getBoundingClientRect();
    const k = nearest(xa, xs, e.clientX - r.left - xa._offset), q = nearest(ya, ys, e.clientY - r.top - ya._offset);
    if (k >= 0 && q >= 0) [query, key] = [q, k];
  }
  const columns = xs.length || p.data.z[0].length;
  return {x: xs[key] ?? p.x, y: ys[query] ?? p.y, curveNumber: p.curveNumber, pointIndex: query * columns + key,
          customdata: [query, key]};
}

function bind(host) {
  const send = list => host.__attention.send && host.__attention.send("select", list);
  host.on("plotly_click", event => {
    const point = host.__attention.cells && cell(event, host);
    if (point) send([point]);
  });
  host.on("plotly_selected", event => { if (event) send(points(event)); });
  host.on("plotly_deselect", () => {
    send([]);
    setTimeout(() => window.Plotly.restyle(host, {selectedpoints: [null]}), 50);
  });
}

// st.plotly_chart's first added modebar button, Fullscreen / Close fullscreen (Streamlit's icons and its English
// titles, in every language): here the chart covers the window, 32 px in, until clicked again or Escape.
const EXPAND = {width: 600, height: 470, name: "fullscreen-expand", path: "M32 32C14.3 32 0 46.3 0 64v96c0 17.7 14.3 32 32 32s32-14.3 32-32V96h64c17.7 0 32-14.3 32-32s-14.3-32-32-32H32zM64 352c0-17.7-14.3-32-32-32s-32 14.3-32 32v96c0 17.7 14.3 32 32 32h96c17.7 0 32-14.3 32-32s-14.3-32-32-32H64V352zM320 32c-17.7 0-32 14.3-32 32s14.3 32 32 32h64v64c0 17.7 14.3 32 32 32s32-14.3 32-32V64c0-17.7-14.3-32-32-32H320zM448 352c0-17.7-14.3-32-32-32s-32 14.3-32 32v64H320c-17.7 0-32 14.3-32 32s14.3 32 32 32h96c17.7 0 32-14.3 32-32V352z"};
const COLLAPSE = {width: 600, height: 470, name: "fullscreen-collapse", path: "M160 64c0-17.7-14.3-32-32-32s-32 14.3-32 32v64H32c-17.7 0-32 14.3-32 32s14.3 32 32 32h96c17.7 0 32-14.3 32-32V64zM32 320c-17.7 0-32 14.3-32 32s14.3 32 32 32H96v64c0 17.7 14.3 32 32 32s32-14.3 32-32V352c0-17.7-14.3-32-32-32H32zM352 64c0-17.7-14.3-32-32-32s-32 14.3-32 32v96c0 17.7 14.3 32 32 32h96c17.7 0 32-14.3 32-32s-14.3-32-32-32H352V64zM320 320c-17.7 0-32 14.3-32 32v96c0 17.7 14.3 32 32 32s32-14.3 32-32V384h64c17.7 0 32-14.3 32-32s-14.3-32-32-32H320z"};
const INSET = 32;

const fullHeight = () => Math.max(window.innerHeight - 2 * INSET, 150);

function withFullscreen(config, host) {
  const state = host.__attention;
  const expanded = !!state.expanded;
  const title = expanded ? "Close fullscreen" : "Fullscreen";
  state.click ||= () => toggle(host);  // one function per chart: an unchanged config does not replot the chart
  const button = {name: title, title, icon: expanded ? COLLAPSE : EXPAND, click: state.click};
  return Object.assign({}, config, {modeBarButtonsToAdd: [button, ...(config.modeBarButtonsToAdd || [])]});
}

function toggle(host, expanded = !host.__attention.expanded) {
  const state = host.__attention;
  if (!!state.expanded === expanded || !host._fullLayout || !window.Plotly) return;
  state.expanded = expanded;
  host.classList.toggle("attention-chart-full", expanded);
  const height = expanded ? fullHeight() : state.height;
  host.style.height = height + "px";
  if (expanded) {
    state.escape = event => { if (event.key === "Escape") toggle(host, false); };
    document.addEventListener("keydown", state.escape);
  } else if (state.escape) {
    document.removeEventListener("keydown", state.escape);
  }
  state.width = host.clientWidth;
  window.Plotly.react(host, host.data, Object.assign({}, host.layout, {width: state.width, height}),
                      withFullscreen(state.config, host));
}

export default function ({data, parentElement, setTriggerValue}) {
  const host = parentElement.querySelector(".attention-chart");
  const state = (host.__attention ||= {});
  state.send = data.select ? setTriggerValue : null;
  state.cells = !!data.cells;
  const figure = data.figure;
  const layout = figure.layout || (figure.layout = {});
  state.height = layout.height || 450;
  const height = state.expanded ? fullHeight() : state.height;
  host.style.height = height + "px";
  if (layout.title && typeof layout.title === "object" && typeof layout.title.text === "string") {
    layout.title.text = "<b>" + layout.title.text + "</b>";  // as st.plotly_chart's theme draws titles
  }
  // st.plotly_chart's modebar: no Plotly logo nor "send to cloud"; lasso/box select only when that mode is on
  const config = Object.assign({}, data.config, data.locale ? {locale: "zh-CN"} : {});
  config.showSendToCloud ??= false;
  config.displaylogo ??= false;
  const remove = Array.isArray(config.modeBarButtonsToRemove) ? [...config.modeBarButtonsToRemove] : [];
  const modes = data.modes || [];
  for (const [button, mode] of [["lasso2d", "lasso"], ["select2d", "box"], ["sendChartToCloud", null]]) {
    if (!(mode && modes.includes(mode)) && !remove.includes(button)) remove.push(button);
  }
  config.modeBarButtonsToRemove = remove;
  state.config = config;
  // st.plotly_chart's defaults for a selectable chart, which it applies with a second Plotly.react once the
  // figure is drawn: clickmode is a "plot" edit, so that second pass replots in full and settles automargin
  // (a colour bar's 1-pixel margin change that a single pass leaves half-applied). We draw the same two passes.
  const selecting = {};
  if (data.select) {
    if (!layout.clickmode) selecting.clickmode = "event+select";
    if (!layout.hovermode) selecting.hovermode = "closest";
    if (!layout.dragmode) selecting.dragmode = "pan";
  }
  const run = (state.run = (state.run || 0) + 1);
  const draw = async () => {
    const Plotly = await plotly(data);
    if (run !== state.run) return;  // a newer figure came meanwhile
    layout.width = host.clientWidth || undefined;
    layout.height = height;
    const second = Object.keys(selecting).length && !host._fullLayout;  // st.plotly_chart's two passes
    await Plotly.react(host, figure.data || [], second ? layout : Object.assign(layout, selecting),
                       withFullscreen(config, host));
    if (second) {
      if (run !== state.run) return;
      await Plotly.react(host, figure.data || [], Object.assign({}, layout, selecting), withFullscreen(config, host));
    }
    if (!state.bound && data.select) { bind(host); state.bound = true; }
    if (!state.resize) {
      state.width = host.clientWidth;
      state.resize = new ResizeObserver(() => {
        const width = host.clientWidth;
        if (width && width !== state.width && host._fullLayout) {
          state.width = width;
          window.Plotly.relayout(host, {width});
        }
      });
      state.resize.observe(host);
    }
  };
  draw().catch(err => {
    host.textContent = "The chart could not be drawn (" + err.message + ").";
    host.classList.add("attention-chart-failed");
  });
  return () => setTimeout(() => {  // Streamlit may call a stale render's cleanup: act only once the host is gone
    if (host.isConnected) return;
    if (state.resize) state.resize.disconnect();
    if (state.escape) document.removeEventListener("keydown", state.escape);
    if (window.Plotly && host._fullLayout) window.Plotly.purge(host);
  }, 0);
}
