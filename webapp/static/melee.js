// The Melee frames page: a replay or a closed-loop rollout drawn frame by frame on the stage, each
// player a box at its position (an arrow for its facing), its controller drawn beside.
"use strict";

const viewer = { data: null, row: 0, timer: null, unknown: new Set() };
const BOX = { w: 10, h: 16 };  // game units: about a Fox's width and height
const COLOURS = ["#e74c3c", "#3498db"];
window.meleeDrawn = null;  // what the last frame drew (world and canvas positions): read by the tests

// A fixed view for the whole file: the stage's surfaces with a margin (players beyond it are drawn
// at the border, hollow); without geometry, where the players spend most frames.
function transform(data, canvas) {
  const s = data.stage, xs = [], ys = [], height = canvas.height - 90;
  if (s.surfaces && s.surfaces.length) for (const f of s.surfaces) { xs.push(f.left, f.right); ys.push(f.y); }
  else for (const p of data.players) { xs.push(...p.x.filter(v => v !== null)); ys.push(...p.y.filter(v => v !== null)); }
  const left = Math.min(...xs) - 50, right = Math.max(...xs) + 50, bottom = Math.min(...ys) - 30, top = Math.max(...ys) + 70;
  const scale = Math.min(canvas.width / (right - left), height / (top - bottom));
  const cx = canvas.width / 2 - scale * (left + right) / 2, cy = height / 2 + scale * (top + bottom) / 2;
  return { scale, px: x => cx + scale * x, py: y => cy - scale * y };
}

function drawController(ctx, p, row, x0, y0, colour, label) {
  ctx.save();
  ctx.fillStyle = "#1d2a36"; ctx.fillRect(x0, y0, 300, 80);
  ctx.fillStyle = colour; ctx.font = "12px sans-serif"; ctx.fillText(label, x0 + 6, y0 + 14);
  const stick = (cx, cy, sx, sy, col) => {
    ctx.strokeStyle = "#8899aa"; ctx.beginPath(); ctx.arc(cx, cy, 22, 0, 2 * Math.PI); ctx.stroke();
    ctx.fillStyle = col; ctx.beginPath();
    ctx.arc(cx + 22 * (2 * (sx ?? 0.5) - 1), cy - 22 * (2 * (sy ?? 0.5) - 1), 5, 0, 2 * Math.PI); ctx.fill();
  };
  stick(x0 + 34, y0 + 50, p.main_x[row], p.main_y[row], "#ddd");
  stick(x0 + 90, y0 + 50, p.c_x[row], p.c_y[row], "#f1c40f");
  const sh = p.shoulder[row] ?? 0;
  ctx.strokeStyle = "#8899aa"; ctx.strokeRect(x0 + 124, y0 + 26, 10, 46);
  ctx.fillStyle = "#aaa"; ctx.fillRect(x0 + 124, y0 + 72 - 46 * sh, 10, 46 * sh);
  Object.keys(p.buttons).forEach((b, i) => {
    const on = p.buttons[b][row], bx = x0 + 146 + 38 * (i % 4), by = y0 + 22 + 28 * Math.floor(i / 4);
    ctx.fillStyle = on ? colour : "#2f3d4a"; ctx.fillRect(bx, by, 32, 22);
    ctx.fillStyle = on ? "#fff" : "#778"; ctx.fillText(b.toUpperCase().replace("D_UP", "D↑"), bx + 6, by + 15);
  });
  ctx.restore();
}

function draw() {
  const data = viewer.data, row = viewer.row, canvas = document.getElementById("stage");
  const ctx = canvas.getContext("2d"), t = transform(data, canvas);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.lineWidth = 3;
  for (const f of data.stage.surfaces || []) {
    ctx.strokeStyle = f.platform ? "#7f8c8d" : "#ecf0f1";
    ctx.beginPath(); ctx.moveTo(t.px(f.left), t.py(f.y)); ctx.lineTo(t.px(f.right), t.py(f.y)); ctx.stroke();
  }
  ctx.lineWidth = 1;
  const drawn = [];
  data.players.forEach((p, i) => {
    const x = p.x[row], y = p.y[row], facing = p.facing[row] ?? 1;
    if (x === null || y === null) return;
    const w = BOX.w * t.scale, h = BOX.h * t.scale;
    const px = Math.max(w, Math.min(canvas.width - w, t.px(x))), py = Math.max(h + 40, Math.min(canvas.height - 90, t.py(y)));
    const inside = px === t.px(x) && py === t.py(y);
    ctx.fillStyle = COLOURS[i]; ctx.strokeStyle = COLOURS[i]; ctx.globalAlpha = 0.85;
    if (inside) ctx.fillRect(px - w / 2, py - h, w, h); else ctx.strokeRect(px - w / 2, py - h, w, h);
    ctx.globalAlpha = 1;
    ctx.fillStyle = "#fff"; ctx.beginPath();  // facing: a triangle on the side the player faces
    ctx.moveTo(px + facing * (w / 2 + 8), py - h / 2); ctx.lineTo(px + facing * w / 2, py - h / 2 - 6);
    ctx.lineTo(px + facing * w / 2, py - h / 2 + 6); ctx.fill();
    if (p.nana_x && p.nana_x[row] !== null) {  // Ice Climbers' Nana: a smaller hollow box
      ctx.strokeStyle = COLOURS[i];
      ctx.strokeRect(t.px(p.nana_x[row]) - w / 3, t.py(p.nana_y[row]) - 2 * h / 3, 2 * w / 3, 2 * h / 3);
    }
    const shield = p.shield[row];
    if (shield !== null && shield < 60) {
      ctx.strokeStyle = "#f1c40f"; ctx.beginPath(); ctx.arc(px, py - h / 2, (h / 2 + 4) * shield / 60, 0, 2 * Math.PI); ctx.stroke();
    }
    const name = p.action_names[p.action[row]];
    ctx.fillStyle = "#fff"; ctx.font = "12px sans-serif";
    ctx.fillText(`P${i + 1}`, px - w / 2, py - h - 6);
    ctx.fillStyle = COLOURS[i]; ctx.font = "14px sans-serif";  // the full line in the corner, one per player
    ctx.fillText(`P${i + 1} ${p.character}: ${name}, frame ${show(p.action_frame[row])}, ` +
                 `${show(p.percent[row], 0)}%`, 12, 22 + 20 * i);
    drawn.push({ player: i, x, y, px: t.px(x), py: t.py(y), inside, facing, action: p.action[row], name });
    drawController(ctx, p, row, i === 0 ? 10 : canvas.width - 310, canvas.height - 84, COLOURS[i],
                   `P${i + 1} ${p.character}`);
  });
  window.meleeDrawn = { row, frame: data.frame[row], players: drawn };
  info();
}

// A value for the page: "-" where the file has none (older replays lack some fields).
function show(value, digits) {
  if (value === null || value === undefined) return "-";
  return digits === undefined ? `${value}` : Number(value).toFixed(digits);
}

function info() {
  const data = viewer.data, row = viewer.row;
  const box = document.getElementById("player-info");
  box.replaceChildren();
  data.players.forEach((p, i) => {
    const cell = (key, text) => el("td", { id: `p${i}-${key}`, text });
    box.append(el("table", { class: "panel player-info" },
      el("tr", {}, el("th", { text: `P${i + 1}` }), el("td", { text: p.character })),
      el("tr", {}, el("th", { text: "action" }), cell("action", `${p.action_names[p.action[row]]} (${p.action[row]})`)),
      el("tr", {}, el("th", { text: "action frame" }), cell("action-frame", show(p.action_frame[row]))),
      el("tr", {}, el("th", { text: "x, y" }), cell("xy", `${show(p.x[row], 2)}, ${show(p.y[row], 2)}`)),
      el("tr", {}, el("th", { text: "facing" }), cell("facing", p.facing[row] > 0 ? "right" : "left")),
      el("tr", {}, el("th", { text: "shield" }), cell("shield", show(p.shield[row], 1))),
      el("tr", {}, el("th", { text: "percent, stocks" }), cell("percent", `${show(p.percent[row], 0)}%, ${show(p.stocks[row])}`)),
      el("tr", {}, el("th", { text: "on ground" }), cell("ground", show(p.on_ground[row])))));
  });
  document.getElementById("frame-text").textContent = `row ${row + 1} / ${data.rows}, frame ${data.frame[row]}`;
  document.getElementById("scrub").value = row;
  document.getElementById("unknown-banner").classList.toggle("hidden", !viewer.unknown.has(row));
}

function metrics(r) {
  const panel = document.getElementById("metrics");
  if (!r) { panel.classList.add("hidden"); return; }
  const keys = ["frames", "onsets", "self_onsets", "self_per_min", "max_chain", "trap_frames"];
  const table = el("table", { class: "scores", id: "metrics-table" },
    el("tr", {}, el("th", { text: "shine metrics" }), el("th", { text: "this rollout" }),
       el("th", { text: r.teacher_file ? `teacher (${r.teacher_file})` : "teacher (not in the folder)" })));
  for (const k of keys) table.append(el("tr", {}, el("th", { text: k }),
    el("td", { text: Number(r.policy_metrics[k]).toFixed(k === "self_per_min" ? 1 : 0) }),
    el("td", { text: r.teacher_metrics ? Number(r.teacher_metrics[k]).toFixed(k === "self_per_min" ? 1 : 0) : "-" })));
  const u = r.unknown;
  panel.replaceChildren(table, el("div", { id: "unknown-count", text: u === null ? "unknown frames: stage not simulated" :
    `frames outside the simulator's knowledge: ${u.rows.length} (red ticks)` +
    (u.mismatched ? `; ${u.mismatched} re-simulated frames differ from the file` : "") }));
  panel.classList.remove("hidden");
}

function load(data) {
  stop();
  viewer.data = data; viewer.row = 0;
  viewer.unknown = new Set(data.rollout && data.rollout.unknown ? data.rollout.unknown.rows : []);
  document.getElementById("scrub").max = data.rows - 1;
  const line = document.getElementById("timeline");
  line.replaceChildren(...[...viewer.unknown].map(r => el("div", { class: "tick", style: `left:${(900 * r / data.rows).toFixed(1)}px` })));
  metrics(data.rollout);
  document.getElementById("viewer").classList.remove("hidden");
  setStatus(`${data.name}: ${data.rows} frames on ${data.stage.name}` + (data.stage.known ? "" : " (no geometry for this stage)"));
  draw();
}

async function open(kind, path) {
  if (!path) { setStatus(`choose a ${kind} first`, "error"); return; }
  setStatus(`opening ${path}...`);
  try { load(await api("GET", `/api/melee/open?kind=${kind}&path=${encodeURIComponent(path)}`)); }
  catch (err) { setStatus(err.message, "error"); }
}

function goto(row) {
  viewer.row = Math.max(0, Math.min(viewer.data.rows - 1, row));
  draw();
}

function stop() {
  if (viewer.timer) clearInterval(viewer.timer);
  viewer.timer = null;
  document.getElementById("play").textContent = "Play";
}

document.getElementById("play").addEventListener("click", () => {
  if (viewer.timer) { stop(); return; }
  document.getElementById("play").textContent = "Pause";
  const speed = Number(document.getElementById("speed").value);
  viewer.timer = setInterval(() => {
    if (viewer.row >= viewer.data.rows - 1) { stop(); return; }
    goto(viewer.row + Math.max(1, Math.round(speed)));
  }, 1000 / 60 / Math.min(speed, 1));
});
document.getElementById("back").addEventListener("click", () => goto(viewer.row - 1));
document.getElementById("forward").addEventListener("click", () => goto(viewer.row + 1));
document.getElementById("scrub").addEventListener("input", e => goto(Number(e.target.value)));
document.getElementById("open-replay").addEventListener("click",
  () => open("replay", document.getElementById("replay-list").value));
document.getElementById("open-rollout").addEventListener("click",
  () => open("rollout", document.getElementById("rollout-list").value));
document.getElementById("list-rollouts").addEventListener("click", async () => {
  try {
    const r = await api("GET", `/api/melee/rollouts?run=${encodeURIComponent(document.getElementById("run").value)}`);
    fillSelect("rollout-list", r.rollouts);
    setStatus(`${r.rollouts.length} rollouts`);
  } catch (err) { setStatus(err.message, "error"); }
});

function fillSelect(id, names) {
  const select = document.getElementById(id);
  select.replaceChildren(el("option", { value: "", text: "(choose)" }), ...names.map(n => el("option", { value: n, text: n })));
}

(async () => {
  try {
    const list = await api("GET", "/api/melee/list");
    fillSelect("replay-list", list.replays);
    fillSelect("rollout-list", list.rollouts);
    const info = await api("GET", "/api/info");
    for (const name of info.runs) document.getElementById("run-names").append(el("option", { value: name }));
    setStatus(`replays from ${list.folders.replays || "(no --replays folder)"}, runs from ${list.folders.runs || "(no --runs folder)"}`);
  } catch (err) { setStatus(err.message, "error"); }
})();
