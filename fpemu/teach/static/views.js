// fpemu explore, the other views: one number in several formats side by side, the printable
// table of every code of a small format, and one MX or NVFP4 block (with MXFP4's floor and rceil
// rules and NVFP4 side by side). Loaded before app.js, which holds the state, the URL and the
// requests; these functions only build controls and show the API's answers.
"use strict";

// Inputs for the block view: a small gradient-like tensor with one outlier.
const EXAMPLE = ["0.82", "-1.37", "0.051", "2.9", "-0.44", "12.5", "0.0013", "-2.2",
  "0.31", "0.77", "-0.065", "1.05", "-3.4", "0.18", "0.009", "-0.6",
  "4.1", "-0.27", "0.5", "-1.9", "0.033", "0.72", "-5.5", "0.11",
  "1.6", "-0.08", "0.25", "2.2", "-0.0042", "0.95", "-1.1", "0.4"];
const NOTES = { flushed: "flushed to zero", saturated: "saturated", nan: "NaN" };

function fillViewMenus(d) {
  for (const r of d.roundings) option($("cmp-rounding"), r);
  for (const f of d.formats) option($("cmp-add"), f.name, f.name + " (" + f.bits + " bits)");
  for (const f of d.formats) if (f.bits <= d.table_bits) option($("tbl-format"), f.name, f.name + " (" + f.bits + " bits)");
  for (const r of d.block_roundings) option($("block-rounding"), r);  // (fpemu.mx.quantize's: no N random bits)
  for (const b of d.blocks) option($("block-format"), b.name, b.name + " (" + b.block_size + " per block)");
  for (const s of d.scale_roundings) option($("scale-rounding"), s);
}

// A cell whose text may be long (an exact decimal): it wraps anywhere rather than widening the page.
function cell(tr, text, label, long) {
  const td = tr.insertCell();
  td.textContent = text;
  td.dataset.label = label;
  if (long) td.className = "long";
  return td;
}

// ---- one number, several formats ----------------------------------------------------------------
function compareFormats() {
  return (st.formats || page.compared.join(",")).split(/[\s,]+/).filter((f) => f);
}

function renderCompare(how) {
  how = how === "type" && PREFIX.test(st.cx) ? "hold" : how;
  const body = { value: st.cx, formats: compareFormats(), rounding: st.crounding };
  return call(async (current) => {
    const d = await api("/api/compare", body);
    if (!current()) return;
    const rows = $("cmp-table").tBodies[0];
    clear(rows);
    for (const r of d.rows) {
      const tr = rows.insertRow();
      tr.dataset.format = r.format;
      const name = tr.insertCell();
      name.dataset.label = "format";
      const link = document.createElement("a");
      link.href = "#format=" + encodeURIComponent(r.format) + "&x=" + encodeURIComponent(st.cx) +
        (st.crounding !== DEFAULTS.rounding ? "&rounding=" + encodeURIComponent(st.crounding) : "");
      link.textContent = r.format;
      link.title = "open " + r.format + " in the one-number view";
      name.appendChild(link);
      if (r.error) {
        tr.dataset.error = "1";
        const td = cell(tr, r.error, "refused", true);
        td.colSpan = 6;
        td.className = "why long";
        continue;
      }
      tr.dataset.code = r.code;
      cell(tr, r.code, "code");
      cell(tr, r.bits, "bits", true);
      cell(tr, r.value_exact, "value, exactly", true);
      cell(tr, r.error_exact === null ? "none" : r.error_exact, "error", true);
      cell(tr, r.relative_error_exact === null ? "none" : r.relative_error_exact, "relative error", true);
      const rules = cell(tr, r.rules.join(", "), "rules");
      rules.title = r.rule_texts.join("\n");
    }
  }, "cmp-result", "cmp-error", how);
}

// ---- the printable code table -------------------------------------------------------------------
function showTableControls() {
  const known = Array.from($("tbl-format").options).some((o) => o.value === st.format);
  $("tbl-format").value = known ? st.format : "";
}

function renderTable() {
  return call(async (current) => {
    const d = await api("/api/table", { format: formatSpec() });
    if (!current()) return;
    $("tbl-name").textContent = d.format.name;
    $("tbl-summary").textContent = d.summary;
    const grid = $("code-grid");
    grid.dataset.columns = String(d.columns);
    grid.dataset.bits = String(d.format.bits);
    const head = grid.tHead;
    clear(head);
    const hr = head.insertRow();
    const corner = document.createElement("th");
    corner.textContent = d.format.name;
    hr.appendChild(corner);
    for (const h of d.column_heads) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = h;
      hr.appendChild(th);
    }
    const body = grid.tBodies[0];
    clear(body);
    for (const row of d.rows) {
      const tr = body.insertRow();
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = row.head;
      tr.appendChild(th);
      for (const c of row.cells) {
        const td = tr.insertCell();
        td.textContent = c.value;
        td.className = "cls-" + c.class;
        td.dataset.code = c.code;
        td.dataset.exact = c.exact;
        td.title = c.code + " = " + c.bits + ": " + c.exact + " (" + c.class + ")";
      }
    }
  }, "tbl-result", "tbl-error");
}

// ---- one block ---------------------------------------------------------------------------------
function blockInfo() { return page.blocks.find((b) => b.name === st.block) || page.blocks[0]; }

function blockValues() {
  return Array.from($("block-inputs").querySelectorAll("input")).map((i) => i.value.trim());
}

function showBlockControls() {
  const info = blockInfo();
  $("scale-box").hidden = info.nvfp4;  // (NVFP4's scales follow its own rule: no MX scale rule to pick)
  $("block-seed-box").hidden = st.brounding !== "stochastic";
}

// The boxes of the block form: the state's values (a link, back or forward), else what the
// boxes hold (a new block format keeps what fits and leaves new boxes empty), else the example.
function buildInputs(arriving) {
  const info = blockInfo();
  const box = $("block-inputs");
  const held = box.children.length ? blockValues() : null;
  const values = st.values || (held && !arriving ? held : held && arriving ? held : EXAMPLE);
  if (box.children.length !== info.block_size) {
    clear(box);
    for (let i = 0; i < info.block_size; i++) {
      const label = document.createElement("label");
      const text = document.createElement("span");
      text.textContent = "x" + i;
      const input = document.createElement("input");
      input.id = "bx" + i;
      input.autocomplete = "off";
      input.spellcheck = false;
      label.append(text, input);
      box.appendChild(label);
    }
  }
  box.querySelectorAll("input").forEach((input, i) => { input.value = i < values.length ? values[i] : ""; });
  $("block-count").textContent = String(info.block_size);
}

function docLink(name) {  // fpemu's docs: a link where the server has them, else the name
  const span = $("block-doc");
  clear(span);
  if (!name) return;
  if (page.docs) {
    const a = document.createElement("a");
    a.href = "/docs/" + name;
    a.target = "_blank";
    a.textContent = "(docs/" + name + ")";
    span.appendChild(a);
  } else {
    span.textContent = "(fpemu's docs/" + name + ")";
  }
}

function renderBlock() {
  const info = blockInfo();
  const values = blockValues();
  const body = { format: info.name, values: values, rounding: st.brounding, seed: st.bseed };
  if (!info.nvfp4) body.scale_rounding = st.scale;
  if (info.nvfp4 && st.tamax.trim()) body.tensor_amax = st.tamax.trim();
  const both = { values: values.slice(0, 32), tensor_amax: st.tamax.trim() || null };
  return call(async (current) => {
    const [d, c] = await Promise.all([api("/api/block", body), api("/api/blocks", both)]);
    if (!current()) return;
    $("block-scale-code").textContent = d.scale.code;
    $("block-scale-bits").textContent = d.scale.bits;
    $("block-scale-value").textContent = d.scale.value;
    $("block-scale-why").textContent = d.scale.why ? "(" + d.scale.why + ")" : "";
    $("block-global").textContent = d.global_scale === null ? "none (MX has only the block scale)"
      : d.global_scale + " = tensor amax / (448 × 6), in FP32, with the tensor amax " + d.tensor_amax +
        (d.tensor_amax_given ? " (as typed)" : " (this block's own: its block scale is then 448 exactly; " +
        "type a larger tensor amax to see UE4M3 round the block scale)") +
        ": each value is element × block scale × this, in float32 as TransformerEngine computes it";
    $("block-amax").textContent = d.amax;
    $("block-rule").textContent = d.rule;
    docLink(d.doc);
    $("block-summary").textContent = d.summary;
    const rows = $("block-table").tBodies[0];
    const reasons = $("block-reasons");
    clear(rows);
    clear(reasons);
    const said = new Set();
    for (const e of d.elements) {
      const tr = rows.insertRow();
      if (e.flag) tr.className = "flag-" + e.flag;
      tr.dataset.flag = e.flag;
      tr.dataset.index = String(e.index);
      tr.title = e.why;
      const labels = ["box", "input", "code", "bits", "element value", "value", "error", "note"];
      [("x" + e.index), e.input, e.code, e.bits, e.element, e.value, e.error === null ? "" : e.error,
        e.flag ? NOTES[e.flag] : ""].forEach((text, k) => cell(tr, text, labels[k], k >= 4 && k <= 6));
      if (e.flag && !said.has(e.why)) {  // each reason once, under the summary
        said.add(e.why);
        const li = document.createElement("li");
        li.className = "flag-" + e.flag;
        li.textContent = NOTES[e.flag] + ": " + e.why;
        reasons.appendChild(li);
      }
    }
    renderSchemes(c);
  }, "block-result", "block-error");
}

function renderSchemes(c) {
  const table = $("blocks-compare");
  clear(table.tHead);
  const hr = table.tHead.insertRow();
  for (const text of ["box", "input"].concat(c.schemes.map((s) => s.label))) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = text;
    hr.appendChild(th);
  }
  const sr = table.tHead.insertRow();
  sr.className = "scales";
  for (const text of ["", "scales"].concat(c.schemes.map((s) => s.scales.join(", ") +
    (s.tensor_scale ? " × tensor scale " + s.tensor_scale + " (tensor amax " + s.tensor_amax + ")" : "")))) {
    const th = document.createElement("th");
    th.textContent = text;
    th.className = "long";
    sr.appendChild(th);
  }
  const body = table.tBodies[0];
  clear(body);
  for (const r of c.rows) {
    const tr = body.insertRow();
    tr.dataset.index = String(r.index);
    cell(tr, "x" + r.index, "box");
    cell(tr, r.input, "input");
    r.values.forEach((v, k) => {
      const td = cell(tr, v + (r.flags[k] ? " (" + NOTES[r.flags[k]] + ")" : ""), c.schemes[k].label, true);
      td.dataset.value = v;
      td.dataset.error = r.errors[k] === null ? "" : r.errors[k];
      td.title = "error " + (r.errors[k] === null ? "none" : r.errors[k]);
    });
  }
}

function blockChanged(how) {
  return change({ values: blockValues(), block: $("block-format").value, scale: $("scale-rounding").value,
    brounding: $("block-rounding").value, bseed: $("block-seed").value.trim() || "0",
    tamax: $("block-tamax").value.trim() }, how);
}

function compareChanged() {
  const formats = $("cmp-formats").value.split(/[\s,]+/).filter((f) => f).join(",");
  return change({ cx: $("cmp-number").value, formats: formats === page.compared.join(",") ? null : formats,
    crounding: $("cmp-rounding").value });
}

function wireViews() {
  $("compare-form").addEventListener("submit", (e) => { e.preventDefault(); compareChanged(); });
  $("cmp-number").addEventListener("input", () => later(() => change({ cx: $("cmp-number").value }, "type")));
  $("cmp-number").addEventListener("change", () => { page.typing = null; });
  $("cmp-rounding").addEventListener("change", compareChanged);
  $("cmp-formats").addEventListener("change", compareChanged);
  $("cmp-add").addEventListener("change", () => {
    const name = $("cmp-add").value;
    if (!name) return;
    const now = $("cmp-formats").value.split(/[\s,]+/).filter((f) => f);
    if (!now.includes(name)) now.push(name);
    $("cmp-formats").value = now.join(", ");
    $("cmp-add").value = "";
    compareChanged();
  });
  $("tbl-format").addEventListener("change", () => change({ format: $("tbl-format").value, custom: null, code: null }));
  $("tbl-print").addEventListener("click", () => window.print());
  $("block-format").addEventListener("change", () => {
    const was = blockValues();
    st.block = $("block-format").value;
    st.values = null;
    buildInputs();
    const lost = was.slice(blockInfo().block_size).filter((v) => v !== "");
    $("block-notice").textContent = lost.length ? st.block + " holds " + blockInfo().block_size +
      " values: the " + lost.length + " typed past x" + (blockInfo().block_size - 1) + " are left out" : "";
    showBlockControls();
    blockChanged();
  });
  $("scale-rounding").addEventListener("change", () => blockChanged());
  $("block-rounding").addEventListener("change", () => {
    $("block-seed-box").hidden = $("block-rounding").value !== "stochastic";
    blockChanged();
  });
  $("block-seed").addEventListener("change", () => blockChanged());
  $("block-tamax").addEventListener("change", () => blockChanged());
  $("block-example").addEventListener("click", () => {
    $("block-inputs").querySelectorAll("input").forEach((input, i) => { input.value = EXAMPLE[i]; });
    blockChanged();
  });
  $("block-form").addEventListener("submit", (e) => { e.preventDefault(); $("block-notice").textContent = ""; blockChanged(); });
}
