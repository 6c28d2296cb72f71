// Shared helpers of the pages: JSON requests that report errors, element building, card drawing.
"use strict";

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let payload;
  try { payload = await response.json(); } catch (e) { payload = { error: `HTTP ${response.status}` }; }
  if (!response.ok) { throw new Error(payload.error || `HTTP ${response.status}`); }
  return payload;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function setStatus(text, kind = "") {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = kind;
}

function cardEl(card) {
  return el("div", { class: `card c${card.colour}`, text: card.name, dataset: { card: card.id } });
}

function probsEl(probs, chosen) {
  if (!probs) return null;
  const box = el("div", { class: "probs" });
  for (const p of probs) {
    box.append(el("div", { class: "prob" + (p.action === chosen ? " chosen" : "") },
      el("span", { style: "width:150px", text: p.name }),
      el("span", { class: "bar", style: `width:${Math.round(120 * p.p)}px` }),
      el("span", { text: (100 * p.p).toFixed(1) + "%" })));
  }
  return box;
}

// Expeditions (one column per colour) of one seat; `id` prefixes the columns' ids.
function expeditionRow(label, seat, variant, id) {
  const row = el("div", { class: "row" }, el("div", { class: "label", text: label }));
  variant.colours.forEach((c, j) => {
    const col = el("div", { class: "column", id: `${id}-${j}`, dataset: { colour: j } });
    for (const card of seat.expeditions[j]) col.append(cardEl(card));
    if (seat.expeditions[j].length) col.append(el("div", { class: "score", text: `${seat.expedition_scores[j]}` }));
    row.append(col);
  });
  row.append(el("div", { class: "label", text: `total ${seat.score}`, dataset: { score: seat.score } }));
  return row;
}

function pilesRow(board, variant) {
  const row = el("div", { class: "row" }, el("div", { class: "label", text: "discards" }));
  variant.colours.forEach((c, j) => {
    const pile = board.piles[j];
    const box = el("div", { class: "pile", id: `pile-${j}`, dataset: { colour: j } });
    if (pile.length) box.append(cardEl(pile[pile.length - 1]));
    box.append(el("div", { text: `${c.name} (${pile.length})` }));
    row.append(box);
  });
  row.append(el("div", { id: "deck", text: `deck ${board.deck}` }));
  return row;
}

function handRow(label, seat, id) {
  const row = el("div", { class: "row hand", id }, el("div", { class: "label", text: label }));
  for (const card of seat.hand) row.append(cardEl(card));
  for (let i = seat.hand.length; i < seat.hand_count; i++) row.append(el("div", { class: "card back" }));
  return row;
}

function scoreTable(board, variant, names) {
  const t = el("table", { class: "scores", id: "score-table" });
  t.append(el("tr", {}, el("th", { text: "" }), ...variant.colours.map(c => el("th", { text: c.name })),
    el("th", { text: "total" })));
  board.seats.forEach((s, p) => t.append(el("tr", {}, el("th", { text: names[p] }),
    ...s.expedition_scores.map(v => el("td", { text: v })), el("td", { text: s.score }))));
  return t;
}

// The player-name suggestions (#player-names) and the variants (#variant, classic chosen).
async function fillPlayersAndVariants() {
  const info = await api("GET", "/api/info");
  const list = document.getElementById("player-names");
  for (const name of [...info.players, ...info.agents]) list.append(el("option", { value: name }));
  const select = document.getElementById("variant");
  for (const name of info.variants) select.append(el("option", { value: name, text: name }));
  select.value = "classic";
}
