// The play page: one game per tab (its id lives in this page only), moves by clicking a card, then
// a target (your expedition or its discard pile), then where to draw from. Only legal targets light up.
"use strict";

const page = { game: null, view: null, selected: null, busy: false };

function legalFor(kind, card) {
  return page.view.legal.find(a => a.kind === kind && (card === undefined || a.card === card));
}

async function send(action) {
  if (page.busy) return;
  page.busy = true;
  setStatus("...");
  try {
    show(await api("POST", "/api/lc/move", { game: page.game, action, moves: page.view.moves }));
  } catch (err) {
    setStatus(err.message, "error");
  } finally {
    page.busy = false;
  }
}

function render() {
  const v = page.view, b = v.board, variant = v.variant, me = v.human_seat, them = 1 - me;
  const board = document.getElementById("board");
  board.replaceChildren(
    expeditionRow(v.opponent, b.seats[them], variant, "their-exp"),
    handRow(`${v.opponent}'s hand`, b.seats[them], "their-hand"),
    pilesRow(b, variant),
    expeditionRow("you", b.seats[me], variant, "my-exp"),
    handRow("your hand", b.seats[me], "my-hand"));
  const phase0 = v.legal.some(a => a.kind === "play" || a.kind === "discard");
  for (const node of document.querySelectorAll("#my-hand .card[data-card]")) {
    const card = Number(node.dataset.card);
    if (!phase0) continue;
    node.classList.add("playable");
    if (card === page.selected) node.classList.add("selected");
    node.addEventListener("click", () => { page.selected = card; render(); });
  }
  if (page.selected !== null && phase0) {
    const play = legalFor("play", page.selected), discard = legalFor("discard", page.selected);
    if (play) target(document.getElementById(`my-exp-${play.colour}`), play.action);
    if (discard) target(document.getElementById(`pile-${discard.colour}`), discard.action);
  }
  for (const a of v.legal) {
    if (a.kind === "deck") target(document.getElementById("deck"), a.action);
    if (a.kind === "pile") target(document.getElementById(`pile-${a.colour}`), a.action);
  }
  if (v.result) {
    const names = me === 0 ? ["you", v.opponent] : [v.opponent, "you"];
    board.append(scoreTable(b, variant, names), el("div", {
      id: "result", class: v.result.outcome === "loss" ? "error" : "ok",
      dataset: { you: v.result.you, opponent: v.result.opponent },
      text: `Final score: you ${v.result.you}, ${v.opponent} ${v.result.opponent} (${v.result.outcome})`}));
  }
  renderLog();
  const pos = document.getElementById("position");
  pos.max = v.moves; pos.value = v.at;
  document.getElementById("position-text").textContent = `${v.at} / ${v.moves} moves`;
  document.getElementById("hint").disabled = !v.legal.length;
  document.getElementById("mirror").disabled = false;
  document.getElementById("save-log").disabled = false;
  if (v.at < v.moves) setStatus(`Viewing move ${v.at} of ${v.moves} (drag to the end to play on)`);
  else if (v.over) setStatus("Game over", "ok");
  else if (phase0) setStatus(page.selected === null ? "Your turn: pick a card from your hand" :
                             "Now click your expedition to play it, or its discard pile to discard it");
  else setStatus("Draw: click the deck or a highlighted discard pile");
}

function target(node, action) {
  node.classList.add("target");
  node.dataset.action = action;
  node.addEventListener("click", () => { page.selected = null; send(action); });
}

function renderLog() {
  const log = document.getElementById("log"), showProbs = document.getElementById("show-probs").checked;
  log.replaceChildren();
  page.view.log.forEach((m, i) => {
    const row = el("div", { class: "move" + (m.by === "you" ? " you" : ""), dataset: { index: i } },
      el("span", { text: `${i + 1}. ${m.by}: ${m.name}` }));
    if (showProbs && m.probs) row.append(probsEl(m.probs, m.action));
    log.append(row);
  });
  log.scrollTop = log.scrollHeight;
}

function show(view) {
  if (view.game) page.game = view.game;
  page.view = view;
  page.selected = null;
  document.getElementById("hint-panel").classList.add("hidden");
  render();
}

async function newGame(body) {
  setStatus("Dealing (the first game with an agent compiles it: a few seconds)...");
  try { show(await api("POST", "/api/lc/new", body)); } catch (err) { setStatus(err.message, "error"); }
}

document.getElementById("new-game").addEventListener("click", () => {
  const seed = document.getElementById("seed").value;
  newGame({ opponent: document.getElementById("opponent").value, variant: document.getElementById("variant").value,
            human_seat: Number(document.getElementById("seat").value),
            first_player: 0, ...(seed === "" ? {} : { seed: Number(seed) }) });
});
document.getElementById("mirror").addEventListener("click", () => newGame({ mirror: page.game }));
document.getElementById("show-probs").addEventListener("change", renderLog);
document.getElementById("position").addEventListener("change", async (e) => {
  try { show(await api("GET", `/api/lc/view?game=${page.game}&at=${e.target.value}`)); }
  catch (err) { setStatus(err.message, "error"); }
});
document.getElementById("hint").addEventListener("click", async () => {
  const panel = document.getElementById("hint-panel");
  try {
    const h = await api("POST", "/api/lc/hint", { game: page.game });
    panel.replaceChildren(el("div", { id: "hint-text", text: `${h.adviser} suggests: ${h.choice.name}` }),
                          probsEl(h.probs, h.choice.action));
    panel.classList.remove("hidden");
  } catch (err) { setStatus(err.message, "error"); }
});
document.getElementById("save-log").addEventListener("click", async () => {
  const log = await api("GET", `/api/lc/log?game=${page.game}`);
  const link = el("a", { href: URL.createObjectURL(new Blob([JSON.stringify(log, null, 1)], { type: "application/json" })),
                         download: `lostcities-${log.opponent.replace(/[^a-z0-9]+/gi, "_")}-${log.deal_seed}.json` });
  document.body.append(link); link.click(); link.remove();
});
document.getElementById("load-log").addEventListener("change", async (e) => {
  const file = e.target.files[0];
  if (!file) return;
  try {
    show(await api("POST", "/api/lc/load", { log: JSON.parse(await file.text()) }));
  } catch (err) { setStatus(`cannot load ${file.name}: ${err.message}`, "error"); }
  e.target.value = "";
});

(async () => {
  try {
    await fillPlayersAndVariants();
    const opponent = new URLSearchParams(location.search).get("opponent");
    if (opponent) document.getElementById("opponent").value = opponent;
    setStatus("Pick an opponent and press New game");
  } catch (err) { setStatus(err.message, "error"); }
})();
