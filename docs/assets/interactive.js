/* Interactive figures: a slider over frames a snippet computed at build time.
 *
 * The macro {{ interactive NAME.key }} (pipeline/macros.py) writes a <figure class="gp-interactive"
 * data-src="figures/NAME/key.frames.json"> with an empty chart, a hidden slider, the default frame's
 * description (a live region) and command. This script fetches the JSON when the figure nears the
 * screen, draws the frame as an inline SVG (no library, nothing from another host; colours from CSS,
 * so both palettes read well), shows the slider and redraws on every change. It runs again after
 * each instant navigation (Material's document$). */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var script = document.currentScript;
  // the site's root: this file is ROOT/assets/interactive.js
  var root = script ? new URL("../", script.src) : new URL("./", document.baseURI);
  var cache = {};

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, content, attrs) {
    var node = el("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    node.textContent = content;
    return node;
  }

  var SUPER = { "-": "\u207b", 0: "\u2070", 1: "\u00b9", 2: "\u00b2", 3: "\u00b3", 4: "\u2074",
                5: "\u2075", 6: "\u2076", 7: "\u2077", 8: "\u2078", 9: "\u2079" };

  function power(p) {
    return p === 0 ? "1" : "10" + String(p).split("").map(function (c) { return SUPER[c]; }).join("");
  }

  function short(v) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e4 || a < 1e-3) return v.toExponential(0).replace("e+", "e");
    return String(Number(v.toPrecision(3)));
  }

  function scale(lo, hi, a, b, log) {
    if (log) { lo = Math.log10(lo); hi = Math.log10(hi); }
    if (hi === lo) { hi = lo + 1; lo = lo - 1; }
    return function (v) {
      var t = ((log ? Math.log10(v) : v) - lo) / (hi - lo);
      return a + t * (b - a);
    };
  }

  function ticks(lo, hi, log, most) {
    var out = [];
    if (log) {
      var p0 = Math.floor(Math.log10(lo)), p1 = Math.ceil(Math.log10(hi));
      var step = Math.max(1, Math.ceil((p1 - p0) / most));
      for (var p = p0; p <= p1; p += step) out.push({ v: Math.pow(10, p), label: power(p) });
      return out;
    }
    var span = hi - lo || 1, raw = span / most, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var nice = [1, 2, 5, 10].map(function (m) { return m * mag; }).find(function (s) { return s >= raw; });
    for (var v = Math.ceil(lo / nice) * nice; v <= hi + nice * 1e-9; v += nice) {
      var r = Number(v.toPrecision(12));
      out.push({ v: r, label: short(r) });
    }
    return out;
  }

  function extent(data) {
    // one pair of axes for every frame, so that what moves is the data
    var xs = [], ys = [];
    var frames = data.x ? [data.x] : data.x_frames;
    frames.forEach(function (row) { row.forEach(function (v) { if (v !== null) xs.push(v); }); });
    data.series.forEach(function (s) {
      s.y.forEach(function (f) { f.forEach(function (v) { if (v !== null) ys.push(v); }); });
    });
    data.hlines.forEach(function (h) { ys.push(h.y); });
    if (data.xscale === "log") xs = xs.filter(function (v) { return v > 0; });
    if (data.yscale === "log") ys = ys.filter(function (v) { return v > 0; });
    var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    if (data.yscale === "log") {
      y0 = Math.pow(10, Math.floor(Math.log10(y0))); y1 = Math.pow(10, Math.ceil(Math.log10(y1)));
    } else {
      var pad = (y1 - y0) * 0.05 || 1;
      y0 = y0 >= 0 && y0 - pad <= 0 ? 0 : y0 - pad;
      y1 += pad;
    }
    return { x0: Math.min.apply(null, xs), x1: Math.max.apply(null, xs), y0: y0, y1: y1 };
  }

  function draw(figure, data, at) {
    var chart = figure.querySelector(".gp-interactive__chart");
    var width = Math.max(280, Math.round(chart.clientWidth || 600));
    var height = width < 500 ? 240 : 300;
    var m = { left: width < 500 ? 50 : 64, right: 12, top: 10, bottom: 44 };
    var e = figure.__extent || (figure.__extent = extent(data));
    var X = scale(e.x0, e.x1, m.left, width - m.right, data.xscale === "log");
    var Y = scale(e.y0, e.y1, height - m.bottom, m.top, data.yscale === "log");
    var svg = el("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height,
                          "aria-hidden": "true", focusable: "false", class: "gp-interactive__svg" });
    var axes = el("g", { class: "gp-axes" }, svg);
    ticks(e.y0, e.y1, data.yscale === "log", 5).forEach(function (t) {
      if (t.v < e.y0 * (1 - 1e-9) || t.v > e.y1 * (1 + 1e-9)) return;
      el("line", { x1: m.left, x2: width - m.right, y1: Y(t.v), y2: Y(t.v), class: "gp-grid" }, axes);
      text(axes, m.left - 6, Y(t.v) + 4, t.label, { "text-anchor": "end" });
    });
    var most = width < 500 ? 5 : 9;
    var xt = ticks(e.x0, e.x1, data.xscale === "log", most);
    xt.forEach(function (t) {
      if (t.v < e.x0 - 1e-9 * Math.abs(e.x0) || t.v > e.x1 + 1e-9 * Math.abs(e.x1)) return;
      el("line", { x1: X(t.v), x2: X(t.v), y1: height - m.bottom, y2: height - m.bottom + 5, class: "gp-tick" }, axes);
      text(axes, X(t.v), height - m.bottom + 18, t.label, { "text-anchor": "middle" });
    });
    el("line", { x1: m.left, x2: width - m.right, y1: height - m.bottom, y2: height - m.bottom, class: "gp-axis" }, axes);
    el("line", { x1: m.left, x2: m.left, y1: m.top, y2: height - m.bottom, class: "gp-axis" }, axes);
    text(axes, (m.left + width - m.right) / 2, height - 6, data.xlabel + (data.xscale === "log" ? " (log scale)" : ""),
         { "text-anchor": "middle", class: "gp-label" });
    var ylabel = text(axes, 0, 0, data.ylabel + (data.yscale === "log" ? " (log scale)" : ""),
                      { "text-anchor": "middle", class: "gp-label",
                        transform: "translate(12 " + (m.top + height - m.bottom) / 2 + ") rotate(-90)" });
    ylabel.setAttribute("textLength", Math.min(height - m.top - m.bottom, ylabel.textContent.length * 6.5));
    ylabel.setAttribute("lengthAdjust", "spacingAndGlyphs");
    data.hlines.forEach(function (h) {
      if (data.yscale === "log" && h.y <= 0) return;
      el("line", { x1: m.left, x2: width - m.right, y1: Y(h.y), y2: Y(h.y), class: "gp-hline" }, svg);
      text(svg, width - m.right - 4, Y(h.y) - 4, h.label, { "text-anchor": "end", class: "gp-hline-label" });
    });
    var xs = data.x || data.x_frames[at];
    data.series.forEach(function (s, i) {
      var g = el("g", { class: "gp-series gp-s" + (i % 6) }, svg);
      var d = "", pen = false;
      s.y[at].forEach(function (v, j) {
        var ok = v !== null && xs[j] !== null && !(data.yscale === "log" && v <= 0) && !(data.xscale === "log" && xs[j] <= 0);
        if (!ok) { pen = false; return; }
        d += (pen ? "L" : "M") + X(xs[j]).toFixed(1) + " " + Y(v).toFixed(1);
        pen = true;
        if (xs.length <= 40) el("circle", { cx: X(xs[j]).toFixed(1), cy: Y(v).toFixed(1), r: 2.6 }, g);
      });
      if (d) el("path", { d: d }, g).parentNode.insertBefore(g.lastChild, g.firstChild);
    });
    chart.replaceChildren(svg);
  }

  function legend(figure, data) {
    var box = figure.querySelector(".gp-interactive__legend");
    if (!box || box.childElementCount) return;
    data.series.forEach(function (s, i) {
      var item = document.createElement("span");
      item.className = "gp-interactive__key gp-s" + (i % 6);
      var svg = el("svg", { viewBox: "0 0 24 10", width: 24, height: 10, "aria-hidden": "true" }, item);
      el("path", { d: "M0 5H24" }, svg);
      el("circle", { cx: 12, cy: 5, r: 2.6 }, svg);
      item.appendChild(document.createTextNode(s.label));
      box.appendChild(item);
    });
  }

  function show(figure, data, at) {
    var input = figure.querySelector("input[type=range]");
    var output = figure.querySelector("output");
    input.setAttribute("aria-valuetext", data.parameter + " " + data.labels[at]);
    output.value = data.labels[at];
    figure.querySelector(".gp-interactive__desc").textContent = data.description[at];
    figure.querySelector(".gp-interactive__command code").textContent = data.command[at];
    figure.dataset.frame = String(at);
    draw(figure, data, at);
  }

  function start(figure, data) {
    var input = figure.querySelector("input[type=range]");
    legend(figure, data);
    figure.querySelector(".gp-interactive__controls").hidden = false;
    input.max = String(data.values.length - 1);
    input.addEventListener("input", function () { show(figure, data, Number(input.value)); });
    if (window.ResizeObserver) {
      var last = 0;
      new ResizeObserver(function () {
        var w = Math.round(figure.querySelector(".gp-interactive__chart").clientWidth);
        if (w && Math.abs(w - last) > 4) { last = w; draw(figure, data, Number(input.value)); }
      }).observe(figure);
    }
    show(figure, data, Number(input.value));
    figure.dataset.ready = "true";
  }

  function load(figure) {
    if (figure.dataset.state) return;
    figure.dataset.state = "loading";
    var url = new URL(figure.dataset.src, root).href;
    (cache[url] || (cache[url] = fetch(url).then(function (r) {
      if (!r.ok) throw new Error(url + ": HTTP " + r.status);
      return r.json();
    }))).then(function (data) { start(figure, data); }, function (error) {
      delete cache[url];
      figure.dataset.state = "";
      figure.querySelector(".gp-interactive__desc").textContent += " (the interactive figure could not be loaded)";
      if (window.console) console.warn(error);
    });
  }

  function init() {
    var figures = document.querySelectorAll("figure.gp-interactive[data-src]:not([data-state])");
    if (!figures.length) return;
    if (!("IntersectionObserver" in window)) { figures.forEach(load); return; }
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) { observer.unobserve(entry.target); load(entry.target); }
      });
    }, { rootMargin: "400px 0px" });
    figures.forEach(function (f) { observer.observe(f); });
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init); // every page, including after instant navigation
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
