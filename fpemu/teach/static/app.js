// fpemu explore: the page only shows what the server's JSON API computes with fpemu's codec.
// Flipping a bit edits a string of 0s and 1s; every value, field meaning and rule comes back
// from /api/code, /api/encode or /api/block.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { custom: null, bits: "", blocks: [], seq: 0 };
// Inputs for the block view: a small gradient-like tensor with one outlier.
const EXAMPLE = ["0.82", "-1.37", "0.051", "2.9", "-0.44", "12.5", "0.0013", "-2.2",
  "0.31", "0.77", "-0.065", "1.05", "-3.4", "0.18", "0.009", "-0.6",
  "4.1", "-0.27", "0.5", "-1.9", "0.033", "0.72", "-5.5", "0.11",
  "1.6", "-0.08", "0.25", "2.2", "-0.0042", "0.95", "-1.1", "0.4"];

function done() {  // one request answered (tests wait on this counter)
  state.seq += 1;
  document.body.dataset.seq = String(state.seq);
}

async function api(path, body) {
  const opts = body === undefined ? {} :
    { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const reply = await fetch(path, opts);
  const data = await reply.json();
  if (!reply.ok) throw new Error(data.error || reply.statusText);
  return data;
}

function formatSpec() { return state.custom || $("format").value; }

function option(select, value, text) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text || value;
  select.appendChild(o);
  return o;
}

function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

function showError(id, message) { $(id).textContent = message ? "Error: " + message : ""; }

// ---- one number ------------------------------------------------------------------------------
function renderBits(d) {
  const box = $("bits");
  const focused = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.index : undefined;
  clear(box);
  let at = 0;
  for (const [name, width] of d.format.layout) {
    const group = document.createElement("div");
    group.className = "field";
    group.setAttribute("role", "group");
    group.setAttribute("aria-label", name + " bits");
    const label = document.createElement("span");
    label.className = "field-name";
    label.textContent = name;
    label.setAttribute("aria-hidden", "true");
    const row = document.createElement("div");
    row.className = "field-bits";
    for (let k = 0; k < width; k++, at++) {
      const bit = d.bits[at];
      const b = document.createElement("button");
      b.type = "button";
      b.className = "bit " + name;
      b.textContent = bit;
      b.dataset.index = String(at);
      b.setAttribute("aria-pressed", bit === "1" ? "true" : "false");
      b.setAttribute("aria-label", name + " bit " + (k + 1) + " of " + width + ", " + bit);
      const index = at;
      b.addEventListener("click", () => flip(index));
      row.appendChild(b);
    }
    group.append(label, row);
    box.appendChild(group);
  }
  if (focused !== undefined) {
    const again = box.querySelector('[data-index="' + focused + '"]');
    if (again) again.focus();
  }
}

function neighbour(id, n) {
  const b = $(id);
  b.disabled = !n;
  b.textContent = n ? n.value + " (" + n.code + ")" : "none";
  b.dataset.bits = n ? n.bits : "";
}

function renderCode(d, rounded) {
  state.bits = d.bits;
  const f = d.format;
  $("format-summary").textContent = f.name + ": " + f.bits + " bits, largest " + f.max +
    ", smallest normal " + f.min_normal +
    (f.min_subnormal === null ? ", no subnormals" : ", smallest subnormal " + f.min_subnormal);
  renderBits(d);
  $("out-code").textContent = d.code;
  $("out-bits").textContent = d.fields.map((x) => x.bits).join(" ");
  const body = $("out-fields").tBodies[0];
  clear(body);
  for (const field of d.fields) {
    const tr = body.insertRow();
    for (const text of [field.name, field.bits, field.meaning]) tr.insertCell().textContent = text;
  }
  $("out-class").textContent = d.class;
  $("out-formula").textContent = d.formula;
  $("out-value").textContent = d.value;
  neighbour("out-down", d.down);
  neighbour("out-up", d.up);
  $("rounding-out").hidden = !rounded;
  if (rounded) {
    $("out-input").textContent = d.input;
    $("out-value-exact").textContent = d.value_exact;
    $("out-error").textContent = d.error === null ? "none (not a finite number)" : d.error;
    $("out-relative").textContent = d.relative_error === null ? "none" : d.relative_error;
    const rules = $("out-rules");
    clear(rules);
    for (const r of d.rules) {
      const li = document.createElement("li");
      li.dataset.rule = r.rule;
      const name = document.createElement("span");
      name.className = "rule-name";
      name.textContent = r.rule + ": ";
      li.append(name, document.createTextNode(r.text));
      rules.appendChild(li);
    }
  }
  showError("error", "");
}

async function call(work, errorId) {
  try {
    await work();
  } catch (e) {
    showError(errorId, e.message);
  } finally {
    done();
  }
}

function roundNumber() {
  return call(async () => {
    const d = await api("/api/encode", { format: formatSpec(), value: $("number").value,
      rounding: $("rounding").value, overflow: $("overflow").value });
    renderCode(d, true);
  }, "error");
}

function showCode(bits) {
  return call(async () => renderCode(await api("/api/code", { format: formatSpec(), code: bits }), false), "error");
}

function flip(i) {
  const b = state.bits;
  return showCode(b.slice(0, i) + (b[i] === "1" ? "0" : "1") + b.slice(i + 1));
}

function customSpec() {
  return { name: $("custom-name").value || "custom", exponent_bits: Number($("custom-e").value),
    mantissa_bits: Number($("custom-m").value), bias: Number($("custom-bias").value),
    signed: $("custom-signed").checked, subnormals: $("custom-subnormals").checked,
    inf: $("custom-inf").value, nan: $("custom-nan").value };
}

function useCustom(event) {
  event.preventDefault();
  const spec = customSpec();
  return call(async () => {
    const d = await api("/api/encode", { format: spec, value: $("number").value,
      rounding: $("rounding").value, overflow: $("overflow").value });
    state.custom = spec;
    $("custom-option").textContent = spec.name + " (your own)";
    $("format").value = "custom";
    renderCode(d, true);
  }, "error");
}

function formatChanged() {
  if ($("format").value === "custom") {
    $("custom").open = true;
    $("custom-name").focus();
    return;
  }
  state.custom = null;
  roundNumber();
}

// ---- one block -------------------------------------------------------------------------------
function blockInfo() { return state.blocks.find((b) => b.name === $("block-format").value); }

function buildInputs() {
  const info = blockInfo();
  const box = $("block-inputs");
  const old = Array.from(box.querySelectorAll("input")).map((i) => i.value);
  clear(box);
  for (let i = 0; i < info.block_size; i++) {
    const label = document.createElement("label");
    const text = document.createElement("span");
    text.textContent = "x" + i;
    const input = document.createElement("input");
    input.id = "bx" + i;
    input.autocomplete = "off";
    input.value = i < old.length ? old[i] : EXAMPLE[i];
    label.append(text, input);
    box.appendChild(label);
  }
  $("block-count").textContent = String(info.block_size);
  $("scale-rounding").disabled = info.nvfp4;
}

function runBlock(event) {
  if (event) event.preventDefault();
  const info = blockInfo();
  const values = Array.from($("block-inputs").querySelectorAll("input")).map((i) => i.value.trim())
    .filter((v) => v !== "");
  const body = { format: info.name, values: values };
  if (!info.nvfp4) body.scale_rounding = $("scale-rounding").value;
  return call(async () => {
    const d = await api("/api/block", body);
    $("block-scale-code").textContent = d.scale.code;
    $("block-scale-bits").textContent = d.scale.bits;
    $("block-scale-value").textContent = d.scale.value;
    $("block-global").textContent = d.global_scale === null ? "none (MX has only the block scale)" : d.global_scale;
    $("block-amax").textContent = d.amax;
    $("block-rule").textContent = d.rule;
    const rows = $("block-table").tBodies[0];
    clear(rows);
    d.elements.forEach((e, i) => {
      const tr = rows.insertRow();
      for (const text of [String(i), e.input, e.code, e.bits, e.element, e.value, e.error === null ? "" : e.error]) {
        tr.insertCell().textContent = text;
      }
    });
    $("block-result").hidden = false;
    showError("block-error", "");
  }, "block-error");
}

function showView(name) {
  for (const v of ["number", "block"]) {
    $("view-" + v).hidden = v !== name;
    $("tab-" + v).setAttribute("aria-pressed", v === name ? "true" : "false");
  }
  if (name === "block" && !state.blockShown) {
    state.blockShown = true;
    runBlock();
  }
}

// ---- start -----------------------------------------------------------------------------------
async function init() {
  const d = await api("/api/formats");
  for (const f of d.formats) option($("format"), f.name, f.name + " (" + f.bits + " bits)");
  option($("format"), "custom", "your own format…").id = "custom-option";
  for (const r of d.roundings) option($("rounding"), r);
  for (const o of d.overflows) option($("overflow"), o, o === "default" ? "the format's own" : o);
  state.blocks = d.blocks;
  for (const b of d.blocks) option($("block-format"), b.name, b.name + " (" + b.block_size + " per block)");
  for (const s of d.scale_roundings) option($("scale-rounding"), s);
  const wanted = new URLSearchParams(location.hash.slice(1)).get("format");
  $("format").value = d.formats.some((f) => f.name === wanted) ? wanted : "e4m3";
  buildInputs();

  $("format").addEventListener("change", formatChanged);
  $("encode-form").addEventListener("submit", (e) => { e.preventDefault(); roundNumber(); });
  $("rounding").addEventListener("change", roundNumber);
  $("overflow").addEventListener("change", roundNumber);
  $("custom-form").addEventListener("submit", useCustom);
  for (const id of ["out-down", "out-up"]) $(id).addEventListener("click", () => showCode($(id).dataset.bits));
  $("tab-number").addEventListener("click", () => showView("number"));
  $("tab-block").addEventListener("click", () => showView("block"));
  $("block-format").addEventListener("change", () => { buildInputs(); runBlock(); });
  $("scale-rounding").addEventListener("change", () => runBlock());
  $("block-example").addEventListener("click", () => {
    $("block-inputs").querySelectorAll("input").forEach((input, i) => { input.value = EXAMPLE[i]; });
    runBlock();
  });
  $("block-form").addEventListener("submit", runBlock);
  await roundNumber();
  document.body.dataset.ready = "1";
}

init().catch((e) => { showError("error", e.message); done(); });
