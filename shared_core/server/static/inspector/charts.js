// Small SVG charts for the inspector: labelled horizontal bars, a line over time and a memory's activity by
// day. No dependencies.
"use strict";

const Charts = (() => {
  const NS = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, text) {
    const el = document.createElementNS(NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
    if (text !== undefined) el.textContent = text;
    return el;
  }

  // rows: [{label, value, max, text, title}]; each bar is value/max of the width
  function bars(rows, opts) {
    const o = Object.assign({width: 300, row: 16, label: 78, text: 96, cls: "bars"}, opts || {});
    const height = rows.length * o.row + 2;
    const root = svg("svg", {class: o.cls, width: o.width, height, viewBox: `0 0 ${o.width} ${height}`, role: "img"});
    const room = o.width - o.label - o.text;
    rows.forEach((r, i) => {
      const y = i * o.row + 1;
      const g = svg("g", {class: "bar " + (r.cls || "")});
      if (r.title) g.appendChild(svg("title", {}, r.title));
      g.appendChild(svg("text", {x: 0, y: y + o.row - 4, class: "label"}, r.label));
      g.appendChild(svg("rect", {x: o.label, y: y + 2, width: room, height: o.row - 5, class: "track"}));
      const share = r.max > 0 && r.value !== null ? Math.max(0, Math.min(1, r.value / r.max)) : 0;
      g.appendChild(svg("rect", {x: o.label, y: y + 2, width: Math.max(share * room, r.value ? 1 : 0),
                                 height: o.row - 5, class: "fill"}));
      g.appendChild(svg("text", {x: o.label + room + 6, y: y + o.row - 4, class: "value"}, r.text));
      root.appendChild(g);
    });
    return root;
  }

  // points: [{x, y}] with numeric x; threshold: {value, label}; marks: [{x, label}]
  function line(points, opts) {
    const o = Object.assign({width: 520, height: 170, xLabel: "", yMax: null, threshold: null, marks: [],
                             xFormat: (x) => String(x), yFormat: (y) => y.toFixed(2)}, opts || {});
    const pad = {l: 44, r: 10, t: 10, b: 30};
    const root = svg("svg", {class: "line", width: o.width, height: o.height, viewBox: `0 0 ${o.width} ${o.height}`,
                             role: "img"});
    if (!points.length) return root;
    const xs = points.map((p) => p.x), ys = points.map((p) => p.y);
    const x0 = Math.min(...xs), x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs);
    let yTop = o.yMax !== null ? o.yMax : Math.max(...ys, o.threshold ? o.threshold.value : 0);
    if (yTop <= 0) yTop = 1;
    const w = o.width - pad.l - pad.r, h = o.height - pad.t - pad.b;
    const X = (x) => pad.l + (x - x0) / (x1 - x0) * w;
    const Y = (y) => pad.t + h - Math.max(0, Math.min(1, y / yTop)) * h;
    root.appendChild(svg("line", {x1: pad.l, y1: pad.t + h, x2: pad.l + w, y2: pad.t + h, class: "axis"}));
    root.appendChild(svg("line", {x1: pad.l, y1: pad.t, x2: pad.l, y2: pad.t + h, class: "axis"}));
    for (const y of [0, yTop / 2, yTop]) {
      root.appendChild(svg("text", {x: pad.l - 4, y: Y(y) + 4, class: "tick", "text-anchor": "end"}, o.yFormat(y)));
    }
    root.appendChild(svg("text", {x: pad.l, y: o.height - 4, class: "tick"}, o.xFormat(x0)));
    root.appendChild(svg("text", {x: pad.l + w, y: o.height - 4, class: "tick", "text-anchor": "end"}, o.xFormat(x1)));
    if (o.xLabel) root.appendChild(svg("text", {x: pad.l + w / 2, y: o.height - 4, class: "tick",
                                                "text-anchor": "middle"}, o.xLabel));
    if (o.threshold) {
      const ty = Y(o.threshold.value);
      root.appendChild(svg("line", {x1: pad.l, y1: ty, x2: pad.l + w, y2: ty, class: "threshold"}));
      root.appendChild(svg("text", {x: pad.l + w - 2, y: ty - 3, class: "tick threshold-label", "text-anchor": "end"},
                           o.threshold.label));
    }
    for (const m of o.marks) {
      if (m.x < x0 || m.x > x1) continue;
      root.appendChild(svg("line", {x1: X(m.x), y1: pad.t, x2: X(m.x), y2: pad.t + h, class: "mark"}));
      root.appendChild(svg("text", {x: X(m.x) + 3, y: pad.t + 10, class: "tick"}, m.label));
    }
    const path = points.map((p, i) => `${i ? "L" : "M"}${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(" ");
    root.appendChild(svg("path", {d: path, class: "curve"}));
    return root;
  }

  // A memory's days: a bar per day for its accesses, a triangle above it for feedback (up: reinforced,
  // down: demoted). days: [{day: "YYYY-MM-DD", accesses, reinforcements, demotions}]; from/to: YYYY-MM-DD.
  function activity(days, from, to, opts) {
    const o = Object.assign({width: 700, height: 130}, opts || {});
    const pad = {l: 34, r: 10, t: 18, b: 22};
    const root = svg("svg", {class: "activity", width: o.width, height: o.height, viewBox: `0 0 ${o.width} ${o.height}`,
                             role: "img"});
    const dayMs = 86400000;
    const t0 = Date.parse(from + "T00:00:00Z"), n = Math.round((Date.parse(to + "T00:00:00Z") - t0) / dayMs) + 1;
    const w = o.width - pad.l - pad.r, h = o.height - pad.t - pad.b, slot = w / n;
    const top = Math.max(1, ...days.map((d) => d.accesses));
    root.appendChild(svg("line", {x1: pad.l, y1: pad.t + h, x2: pad.l + w, y2: pad.t + h, class: "axis"}));
    root.appendChild(svg("text", {x: pad.l - 4, y: pad.t + 8, class: "tick", "text-anchor": "end"}, String(top)));
    root.appendChild(svg("text", {x: pad.l - 4, y: pad.t + h, class: "tick", "text-anchor": "end"}, "0"));
    root.appendChild(svg("text", {x: pad.l, y: o.height - 4, class: "tick"}, from));
    root.appendChild(svg("text", {x: pad.l + w, y: o.height - 4, class: "tick", "text-anchor": "end"}, to));
    root.appendChild(svg("text", {x: pad.l + w / 2, y: o.height - 4, class: "tick", "text-anchor": "middle"},
                         "accesses per day (UTC)"));
    for (const d of days) {
      const i = Math.round((Date.parse(d.day + "T00:00:00Z") - t0) / dayMs);
      if (i < 0 || i >= n) continue;
      const x = pad.l + i * slot, bw = Math.max(1, slot - 1), cx = x + bw / 2;
      const g = svg("g", {class: "day", "data-day": d.day});
      g.appendChild(svg("title", {}, `${d.day}: ${d.accesses} access(es), ${d.reinforcements} reinforced, ` +
                                     `${d.demotions} demoted`));
      if (d.accesses) {
        const bh = Math.max(1, d.accesses / top * h);
        g.appendChild(svg("rect", {x, y: pad.t + h - bh, width: bw, height: bh, class: "fill"}));
      }
      if (d.reinforcements) {
        g.appendChild(svg("path", {d: `M${cx - 4},${pad.t - 4} L${cx + 4},${pad.t - 4} L${cx},${pad.t - 12} Z`,
                                   class: "reinforced"}));
      }
      if (d.demotions) {
        const y = d.reinforcements ? pad.t + 8 : pad.t - 4;
        g.appendChild(svg("path", {d: `M${cx - 4},${y - 8} L${cx + 4},${y - 8} L${cx},${y} Z`, class: "demoted"}));
      }
      root.appendChild(g);
    }
    return root;
  }

  return {bars, line, activity};
})();
