// fpemu explore: the page only shows what the server's JSON API computes with fpemu's codec.
// Every control edits one state (below); the state lives in the URL hash, so a link shares it
// and the back button walks back through it. Values, field meanings and rules come from
// /api/code, /api/encode and /api/block; the page does no float arithmetic of its own (codes
// are stepped as BigInt integers).
"use strict";

const $ = (id) => document.getElementById(id);
// Inputs for the block view: a small gradient-like tensor with one outlier.
const EXAMPLE = ["0.82", "-1.37", "0.051", "2.9", "-0.44", "12.5", "0.0013", "-2.2",
  "0.31", "0.77", "-0.065", "1.05", "-3.4", "0.18", "0.009", "-0.6",
  "4.1", "-0.27", "0.5", "-1.9", "0.033", "0.72", "-5.5", "0.11",
  "1.6", "-0.08", "0.25", "2.2", "-0.0042", "0.95", "-1.1", "0.4"];
const DEFAULTS = { view: "number", format: "e4m3", x: "0.3", code: null, rounding: "nearest_even",
  overflow: "default", nan: "default", seed: "0", srbits: "8", block: "mxfp4", scale: "floor", brounding: "nearest_even",
  bseed: "0", values: null, custom: null };
const CUSTOM_KEYS = { name: "cname", exponent_bits: "ce", mantissa_bits: "cm", bias: "cbias",
  signed: "csigned", subnormals: "csub", inf: "cinf", nan: "cnan" };
const NOTES = { flushed: "flushed to zero", saturated: "saturated", nan: "NaN" };

let st = Object.assign({}, DEFAULTS);      // what the page shows
// Which roundings take a seed, and which also N random bits (from /api/formats).
const modes = { seeded: ["stochastic"], withBits: [] };
const page = { bits: "", blocks: [], formats: [], seq: 0, ticket: 0, hash: "", typing: null, timer: null };

function done() {  // one request answered (tests wait on this counter)
  page.seq += 1;
  document.body.dataset.seq = String(page.seq);
  document.body.dataset.answered = String(page.ticket);  // (asked = answered: nothing in flight)
}

async function api(path, body) {
  const opts = body === undefined ? {} :
    { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const reply = await fetch(path, opts);
  const data = await reply.json();
  if (!reply.ok) throw new Error(data.error || reply.statusText);
  return data;
}

function option(select, value, text) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text || value;
  select.appendChild(o);
  return o;
}

function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

// ---- the state in the URL ------------------------------------------------------------------
function toHash(s) {
  const p = new URLSearchParams();
  for (const key of ["view", "format", "rounding", "overflow", "nan", "seed", "srbits", "block", "scale", "brounding", "bseed"]) {
    if (s[key] !== DEFAULTS[key]) p.set(key, s[key]);
  }
  if (s.code !== null) p.set("code", s.code); else p.set("x", s.x);
  if (s.custom) for (const [k, short] of Object.entries(CUSTOM_KEYS)) p.set(short, String(s.custom[k]));
  if (s.values) p.set("values", s.values.join(","));
  return "#" + p.toString();
}

function fromHash(hash) {
  const p = new URLSearchParams(hash.replace(/^#/, ""));
  const s = Object.assign({}, DEFAULTS);
  for (const key of Object.keys(DEFAULTS)) if (p.has(key) && key !== "custom" && key !== "values") s[key] = p.get(key);
  if (p.has("code")) { s.code = p.get("code"); s.x = DEFAULTS.x; }
  if (p.has("values")) s.values = p.get("values").split(",");
  if (s.format === "custom") {
    s.custom = {};
    for (const [k, short] of Object.entries(CUSTOM_KEYS)) s.custom[k] = p.get(short) || "";
    for (const k of ["exponent_bits", "mantissa_bits", "bias"]) s.custom[k] = Number(s.custom[k]);
    for (const k of ["signed", "subnormals"]) s.custom[k] = s.custom[k] !== "false";
  }
  return s;
}

// Record the state: a new history entry (push), or this one rewritten (while typing).
function record(push) {
  const hash = toHash(st);
  if (hash === location.hash) return;
  page.hash = hash;
  if (push) history.pushState(null, "", hash); else history.replaceState(null, "", hash);
}

function change(updates, how) {  // how: "type" (a keystroke in a live field), else a step
  if (how !== "type") clearTimeout(page.timer);  // (a step replaces what the typing would ask)
  Object.assign(st, updates);
  if (how === "type") {
    const first = page.typing === null;
    page.typing = true;
    record(first);
  } else {
    page.typing = null;
    record(true);
  }
  return render();
}

function arrived() {  // back, forward, or a hash typed by hand
  if (location.hash === page.hash) return;
  page.hash = location.hash;
  st = fromHash(location.hash);
  page.typing = null;
  showControls();
  render();
}

// ---- controls from the state -------------------------------------------------------------
function showControls() {
  const known = page.formats.some((f) => f.name === st.format);
  if (!known && st.format !== "custom") st.format = DEFAULTS.format;
  $("format").value = st.format;
  if (st.custom) {
    for (const [k, id] of [["name", "custom-name"], ["exponent_bits", "custom-e"], ["mantissa_bits", "custom-m"],
      ["bias", "custom-bias"], ["inf", "custom-inf"], ["nan", "custom-nan"]]) $(id).value = String(st.custom[k]);
    $("custom-signed").checked = st.custom.signed;
    $("custom-subnormals").checked = st.custom.subnormals;
    $("custom-option").textContent = st.custom.name + " (your own)";
  }
  for (const [id, key] of [["rounding", "rounding"], ["overflow", "overflow"], ["nan", "nan"], ["seed", "seed"],
    ["srbits", "srbits"],
    ["block-format", "block"], ["scale-rounding", "scale"], ["block-rounding", "brounding"], ["block-seed", "bseed"]]) {
    $(id).value = st[key];
  }
  if (st.code === null && document.activeElement !== $("number")) $("number").value = st.x;
  showRandomControls(st.rounding);
  $("block-seed-box").hidden = st.brounding !== "stochastic";
  buildInputs();
  for (const v of ["number", "block"]) {
    $("view-" + v).hidden = v !== st.view;
    $("tab-" + v).setAttribute("aria-pressed", v === st.view ? "true" : "false");
  }
}

function showRandomControls(rounding) {  // the seed for the stochastic modes; N bits for A, B, C, odd
  $("seed-box").hidden = !modes.seeded.includes(rounding);
  $("srbits-box").hidden = !modes.withBits.includes(rounding);
}

// What /api/encode is asked besides the number: the options, the seed, N random bits where the
// rounding takes them (as the field holds them: the codec says what it refuses).
function encodeOptions() {
  const o = { rounding: st.rounding, overflow: st.overflow, nan: st.nan, seed: Number(st.seed) };
  if (modes.withBits.includes(st.rounding)) o.sr_bits = st.srbits.trim() === "" ? null : Number(st.srbits);
  return o;
}

function formatSpec() { return st.format === "custom" ? st.custom : st.format; }

// ---- one number ------------------------------------------------------------------------------
function stepButton(label, text, action, disabled) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "step";
  b.textContent = text;
  b.setAttribute("aria-label", label);
  b.disabled = disabled;
  b.addEventListener("click", action);
  return b;
}

function renderBits(d) {
  const box = $("bits");
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset : {};
  const again = focused.index !== undefined ? '[data-index="' + focused.index + '"]'
    : focused.step !== undefined ? '[data-step="' + focused.step + '"]' : null;
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
    const start = at;
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
    const steps = document.createElement("div");
    steps.className = "field-steps";
    const value = BigInt("0b" + d.bits.slice(start, start + width));
    const top = (1n << BigInt(width)) - 1n;
    const down = stepButton(name + " field − 1", "−", () => stepField(start, width, -1n), value === 0n);
    const up = stepButton(name + " field + 1", "+", () => stepField(start, width, 1n), value === top);
    down.dataset.step = name + "-down";
    up.dataset.step = name + "-up";
    steps.append(down, up);
    group.append(label, row, steps);
    box.appendChild(group);
  }
  if (again) {
    const node = box.querySelector(again);
    if (node && !node.disabled) node.focus();
  }
}

function neighbour(id, n) {
  const b = $(id);
  b.disabled = !n;
  b.textContent = n ? n.value + " (" + n.code + ")" : "none";
  b.dataset.bits = n ? n.bits : "";
}

function setUnlessTyping(id, value) {
  if (document.activeElement !== $(id) || page.typing === null) $(id).value = value;
}

function renderCode(d, rounded) {
  page.bits = d.bits;
  const f = d.format;
  $("format-summary").textContent = f.name + ": " + f.bits + " bits, largest " + f.max +
    ", smallest normal " + f.min_normal +
    (f.min_subnormal === null ? ", no subnormals" : ", smallest subnormal " + f.min_subnormal);
  renderBits(d);
  $("out-code").textContent = d.code;
  $("out-integer").textContent = d.integer;
  $("out-bits").textContent = d.fields.map((x) => x.bits).join(" ");
  setUnlessTyping("hex", d.code);
  setUnlessTyping("integer", d.integer);
  const raw = BigInt("0b" + d.bits);
  $("code-down").disabled = raw === 0n;
  $("code-up").disabled = raw === (1n << BigInt(d.bits.length)) - 1n;
  const body = $("out-fields").tBodies[0];
  clear(body);
  for (const field of d.fields) {
    const tr = body.insertRow();
    for (const text of [field.name, field.bits, field.meaning]) tr.insertCell().textContent = text;
  }
  $("out-class").textContent = d.class;
  $("out-formula").textContent = d.formula;
  $("out-value").textContent = d.value_exact;
  $("out-value-short").textContent = d.value;
  neighbour("out-down", d.down);
  neighbour("out-up", d.up);
  $("rounding-out").hidden = !rounded;
  if (rounded) {
    $("out-input").textContent = d.input;
    $("out-error").textContent = d.error_exact === null ? "none (not a finite number)" : d.error_exact;
    $("out-relative").textContent = d.relative_error_exact === null ? "none" : d.relative_error_exact +
      (d.relative_error_exact.includes("/") || d.relative_error_exact.startsWith("≈") ? " ≈ " + d.relative_error : "");
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
  } else {
    setUnlessTyping("number", d.class === "nan" || d.class === "inf" ? d.value : d.value_exact);
  }
}

function showError(resultId, errorId, message) {  // an error replaces the result
  $(errorId).textContent = message ? "Error: " + message : "";
  $(resultId).hidden = Boolean(message);
}

// One request and what it shows. A later request makes this one stale: its answer is dropped
// (answers can arrive out of order), and only the latest counts as done.
async function call(work, resultId, errorId) {
  const ticket = ++page.ticket;
  document.body.dataset.asked = String(ticket);
  const current = () => ticket === page.ticket;
  try {
    await work(current);
    if (current()) showError(resultId, errorId, "");
  } catch (e) {
    if (current()) showError(resultId, errorId, e.message);
  } finally {
    if (current()) done();
  }
}

function renderNumber() {
  const spec = formatSpec();
  if (st.code !== null) {
    return call(async (current) => {
      const d = await api("/api/code", { format: spec, code: st.code });
      if (current()) renderCode(d, false);
    }, "result", "error");
  }
  return call(async (current) => {
    const d = await api("/api/encode", Object.assign({ format: spec, value: st.x }, encodeOptions()));
    if (current()) renderCode(d, true);
  }, "result", "error");
}

function render() { return st.view === "block" ? renderBlock() : renderNumber(); }

function flip(i) {
  const b = page.bits;
  return change({ code: b.slice(0, i) + (b[i] === "1" ? "0" : "1") + b.slice(i + 1) });  // (bits: the API reads them)
}

function stepField(start, width, by) {
  const b = page.bits;
  const value = BigInt("0b" + b.slice(start, start + width)) + by;
  const field = value.toString(2).padStart(width, "0");
  return change({ code: b.slice(0, start) + field + b.slice(start + width) });
}

function stepCode(by) {
  const raw = BigInt("0b" + page.bits) + by;
  return change({ code: raw.toString(2).padStart(page.bits.length, "0") });
}

function typedCode(id) {  // the hex or the integer field: a code, or an error in words
  const text = $(id).value.trim().replace(/_/g, "");
  let code;
  try {
    code = id === "hex" ? BigInt(/^0x/i.test(text) ? text : "0x" + text) : BigInt(text);
    if (text === "" || code < 0n) throw new Error();
  } catch (e) {
    page.ticket += 1;  // (what was asked before is stale now)
    document.body.dataset.asked = String(page.ticket);
    showError("result", "error", id === "hex" ? "a code in hex is digits 0-9 and A-F, got '" + text + "'"
      : "a code as an integer is digits 0-9, got '" + text + "'");
    done();
    return null;
  }
  return "0x" + code.toString(16).toUpperCase();
}

function later(work) {  // live fields: answer when the typing pauses
  clearTimeout(page.timer);
  page.timer = setTimeout(work, 200);
}

function customSpec() {
  return { name: $("custom-name").value || "custom", exponent_bits: Number($("custom-e").value),
    mantissa_bits: Number($("custom-m").value), bias: Number($("custom-bias").value),
    signed: $("custom-signed").checked, subnormals: $("custom-subnormals").checked,
    inf: $("custom-inf").value, nan: $("custom-nan").value };
}

function useCustom(event) {
  event.preventDefault();
  clearTimeout(page.timer);  // (it encodes the number field as it is: no typed request after it)
  const spec = customSpec();
  return call(async () => {
    await api("/api/encode", Object.assign({ format: spec, value: $("number").value }, encodeOptions()));  // refused before it is kept
    $("custom-option").textContent = spec.name + " (your own)";
    $("format").value = "custom";
    await change({ format: "custom", custom: spec, code: null, x: $("number").value });
  }, "result", "error");
}

function formatChanged() {
  if ($("format").value === "custom") {
    $("custom").open = true;
    $("custom-name").focus();
    return;
  }
  const keep = st.code === null ? {} : { code: null, x: $("number").value };  // the number, in the new format
  change(Object.assign({ format: $("format").value, custom: null }, keep));
}

// ---- one block -------------------------------------------------------------------------------
function blockInfo() { return page.blocks.find((b) => b.name === st.block) || page.blocks[0]; }

function blockValues() {
  return Array.from($("block-inputs").querySelectorAll("input")).map((i) => i.value.trim());
}

function buildInputs() {
  const info = blockInfo();
  const box = $("block-inputs");
  const old = st.values || blockValues();
  if (box.children.length !== info.block_size) {
    clear(box);
    for (let i = 0; i < info.block_size; i++) {
      const label = document.createElement("label");
      const text = document.createElement("span");
      text.textContent = "x" + i;
      const input = document.createElement("input");
      input.id = "bx" + i;
      input.autocomplete = "off";
      label.append(text, input);
      box.appendChild(label);
    }
  }
  box.querySelectorAll("input").forEach((input, i) => {
    input.value = st.values ? (i < st.values.length ? st.values[i] : "") : (i < old.length && old[i] ? old[i] : EXAMPLE[i]);
  });
  $("block-count").textContent = String(info.block_size);
  $("scale-rounding").disabled = info.nvfp4;
}

function renderBlock() {
  const info = blockInfo();
  const values = blockValues().filter((v) => v !== "");
  const body = { format: info.name, values: values, rounding: st.brounding, seed: Number(st.bseed) };
  if (!info.nvfp4) body.scale_rounding = st.scale;
  return call(async (current) => {
    const d = await api("/api/block", body);
    if (!current()) return;
    $("block-scale-code").textContent = d.scale.code;
    $("block-scale-bits").textContent = d.scale.bits;
    $("block-scale-value").textContent = d.scale.value;
    $("block-scale-why").textContent = d.scale.why ? "(" + d.scale.why + ")" : "";
    $("block-global").textContent = d.global_scale === null ? "none (MX has only the block scale)"
      : d.global_scale + " = amax / (448 × 6), in FP32: each value is element × block scale × this, " +
        "in float32 as TransformerEngine computes it";
    $("block-amax").textContent = d.amax;
    $("block-rule").textContent = d.rule;
    $("block-summary").textContent = d.summary;
    const rows = $("block-table").tBodies[0];
    const reasons = $("block-reasons");
    clear(rows);
    clear(reasons);
    const said = new Set();
    d.elements.forEach((e, i) => {
      const tr = rows.insertRow();
      if (e.flag) tr.className = "flag-" + e.flag;
      tr.dataset.flag = e.flag;
      tr.title = e.why;
      for (const text of [String(i), e.input, e.code, e.bits, e.element, e.value, e.error === null ? "" : e.error,
        e.flag ? NOTES[e.flag] : ""]) {
        tr.insertCell().textContent = text;
      }
      if (e.flag && !said.has(e.why)) {  // each reason once, under the summary
        said.add(e.why);
        const li = document.createElement("li");
        li.className = "flag-" + e.flag;
        li.textContent = NOTES[e.flag] + ": " + e.why;
        reasons.appendChild(li);
      }
    });
  }, "block-result", "block-error");
}

function blockChanged(how) {
  return change({ values: blockValues(), block: $("block-format").value, scale: $("scale-rounding").value,
    brounding: $("block-rounding").value, bseed: $("block-seed").value || "0" }, how);
}

// ---- start -----------------------------------------------------------------------------------
function wire() {
  $("format").addEventListener("change", formatChanged);
  $("encode-form").addEventListener("submit", (e) => { e.preventDefault(); change({ code: null, x: $("number").value }); });
  $("number").addEventListener("input", () => later(() => change({ code: null, x: $("number").value }, "type")));
  $("number").addEventListener("change", () => { page.typing = null; });
  for (const id of ["hex", "integer"]) {
    $(id).addEventListener("input", () => later(() => {
      const code = typedCode(id);
      if (code !== null) change({ code: code }, "type");
    }));
    $(id).addEventListener("change", () => {  // leaving the field: it shows the code as the page writes it
      page.typing = null;
      if (!$("result").hidden) $(id).value = $(id === "hex" ? "out-code" : "out-integer").textContent;
    });
  }
  $("code-form").addEventListener("submit", (e) => e.preventDefault());
  $("code-down").addEventListener("click", () => stepCode(-1n));
  $("code-up").addEventListener("click", () => stepCode(1n));
  $("rounding").addEventListener("change", () => {
    showRandomControls($("rounding").value);
    change({ rounding: $("rounding").value, code: null, x: $("number").value });
  });
  $("seed").addEventListener("change", () => change({ seed: $("seed").value || "0", code: null, x: $("number").value }));
  $("srbits").addEventListener("change", () => change({ srbits: $("srbits").value.trim(), code: null, x: $("number").value }));
  $("overflow").addEventListener("change", () => change({ overflow: $("overflow").value, code: null, x: $("number").value }));
  $("nan").addEventListener("change", () => change({ nan: $("nan").value, code: null, x: $("number").value }));
  $("custom-form").addEventListener("submit", useCustom);
  for (const id of ["out-down", "out-up"]) $(id).addEventListener("click", () => change({ code: $(id).dataset.bits }));
  for (const v of ["number", "block"]) {
    $("tab-" + v).addEventListener("click", () => {
      if (st.view === v) return;
      st.view = v;
      showControls();
      change({ view: v });
    });
  }
  $("block-format").addEventListener("change", () => {
    st.block = $("block-format").value;
    st.values = null;
    buildInputs();
    blockChanged();
  });
  $("scale-rounding").addEventListener("change", () => blockChanged());
  $("block-rounding").addEventListener("change", () => {
    $("block-seed-box").hidden = $("block-rounding").value !== "stochastic";
    blockChanged();
  });
  $("block-seed").addEventListener("change", () => blockChanged());
  $("block-example").addEventListener("click", () => {
    $("block-inputs").querySelectorAll("input").forEach((input, i) => { input.value = EXAMPLE[i]; });
    blockChanged();
  });
  $("block-form").addEventListener("submit", (e) => { e.preventDefault(); blockChanged(); });
  window.addEventListener("popstate", arrived);
  window.addEventListener("hashchange", arrived);
}

async function init() {
  const d = await api("/api/formats");
  page.formats = d.formats;
  page.blocks = d.blocks;
  for (const f of d.formats) option($("format"), f.name, f.name + " (" + f.bits + " bits)");
  option($("format"), "custom", "your own format…").id = "custom-option";
  for (const r of d.roundings) option($("rounding"), r);
  for (const r of d.block_roundings) option($("block-rounding"), r);  // (fpemu.mx.quantize's: no N random bits)
  modes.seeded = d.seeded_roundings;
  modes.withBits = d.sr_bits_roundings;
  for (const o of d.overflows) option($("overflow"), o, o === "default" ? "the format's own" : o);
  for (const n of d.nans) option($("nan"), n, n === "default" ? "NaN (refused where there is none)" : n);
  for (const b of d.blocks) option($("block-format"), b.name, b.name + " (" + b.block_size + " per block)");
  for (const s of d.scale_roundings) option($("scale-rounding"), s);
  st = fromHash(location.hash);
  page.hash = toHash(st);
  history.replaceState(null, "", page.hash);
  showControls();
  wire();
  await render();
  document.body.dataset.ready = "1";
}

init().catch((e) => { showError("result", "error", e.message); done(); });
