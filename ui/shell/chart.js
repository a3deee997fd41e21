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

function bind(host) {
  const send = list => host.__attention.send && host.__attention.send("select", list);
  host.on("plotly_selected", event => { if (event) send(points(event)); });
  host.on("plotly_deselect", () => {
    send([]);
    setTimeout(() => window.Plotly.restyle(host, {selectedpoints: [null]}), 50);
  });
}

export default function ({data, parentElement, setTriggerValue}) {
  const host = parentElement.querySelector(".attention-chart");
  const state = (host.__attention ||= {});
  state.send = data.select ? setTriggerValue : null;
  const figure = data.figure;
  const layout = figure.layout || (figure.layout = {});
  const height = layout.height || 450;
  host.style.height = height + "px";
  if (layout.title && typeof layout.title === "object" && typeof layout.title.text === "string") {
    layout.title.text = "<b>" + layout.title.text + "</b>";  // as st.plotly_chart's theme draws titles
  }
  if (data.select) {  // st.plotly_chart's defaults for selection_mode="points"
    layout.clickmode ||= "event+select";
    layout.hovermode ||= "closest";
    layout.dragmode ||= "pan";
  }
  const config = Object.assign({displaylogo: false}, data.config, data.locale ? {locale: "zh-CN"} : {});
  const run = (state.run = (state.run || 0) + 1);
  const draw = async () => {
    const Plotly = await plotly(data);
    if (run !== state.run) return;  // a newer figure came meanwhile
    layout.width = host.clientWidth || undefined;
    layout.height = height;
    await Plotly.react(host, figure.data || [], layout, config);
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
    if (window.Plotly && host._fullLayout) window.Plotly.purge(host);
  }, 0);
}
