// steadyeval report: sortable tables and the per-item table (search, sort, pages).
// Cells are written with textContent only: data never becomes markup.
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
  var columns = data.columns, rows = data.rows;
  var state = { query: "", filter: "all", sort: -1, asc: true, page: 0, size: 50 };
  var table = document.getElementById("items-table");
  var body = table.tBodies[0];
  var info = document.getElementById("items-info");
  var search = document.getElementById("items-search");
  var filter = document.getElementById("items-filter");
  var size = document.getElementById("items-size");
  var idx = {};
  columns.forEach(function (c, i) { idx[c.name] = i; });
  var lowered = rows.map(function (r) {
    return r.map(function (v) { return v === null ? "" : String(v); }).join("\u0001").toLowerCase();
  });

  function show(v, kind) {
    if (v === null || v === undefined) return "\u2013";
    if (kind === "bool") return v ? "yes" : "no";
    return String(v);
  }

  function keep(i) {
    var r = rows[i];
    if (state.query && lowered[i].indexOf(state.query) < 0) return false;
    if (state.filter === "correct") return r[idx.correct] === true;
    if (state.filter === "wrong") return r[idx.correct] === false;
    if (state.filter === "refused") return r[idx.refused] === true;
    if (state.filter === "unmatched") return r[idx.kind] === "unmatched";
    return true;
  }

  function render() {
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
    var pages = Math.max(1, Math.ceil(order.length / state.size));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * state.size, stop = Math.min(order.length, start + state.size);
    var frag = document.createDocumentFragment();
    for (var k = start; k < stop; k++) {
      var tr = document.createElement("tr");
      var r = rows[order[k]];
      columns.forEach(function (col, j) {
        var td = document.createElement("td");
        td.textContent = show(r[j], col.kind);
        if (col.kind === "bool" && r[j] !== null) td.className = r[j] ? "yes" : "no";
        else if (col.kind === "int") td.className = "num";
        else if (col.wide) td.className = "text";
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    }
    while (body.firstChild) body.removeChild(body.firstChild);
    body.appendChild(frag);
    info.textContent = order.length
      ? "rows " + (start + 1) + "\u2013" + stop + " of " + order.length + " matching (page " +
        (state.page + 1) + " of " + pages + ")"
      : "no rows match";
    document.getElementById("items-prev").disabled = state.page === 0;
    document.getElementById("items-next").disabled = state.page >= pages - 1;
  }

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
  search.addEventListener("input", function () {
    state.query = search.value.toLowerCase(); state.page = 0; render();
  });
  filter.addEventListener("change", function () { state.filter = filter.value; state.page = 0; render(); });
  size.addEventListener("change", function () { state.size = parseInt(size.value, 10); state.page = 0; render(); });
  document.getElementById("items-prev").addEventListener("click", function () { state.page--; render(); });
  document.getElementById("items-next").addEventListener("click", function () { state.page++; render(); });
  render();
  document.documentElement.setAttribute("data-items-ready", "1");
})();
