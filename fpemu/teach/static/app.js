// fpemu explore: the page only shows what the server's JSON API computes with fpemu's codec.
// Every control edits one state (below); the state lives in the URL hash, so a link shares it
// and the back button walks back through it. Values, field meanings and rules come from the
// API (/api/code, /api/encode, /api/compare, /api/table, /api/block, /api/blocks); the page does
// no float arithmetic of its own (codes are stepped as BigInt integers). The other views (side
// by side, code table, one block) are in views.js.
"use strict";

const $ = (id) => document.getElementById(id);
const DEFAULTS = { view: "number", format: "e4m3", x: "0.3", code: null, rounding: "nearest_even",
  overflow: "default", nan: "default", seed: "0", srbits: "8", block: "mxfp4", scale: "floor", brounding: "nearest_even",
  bseed: "0", tamax: "", values: null, custom: null, cx: "0.1", formats: null, crounding: "nearest_even" };
const CUSTOM_KEYS = { name: "cname", exponent_bits: "ce", mantissa_bits: "cm", bias: "cbias",
  signed: "csigned", subnormals: "csub", inf: "cinf", nan: "cnan" };
// What each view keeps in a link (so a link to one view does not carry another's inputs).
const VIEW_KEYS = {
  number: ["format", "rounding", "overflow", "nan", "seed", "srbits"],
  compare: ["crounding"],
  table: ["format"],
  block: ["block", "scale", "brounding", "bseed", "tamax"],
};
const TYPING_PAUSE = 1000;  // ms: an error while typing shows once the typing pauses this long
const BUSY_AFTER = 250;     // ms: a request slower than this shows the busy sign

let st = Object.assign({}, DEFAULTS);      // what the page shows
// Which roundings take a seed, and which also N random bits (from /api/formats).
const modes = { seeded: ["stochastic"], withBits: [] };
const page = { bits: "", shift: 0, digits: 2, blocks: [], formats: [], seq: 0, ticket: 0, hash: "", typing: null,
  timer: null, held: null, busy: null, docs: false, accepts: null };

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

// ---- the state in the URL: one form for every link -------------------------------------------
// key=value pairs, each value percent-encoded on its own; the block's values are one key whose
// items are encoded one by one and joined by commas (so a comma typed in a box stays in its box).
function toHash(s) {
  const parts = [];
  const put = (key, value) => parts.push(key + "=" + encodeURIComponent(value));
  if (s.view !== DEFAULTS.view) put("view", s.view);
  for (const key of VIEW_KEYS[s.view]) if (s[key] !== DEFAULTS[key]) put(key, s[key]);
  if (s.view === "number") {
    if (s.code !== null) put("code", s.code); else put("x", s.x);
  }
  if (s.view === "compare") {
    put("x", s.cx);
    if (s.formats) put("formats", s.formats);
  }
  if ((s.view === "number" || s.view === "table") && s.format === "custom" && s.custom) {
    for (const [k, short] of Object.entries(CUSTOM_KEYS)) put(short, String(s.custom[k]));
  }
  if (s.view === "block" && s.values) {
    let values = s.values.slice();
    while (values.length && values[values.length - 1] === "") values.pop();
    parts.push("values=" + values.map(encodeURIComponent).join(","));
  }
  return "#" + parts.join("&");
}

function fromHash(hash) {
  const s = Object.assign({}, DEFAULTS);
  const raw = {};
  for (const part of hash.replace(/^#/, "").split("&")) {
    if (!part) continue;
    const at = part.indexOf("=");
    const key = at < 0 ? part : part.slice(0, at);
    raw[key] = at < 0 ? "" : part.slice(at + 1);
  }
  const text = (key) => { try { return decodeURIComponent(raw[key]); } catch (e) { return raw[key]; } };
  if ("view" in raw) s.view = text("view");
  for (const key of Object.keys(DEFAULTS)) {
    if (key in raw && !["custom", "values", "x", "view"].includes(key)) s[key] = text(key);
  }
  if (s.view === "compare") {
    if ("x" in raw) s.cx = text("x");
  } else if ("x" in raw) s.x = text("x");
  if ("code" in raw) { s.code = text("code"); s.x = DEFAULTS.x; }
  if ("values" in raw) {
    s.values = raw.values.split(",").map((v) => { try { return decodeURIComponent(v); } catch (e) { return v; } });
  }
  if (s.format === "custom") {
    s.custom = {};
    for (const [k, short] of Object.entries(CUSTOM_KEYS)) s.custom[k] = short in raw ? text(short) : "";
    for (const k of ["exponent_bits", "mantissa_bits", "bias"]) s.custom[k] = Number(s.custom[k]);
    for (const k of ["signed", "subnormals"]) s.custom[k] = s.custom[k] !== "false";
  }
  if (!(s.view in VIEW_KEYS)) s.view = DEFAULTS.view;
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
  return render(how);
}

function arrived() {  // back, forward, or a hash typed by hand
  if (location.hash === page.hash) return;
  page.hash = location.hash;
  st = fromHash(location.hash);
  page.typing = null;
  clearTimeout(page.timer);
  showControls(true);
  record(false);  // (a choice the format does not take went back to its default: the link says so too)
  render();
}

// ---- controls from the state -------------------------------------------------------------
function formatInfo() {  // the registered format's fields (null for a custom or unknown one)
  return page.formats.find((f) => f.name === st.format) || null;
}

// The menus offer what the codec takes for the format: its overflow rules, its NaN rules, the
// roundings it accepts. A choice the new format does not take goes back to the default, said.
function fillMenus(accepts) {
  if (!accepts) return;
  const said = [];
  for (const [id, key, list, fallback] of [["rounding", "rounding", accepts.roundings, "nearest_even"],
    ["overflow", "overflow", accepts.overflows, "default"], ["nan", "nan", accepts.nans, "default"]]) {
    const select = $(id);
    const now = Array.from(select.options).map((o) => o.value).join(",");
    if (now !== list.join(",")) {
      clear(select);
      for (const v of list) {
        option(select, v, id === "overflow" && v === "default" ? "the format's own"
          : id === "nan" && v === "default" ? "NaN (refused where there is none)" : v);
      }
    }
    if (!list.includes(st[key])) {
      said.push(id + " '" + st[key] + "' does not apply to " + st.format + ": back to " + fallback);
      st[key] = fallback;
    }
    select.value = st[key];
  }
  page.accepts = accepts;
  if (said.length) {
    $("notice").textContent = said.join("; ");
    $("notice").dataset.keep = "1";  // (shown with the answer that follows)
  }
  showRandomControls(st.rounding);
}

function showControls(arriving) {
  const known = formatInfo();
  $("format").value = known || st.format === "custom" ? st.format : "";
  if (st.custom) {
    for (const [k, id] of [["name", "custom-name"], ["exponent_bits", "custom-e"], ["mantissa_bits", "custom-m"],
      ["bias", "custom-bias"], ["inf", "custom-inf"], ["nan", "custom-nan"]]) $(id).value = String(st.custom[k]);
    $("custom-signed").checked = st.custom.signed;
    $("custom-subnormals").checked = st.custom.subnormals;
    $("custom-option").textContent = st.custom.name + " (your own)";
  }
  if (known) fillMenus(known.accepts);
  for (const [id, key] of [["rounding", "rounding"], ["overflow", "overflow"], ["nan", "nan"], ["seed", "seed"],
    ["srbits", "srbits"], ["block-format", "block"], ["scale-rounding", "scale"], ["block-rounding", "brounding"],
    ["block-seed", "bseed"], ["block-tamax", "tamax"], ["cmp-rounding", "crounding"]]) {
    $(id).value = st[key];
  }
  // the number box shows the state's number: always on arrival (back/forward), else unless typing
  if (st.code === null && (arriving || document.activeElement !== $("number"))) $("number").value = st.x;
  if (arriving || document.activeElement !== $("cmp-number")) $("cmp-number").value = st.cx;
  $("cmp-formats").value = st.formats || page.compared.join(", ");
  showRandomControls(st.rounding);
  showBlockControls();
  buildInputs(arriving);
  for (const v of Object.keys(VIEW_KEYS)) {
    $("view-" + v).hidden = v !== st.view;
    $("tab-" + v).setAttribute("aria-pressed", v === st.view ? "true" : "false");
  }
  if (st.view === "table") showTableControls();
}

function showRandomControls(rounding) {  // the seed for the stochastic modes; N bits for A, B, C, odd
  $("seed-box").hidden = !modes.seeded.includes(rounding);
  $("srbits-box").hidden = !modes.withBits.includes(rounding);
}

// What /api/encode is asked besides the number: the options, and the seed and N random bits as
// typed (the server reads them, and names what it refuses).
function encodeOptions() {
  const o = { rounding: st.rounding, overflow: st.overflow, nan: st.nan, seed: st.seed };
  if (modes.withBits.includes(st.rounding)) o.sr_bits = st.srbits.trim() === "" ? null : st.srbits.trim();
  return o;
}

function formatSpec() { return st.format === "custom" ? st.custom : st.format; }

// ---- requests: one at a time counts; slow ones show the busy sign ------------------------------
function setBusy(on) {
  clearTimeout(page.busy);
  if (on) {
    page.busy = setTimeout(() => {
      $("busy").hidden = false;
      document.body.dataset.busy = "1";
      for (const id of ["result", "cmp-result", "tbl-result", "block-result"]) $(id).classList.add("stale");
    }, BUSY_AFTER);
  } else {
    $("busy").hidden = true;
    delete document.body.dataset.busy;
    for (const id of ["result", "cmp-result", "tbl-result", "block-result"]) $(id).classList.remove("stale");
  }
}

function showError(resultId, errorId, message) {  // an error replaces the result
  $(errorId).textContent = message ? "Error: " + message : "";
  $(resultId).hidden = Boolean(message);
  if (resultId === "result") showNoCode(Boolean(message));
}

// During an error there is no code: the bits and the code boxes say so instead of keeping the
// last one (a box being typed in keeps what is typed).
function showNoCode(none) {
  $("bits-box").classList.toggle("stale", none);
  $("bits-none").hidden = !none;
  for (const b of $("bits").querySelectorAll("button")) b.disabled = none || b.dataset.off === "1";
  for (const id of ["code-down", "code-up"]) if (none) $(id).disabled = true;
  if (none) {
    for (const id of ["hex", "integer"]) if (document.activeElement !== $(id)) $(id).value = "";
  }
}

// A number on its way: what typing more could still make a number ("1e", "-", "0x1.", "1/").
const PREFIX = /^\s*[+\-−]?(\d*\.?\d*(e[+\-]?\d*)?|0x[0-9a-f]*\.?[0-9a-f]*(p[+\-]?\d*)?|\d+\/\d*|i(n(f(i(n(i(t(y)?)?)?)?)?)?)?|n(a(n)?)?)\s*$/i;

// One request and what it shows. A later request makes this one stale: its answer is dropped
// (answers can arrive out of order), and only the latest counts as done. how "hold": a
// keystroke in a live field whose text is a number on its way ("1e", on its way to "1e-3"):
// an error waits for a pause in the typing, the last result greyed meanwhile.
async function call(work, resultId, errorId, how) {
  const ticket = ++page.ticket;
  document.body.dataset.asked = String(ticket);
  const current = () => ticket === page.ticket;
  clearTimeout(page.held);
  setBusy(true);
  try {
    await work(current);
    if (current()) showError(resultId, errorId, "");
  } catch (e) {
    if (current() && how === "hold") {
      $(resultId).classList.add("stale");
      document.body.dataset.held = "1";
      page.held = setTimeout(() => {
        if (!current()) return;
        delete document.body.dataset.held;
        $(resultId).classList.remove("stale");
        showError(resultId, errorId, e.message);
      }, TYPING_PAUSE);
    } else if (current()) {
      showError(resultId, errorId, e.message);
    }
  } finally {
    if (current()) {
      setBusy(false);
      if (how !== "hold" || !document.body.dataset.held) $(resultId).classList.remove("stale");
      done();
    }
  }
}

function showHeldError() {  // leaving the field (or Enter): a held error shows at once
  if (!document.body.dataset.held) return;
  clearTimeout(page.held);
  delete document.body.dataset.held;
}

// ---- one number ------------------------------------------------------------------------------
function stepButton(label, text, action, disabled) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "step";
  b.textContent = text;
  b.setAttribute("aria-label", label);
  b.disabled = disabled;
  b.dataset.off = disabled ? "1" : "0";
  b.addEventListener("click", action);
  return b;
}

function renderBits(d) {
  const box = $("bits");
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset : {};
  const again = focused.index !== undefined ? '[data-index="' + focused.index + '"]'
    : focused.step !== undefined ? '[data-step="' + focused.step + '"]' : null;
  clear(box);
  box.dataset.width = d.bits.length > 40 ? "widest" : d.bits.length > 16 ? "wide" : "narrow";
  let at = 0;
  for (const [name, width] of d.format.layout) {
    const group = document.createElement("div");
    group.className = "field";
    group.setAttribute("role", "group");
    group.setAttribute("aria-label", name + " bits");
    const label = document.createElement("span");
    label.className = "field-name";
    label.textContent = width < 3 && name !== "sign" ? name.slice(0, 3) + "." : name;  // (a narrow field: its short name)
    label.title = name;
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
      b.dataset.off = "0";
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

function neighbour(id, n, none) {
  const b = $(id);
  b.hidden = !n;
  b.disabled = !n;
  b.textContent = n ? n.value_exact + " (" + n.code + ")" : "";
  b.dataset.code = n ? n.code : "";
  $(id + "-none").textContent = n ? "" : none || "none";
}

function setUnlessTyping(id, value) {
  if (document.activeElement !== $(id) || page.typing === null) $(id).value = value;
}

// The number-line strips: marks placed where the server says (pos: 0 to 1 along the strip),
// labels stacked in rows so that none hides another.
function renderStrip(id, strip, title) {
  const box = $(id);
  clear(box);
  box.hidden = !strip;
  if (!strip) return;
  box.dataset.scale = strip.scale;
  box.dataset.left = strip.left;
  box.dataset.right = strip.right;
  const cap = document.createElement("figcaption");
  cap.textContent = title + ": " + strip.caption;
  const line = document.createElement("div");
  line.className = "strip-line";
  for (const m of strip.marks) {
    const mark = document.createElement("div");
    mark.className = "mark kind-" + m.kind.replace(/ /g, "-") + (m.result ? " result" : "") + (m.in_format ? "" : " outside");
    mark.dataset.kind = m.kind;
    mark.dataset.value = m.value;
    mark.dataset.pos = m.pos === null ? "" : String(m.pos);
    if (m.side) mark.dataset.side = m.side;
    mark.style.left = m.pos === null ? (m.side === "left" ? "0%" : "100%") : (100 * m.pos) + "%";
    const at = m.pos === null ? (m.side === "left" ? 0 : 1) : m.pos;  // a label never runs past the strip's ends
    mark.dataset.anchor = at < 0.3 ? "start" : at > 0.7 ? "end" : "middle";
    mark.title = m.kind + ": " + m.value;
    const tick = document.createElement("span");
    tick.className = "tick";
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = (m.pos === null ? (m.side === "left" ? "← " : "→ ") : "") + m.kind + " " + m.label;
    mark.append(tick, label);
    line.appendChild(mark);
  }
  box.append(line, cap);
  stackLabels(line);
}

function stackLabels(line) {  // each label on the first row where it overlaps no other
  const rows = [];
  for (const label of line.querySelectorAll(".label")) {
    const r = label.getBoundingClientRect();
    let row = 0;
    while (rows[row] !== undefined && rows[row] > r.left - 6) row += 1;
    rows[row] = r.right;
    label.style.top = (1.6 + 1.25 * row) + "em";
  }
  line.style.marginBottom = (1.25 * rows.length + 1.9) + "em";  // (the labels' rows, under the line)
}

function renderCode(d, rounded) {
  page.bits = d.bits;
  page.shift = d.format.code_shift;
  page.digits = d.code.length - 2;
  const f = d.format;
  $("format-summary").textContent = f.summary;
  if (!formatInfo()) fillMenus(f.accepts);  // (a format of your own: its menus from its answer)
  renderBits(d);
  $("out-code").textContent = d.code;
  $("out-integer").textContent = d.integer;
  $("out-bits").textContent = d.fields.map((x) => x.bits).join(" ");
  setUnlessTyping("hex", d.code);
  setUnlessTyping("integer", d.integer);
  const raw = BigInt("0b" + d.bits);
  $("code-down").disabled = raw === 0n;
  $("code-up").disabled = raw === (1n << BigInt(d.bits.length)) - 1n;
  const note = $("container-note");
  note.hidden = !f.container_bits;
  note.textContent = f.container_bits ? f.name + "'s " + f.bits + " bits are stored in the top of " + f.container_bits +
    " (as fpemu.encode returns them): code ± 1 moves the integer by 2^" + f.code_shift + " = " +
    String(1n << BigInt(f.code_shift)) : "";
  const body = $("out-fields").tBodies[0];
  clear(body);
  for (const field of d.fields) {
    const tr = body.insertRow();
    for (const text of [field.name, field.bits, field.meaning]) tr.insertCell().textContent = text;
    if (field.bits.length > 12) tr.cells[1].className = "long";  // (a long mantissa may wrap; short bits never)
  }
  $("out-class").textContent = d.class;
  $("out-formula").textContent = d.formula;
  $("out-value").textContent = d.value_exact;
  $("out-value-short").textContent = d.value;
  neighbour("out-down", d.down, d.down_none);
  neighbour("out-up", d.up, d.up_none);
  renderStrip("strip-gap", d.line.gap, rounded ? "the gap around the input (to scale)" : "the gap around this value (to scale)");
  renderStrip("strip-range", d.line.range, "the format's whole range (log2 scale)");
  $("rounding-out").hidden = !rounded;
  if (rounded) {
    $("out-input").textContent = d.input;
    $("out-error").textContent = d.error_exact === null ? "none (not a finite number)" : d.error_exact;
    $("out-relative").textContent = d.relative_error_exact === null ? "none" : d.relative_error_exact +
      (d.relative_error_exact.includes("/") ? " ≈ " + d.relative_error : "");
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
    if (st.code !== d.code) {  // links in one form: the code as hex, whatever form it came in
      st.code = d.code;
      record(false);
    }
  }
}

function renderNumber(how) {
  const spec = formatSpec();
  how = how === "type" && st.code === null && PREFIX.test(st.x) ? "hold" : how;
  $("notice").textContent = $("notice").dataset.keep ? $("notice").textContent : "";
  delete $("notice").dataset.keep;
  if (st.code !== null) {
    return call(async (current) => {
      const d = await api("/api/code", { format: spec, code: st.code });
      if (current()) renderCode(d, false);
    }, "result", "error", how);
  }
  return call(async (current) => {
    const d = await api("/api/encode", Object.assign({ format: spec, value: st.x }, encodeOptions()));
    if (current()) renderCode(d, true);
  }, "result", "error", how);
}

function render(how) {
  if (st.view === "block") return renderBlock();
  if (st.view === "compare") return renderCompare(how);
  if (st.view === "table") return renderTable();
  return renderNumber(how);
}

function hexOf(bits) {  // the code of these bits as stored (shifted into its container), in hex
  const code = BigInt("0b" + bits) << BigInt(page.shift);
  return "0x" + code.toString(16).toUpperCase().padStart(page.digits, "0");
}

function flip(i) {
  const b = page.bits;
  return change({ code: hexOf(b.slice(0, i) + (b[i] === "1" ? "0" : "1") + b.slice(i + 1)) });
}

function stepField(start, width, by) {
  const b = page.bits;
  const value = BigInt("0b" + b.slice(start, start + width)) + by;
  const field = value.toString(2).padStart(width, "0");
  return change({ code: hexOf(b.slice(0, start) + field + b.slice(start + width)) });
}

function stepCode(by) {
  const raw = BigInt("0b" + page.bits) + by;
  return change({ code: hexOf(raw.toString(2).padStart(page.bits.length, "0")) });
}

function typedCode(id) {  // the hex or the integer field: a code, or an error in words
  const text = $(id).value.trim().replace(/_/g, "");
  // (the hex box refuses "0b101": binary written as in code, which hex would read as 0xB101)
  const ok = id === "hex" ? /^(0x)?[0-9a-f]+$/i.test(text) && !/^0b/i.test(text) : /^[0-9]+$/.test(text);
  if (!ok) {
    page.ticket += 1;  // (what was asked before is stale now)
    document.body.dataset.asked = String(page.ticket);
    showError("result", "error", id === "hex"
      ? "a code in hex is the digits 0-9 and A-F, with or without 0x, got '" + text + "'" +
        (/^0b/i.test(text) ? " (0b is binary: click the bits above, or write 0x0b… for hex)" : "")
      : "a code as an integer is the digits 0-9, got '" + text + "'" +
        (/^0x/i.test(text) ? " (a hex code goes in the hex box)" : ""));
    done();
    return null;
  }
  return "0x" + BigInt(id === "hex" ? (/^0x/i.test(text) ? text : "0x" + text) : text).toString(16).toUpperCase();
}

function later(work) {  // live fields: answer when the typing pauses
  clearTimeout(page.timer);
  page.timer = setTimeout(work, 200);
}

function customSpec() {
  const number = (id) => ($(id).value.trim() === "" ? $(id).value : Number($(id).value));
  return { name: $("custom-name").value || "custom", exponent_bits: number("custom-e"),
    mantissa_bits: number("custom-m"), bias: number("custom-bias"),
    signed: $("custom-signed").checked, subnormals: $("custom-subnormals").checked,
    inf: $("custom-inf").value, nan: $("custom-nan").value };
}

function useCustom(event) {
  event.preventDefault();
  clearTimeout(page.timer);  // (it encodes the number field as it is: no typed request after it)
  const spec = customSpec();
  return call(async () => {
    // refused before it is kept (the form does not check the fields itself: the server says what is wrong)
    await api("/api/encode", Object.assign({ format: spec, value: $("number").value }, encodeOptions(), { rounding: "nearest_even", overflow: "default", nan: "default" }));
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
  st.format = $("format").value;
  const info = formatInfo();
  if (info) fillMenus(info.accepts);
  change(Object.assign({ format: $("format").value, custom: null, rounding: st.rounding, overflow: st.overflow,
    nan: st.nan }, keep));
}

// ---- start -----------------------------------------------------------------------------------
function wire() {
  $("format").addEventListener("change", formatChanged);
  $("encode-form").addEventListener("submit", (e) => {
    e.preventDefault();
    showHeldError();
    change({ code: null, x: $("number").value });
  });
  $("number").addEventListener("input", () => later(() => change({ code: null, x: $("number").value }, "type")));
  $("number").addEventListener("change", () => {
    page.typing = null;
    if (document.body.dataset.held) { showHeldError(); change({ code: null, x: $("number").value }); }
  });
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
  $("seed").addEventListener("change", () => change({ seed: $("seed").value.trim(), code: null, x: $("number").value }));
  $("srbits").addEventListener("change", () => change({ srbits: $("srbits").value.trim(), code: null, x: $("number").value }));
  $("overflow").addEventListener("change", () => change({ overflow: $("overflow").value, code: null, x: $("number").value }));
  $("nan").addEventListener("change", () => change({ nan: $("nan").value, code: null, x: $("number").value }));
  $("custom-form").addEventListener("submit", useCustom);
  for (const id of ["out-down", "out-up"]) $(id).addEventListener("click", () => change({ code: $(id).dataset.code }));
  for (const v of Object.keys(VIEW_KEYS)) {
    $("tab-" + v).addEventListener("click", () => {
      if (st.view === v) return;
      st.view = v;
      showControls();
      change({ view: v });
    });
  }
  wireViews();
  window.addEventListener("popstate", arrived);
  window.addEventListener("hashchange", arrived);
}

async function init() {
  const d = await api("/api/formats");
  page.formats = d.formats;
  page.blocks = d.blocks;
  page.compared = d.compared;
  page.tableBits = d.table_bits;
  page.docs = d.docs;
  for (const f of d.formats) option($("format"), f.name, f.name + " (" + f.bits + " bits)");
  option($("format"), "custom", "your own format…").id = "custom-option";
  modes.seeded = d.seeded_roundings;
  modes.withBits = d.sr_bits_roundings;
  fillViewMenus(d);
  st = fromHash(location.hash);
  showControls(true);
  page.hash = toHash(st);
  history.replaceState(null, "", page.hash);
  wire();
  await render();
  document.body.dataset.ready = "1";
}

init().catch((e) => { showError("result", "error", e.message); done(); });
