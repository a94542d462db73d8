// steadyeval report: sortable tables and the per-item table (search, filters, sort, pages,
// and a drill-down: a row opens its prompt, options, gold answer and the same item under
// every other condition). Data is written with textContent only: it never becomes markup.
(function () {
  "use strict";

  function cellValue(td) {
    var v = td.getAttribute("data-v");
    if (v !== null && v !== "") { var f = parseFloat(v); if (!isNaN(f)) return f; }
    return td.textContent;
  }

  function compare(a, b) {
    var na = typeof a === "number", nb = typeof b === "number";
    if (na && nb) return a - b;
    if (na) return -1;
    if (nb) return 1;
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }

  function makeSortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var c = compare(cellValue(r1.cells[col]), cellValue(r2.cells[col]));
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), makeSortable);

  var dataNode = document.getElementById("items-data");
  if (!dataNode) return;
  var data = JSON.parse(dataNode.textContent);
  var columns = data.columns, rows = data.rows, details = data.details || [];
  var state = {
    query: "", filter: "all", condition: "", flipOn: "correct", flipA: "", flipB: "",
    sort: -1, asc: true, page: 0, size: 50, open: -1
  };
  var $ = function (id) { return document.getElementById(id); };
  var table = $("items-table"), body = table.tBodies[0], info = $("items-info");
  var idx = {}, field = {};
  columns.forEach(function (c, i) { idx[c.name] = i; });
  (data.detail_fields || []).forEach(function (f, i) { field[f] = i; });
  var lowered = rows.map(function (r) {
    return r.map(function (v) { return v === null ? "" : String(v); }).join("\u0001").toLowerCase();
  });

  // A unit is (item, model, sample); units[key][condition] is the row of that condition.
  function unitKey(r) { return [r[idx.item], r[idx.model], r[idx.sample]].join("\u0001"); }
  var units = {};
  rows.forEach(function (r, i) {
    var k = unitKey(r);
    (units[k] = units[k] || {})[r[idx.condition]] = i;
  });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // A name wraps after its separators (/ - : @ # ? & = _ between word characters), as the
  // tables written by the server do with <wbr>: text nodes and <wbr> elements, no markup.
  function breakable(e, text) {
    var re = /\w[\/\-:@#?&=_]+(?=\w)/g, at = 0, m;
    while ((m = re.exec(text)) !== null) {
      e.appendChild(document.createTextNode(text.slice(at, re.lastIndex)));
      e.appendChild(document.createElement("wbr"));
      at = re.lastIndex;
    }
    e.appendChild(document.createTextNode(text.slice(at)));
    return e;
  }

  function show(v, kind) {
    if (v === null || v === undefined) return "\u2013";
    if (kind === "bool") return v ? "yes" : "no";
    return String(v);
  }

  function flipped(i) {
    var r = rows[i], a = state.flipA, b = state.flipB;
    var cond = r[idx.condition];
    if (cond !== a && cond !== b) return false;
    var u = units[unitKey(r)], col = idx[state.flipOn];
    if (u[a] === undefined || u[b] === undefined) return false;
    var va = rows[u[a]][col], vb = rows[u[b]][col];
    return va !== null && vb !== null && va !== vb;
  }

  function keep(i) {
    var r = rows[i];
    if (state.query && lowered[i].indexOf(state.query) < 0) return false;
    if (state.condition && r[idx.condition] !== state.condition) return false;
    if (state.flipA && state.flipB && state.flipA !== state.flipB && !flipped(i)) return false;
    if (state.filter === "correct") return r[idx.correct] === true;
    if (state.filter === "wrong") return r[idx.correct] === false;
    if (state.filter === "refused") return r[idx.refused] === true;
    if (state.filter === "unmatched") return r[idx.kind] === "unmatched";
    return true;
  }

  function detail(i, name) {
    var d = details[i];
    return d && field[name] !== undefined ? d[field[name]] : null;
  }

  function fmt(x, digits) { return x === null || x === undefined ? "\u2013" : x.toFixed(digits); }

  function optionsTable(i) {
    var options = detail(i, "options");
    if (!options) return null;
    var lps = detail(i, "logprobs") || [], src = detail(i, "source") || [];
    var gold = detail(i, "gold_options") || [], chosen = detail(i, "chosen");
    var refusal = rows[i][idx.kind] === "refusal";
    var t = el("table", "options");
    var head = el("tr");
    head.appendChild(el("th", "pos", "#"));
    head.appendChild(el("th", null, "options, in the order shown"));
    if (lps.length) head.appendChild(el("th", "lp num", "log-prob"));
    head.appendChild(el("th", "marks"));
    t.appendChild(el("thead")).appendChild(head);
    var tb = t.appendChild(el("tbody"));
    options.forEach(function (text, k) {
      var s = src[k] === undefined ? k : src[k];
      var isGold = s >= 0 && gold.indexOf(s) >= 0;
      var isChosen = (s >= 0 && s === chosen) || (s < 0 && refusal);
      var tr = el("tr", (isGold ? "gold" : "") + (isChosen ? " chosen" : ""));
      tr.appendChild(el("td", "num", k + 1));
      tr.appendChild(el("td", "text", text));
      if (lps.length) tr.appendChild(el("td", "num", fmt(lps[k] === undefined ? null : lps[k], 3)));
      var marks = [];
      if (isGold) marks.push("gold");
      if (isChosen) marks.push("chosen");
      if (s < 0) marks.push("escape");
      tr.appendChild(el("td", "marks", marks.join(", ")));
      tb.appendChild(tr);
    });
    return t;
  }

  function line(dl, key, value) {
    if (value === null || value === undefined || value === "") return;
    var div = el("div");
    div.appendChild(el("dt", null, key));
    div.appendChild(el("dd", null, value));
    dl.appendChild(div);
  }

  function card(i, current) {
    var r = rows[i];
    var c = el("div", "cond-card" + (current ? " current" : ""));
    var h = el("h4");
    h.appendChild(breakable(el("span"), show(r[idx.condition])));
    var verdict = r[idx.refused] === true ? "refused" : r[idx.correct] === true ? "correct"
      : r[idx.correct] === false ? "wrong" : r[idx.kind] || "";
    h.appendChild(el("span", "badge " + verdict, verdict));
    if (current) h.appendChild(el("span", "badge this", "this row"));
    c.appendChild(h);
    var p = detail(i, "prompt");
    if (p !== null && data.prompts[p] !== undefined) {
      c.appendChild(el("div", "label", "prompt"));
      c.appendChild(el("pre", "prompt", data.prompts[p]));
    }
    var opts = optionsTable(i);
    if (opts) c.appendChild(opts);
    var dl = el("dl", "facts-small");
    var gold = detail(i, "gold") || [];
    if (details[i]) line(dl, "gold", gold.length ? gold.join(" | ") : "none (no gold answer)");
    line(dl, "output", show(r[idx.output]));
    line(dl, "parsed", (r[idx.kind] || "\u2013") + ": " + show(r[idx.parsed]));
    line(dl, "scoring", detail(i, "scoring"));
    line(dl, "shots used", detail(i, "n_shots_used"));
    line(dl, "confidence", detail(i, "confidence") === null ? null : fmt(detail(i, "confidence"), 3));
    line(dl, "sequence log-prob", detail(i, "sequence_logprob") === null ? null
      : fmt(detail(i, "sequence_logprob"), 3));
    if (detail(i, "approximate")) line(dl, "approximate", "yes: the log-probabilities are approximate");
    if (detail(i, "truncated")) line(dl, "truncated", "yes: the prompt was cut to fit the context");
    c.appendChild(dl);
    return c;
  }

  function drill(i) {
    var r = rows[i], u = units[unitKey(r)];
    var box = el("div", "drill");
    box.appendChild(breakable(el("div", "drill-head"), "item " + show(r[idx.item]) +
      " \u00b7 model " + show(r[idx.model]) + " \u00b7 sample " + show(r[idx.sample]) +
      ": every condition this report holds for it, side by side"));
    var grid = el("div", "cond-grid");
    var missing = [];
    data.conditions.forEach(function (cond) {
      if (u[cond] === undefined) missing.push(cond);
      else grid.appendChild(card(u[cond], u[cond] === i));
    });
    box.appendChild(grid);
    if (missing.length) {
      box.appendChild(el("div", "caption-note", "Not in this report for this item: " + missing.join(", ")));
    }
    return box;
  }

  function toggle(i) {
    state.open = state.open === i ? -1 : i;
    render();
  }

  function rowElement(i) {
    var tr = el("tr", "item-row");
    var r = rows[i];
    tr.tabIndex = 0;
    tr.setAttribute("aria-expanded", state.open === i ? "true" : "false");
    tr.setAttribute("data-row", String(i));
    columns.forEach(function (col, j) {
      var td = el("td");
      if (col.kind === "bool" && r[j] !== null) td.className = r[j] ? "yes" : "no";
      else if (col.kind === "int") td.className = "num";
      else if (col.wide) td.className = "text";
      if (col.kind === "bool" || col.kind === "int" || col.wide) td.textContent = show(r[j], col.kind);
      else breakable(td, show(r[j], col.kind));
      tr.appendChild(td);
    });
    tr.addEventListener("click", function () { toggle(i); });
    tr.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); toggle(i); }
    });
    return tr;
  }

  function ordered() {
    var order = [];
    for (var i = 0; i < rows.length; i++) if (keep(i)) order.push(i);
    if (state.sort >= 0) {
      var c = state.sort;
      order.sort(function (a, b) {
        var va = rows[a][c], vb = rows[b][c];
        if (va === null) return 1;
        if (vb === null) return -1;
        var x = compare(typeof va === "boolean" ? +va : va, typeof vb === "boolean" ? +vb : vb);
        return state.asc ? x : -x;
      });
    }
    return order;
  }

  function render() {
    var order = ordered();
    var pages = Math.max(1, Math.ceil(order.length / state.size));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * state.size, stop = Math.min(order.length, start + state.size);
    var frag = document.createDocumentFragment();
    for (var k = start; k < stop; k++) {
      frag.appendChild(rowElement(order[k]));
      if (order[k] === state.open) {
        var tr = el("tr", "detail");
        var td = el("td");
        td.colSpan = columns.length;
        td.appendChild(drill(order[k]));
        tr.appendChild(td);
        frag.appendChild(tr);
      }
    }
    while (body.firstChild) body.removeChild(body.firstChild);
    body.appendChild(frag);
    info.textContent = order.length
      ? "rows " + (start + 1) + "\u2013" + stop + " of " + order.length + " matching (page " +
        (state.page + 1) + " of " + pages + ")"
      : "no rows match";
    $("items-prev").disabled = state.page === 0;
    $("items-next").disabled = state.page >= pages - 1;
  }

  ["items-condition", "items-flip-a", "items-flip-b"].forEach(function (id) {
    data.conditions.forEach(function (c) {
      var o = el("option", null, c);
      o.value = c;
      $(id).appendChild(o);
    });
  });

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    th.addEventListener("click", function () {
      state.asc = state.sort === col ? !state.asc : true;
      state.sort = col;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
        h.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", state.asc ? "ascending" : "descending");
      render();
    });
  });
  function on(id, event, key, parse) {
    $(id).addEventListener(event, function () {
      state[key] = parse ? parse($(id).value) : $(id).value;
      state.page = 0;
      render();
    });
  }
  on("items-search", "input", "query", function (v) { return v.toLowerCase(); });
  on("items-filter", "change", "filter");
  on("items-condition", "change", "condition");
  on("items-flip-on", "change", "flipOn");
  on("items-flip-a", "change", "flipA");
  on("items-flip-b", "change", "flipB");
  on("items-size", "change", "size", function (v) { return parseInt(v, 10); });
  $("items-prev").addEventListener("click", function () { state.page--; render(); });
  $("items-next").addEventListener("click", function () { state.page++; render(); });
  render();
  document.documentElement.setAttribute("data-items-ready", "1");
})();
