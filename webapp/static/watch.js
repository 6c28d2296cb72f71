// The watch page: two players by name over one deal or several (mirrored seats), stepped or autoplayed.
"use strict";

const watch = { id: null, view: null, timer: null, busy: false };

function seatLabel(v, seat) {
  return `${v.seat_names[seat]} (${seat === v.a_seat ? "A" : "B"})`;
}

function render() {
  const v = watch.view, b = v.board;
  document.getElementById("board").replaceChildren(
    expeditionRow(seatLabel(v, 1), b.seats[1], v.variant, "exp1"),
    handRow("hand", b.seats[1], "hand1"),
    pilesRow(b, v.variant),
    expeditionRow(seatLabel(v, 0), b.seats[0], v.variant, "exp0"),
    handRow("hand", b.seats[0], "hand0"));
  const t = v.totals;
  const aNow = b.seats[v.a_seat].score, bNow = b.seats[1 - v.a_seat].score;
  document.getElementById("totals").replaceChildren(
    el("div", { id: "running", dataset: { a: aNow, b: bNow }, text: `Game ${v.game + 1} of ${v.games}: ` +
      `${v.a} ${aNow}, ${v.b} ${bNow}${b.done ? " (final)" : ""}` }),
    el("div", { id: "series", text: `Finished games: ${t.games}; ${v.a} won ${t.a_wins}, ${v.b} won ${t.b_wins}, ` +
      `ties ${t.ties}; total ${v.a} ${t.a_score}, ${v.b} ${t.b_score}` }));
  const habits = document.getElementById("habits");
  habits.replaceChildren(el("b", { text: "Habits over the finished games (play_diagnostics)" }));
  if (v.habits) {
    const rows = [["expeditions opened / game", "expeditions_opened"], ["share ending negative", "negative_share"],
                  ["wagers / game", "wagers_per_game"], ["discard-pile draws / game", "pile_draws_per_game"],
                  ["drawn, never played / game", "stalled_draws_per_game"]];
    const table = el("table", { class: "scores", id: "habits-table" },
      el("tr", {}, el("th", { text: "" }), el("th", { text: `A: ${v.a}` }), el("th", { text: `B: ${v.b}` })));
    for (const [label, key] of rows) table.append(el("tr", { dataset: { key } }, el("th", { text: label }),
      el("td", { text: v.habits.a[key].toFixed(2) }), el("td", { text: v.habits.b[key].toFixed(2) })));
    table.append(el("tr", {}, el("th", { text: "mean score of an opened expedition" }),
      el("td", { text: v.habits.a.score_per_expedition.map(x => x.toFixed(1)).join(" ") }),
      el("td", { text: v.habits.b.score_per_expedition.map(x => x.toFixed(1)).join(" ") })));
    habits.append(table);
  } else habits.append(el("div", { text: "(none finished yet)" }));
  const log = document.getElementById("log");
  log.replaceChildren();
  v.log.forEach((m, i) => {
    const row = el("div", { class: "move", dataset: { index: i, action: m.action } },
      el("span", { text: `${i + 1}. ${m.by}: ${m.name}` }));
    if (m.probs) row.append(probsEl(m.probs, m.action));
    log.append(row);
  });
  log.scrollTop = log.scrollHeight;
  for (const id of ["step", "to-end", "autoplay"]) document.getElementById(id).disabled = v.over;
  if (v.over) { stopAutoplay(); setStatus("Series over", "ok"); }
  else setStatus(b.done ? "Game over: step for the next deal" : `Move ${v.log.length + 1}: ${v.seat_names[b.to_move]} to move`);
}

async function call(method, path, body) {
  if (watch.busy) return false;
  watch.busy = true;
  try {
    const v = await api(method, path, body);
    watch.id = v.watch; watch.view = v;
    render();
    return true;
  } catch (err) {
    stopAutoplay();
    setStatus(err.message, "error");
    return false;
  } finally { watch.busy = false; }
}

function stopAutoplay() {
  if (watch.timer) clearTimeout(watch.timer);
  watch.timer = null;
  document.getElementById("autoplay").textContent = "Autoplay";
}

async function autoplayTick() {
  if (!watch.timer) return;
  await call("POST", "/api/watch/step", { watch: watch.id });
  if (watch.timer && !watch.view.over) {
    watch.timer = setTimeout(autoplayTick, Number(document.getElementById("delay").value) || 0);
  }
}

document.getElementById("start").addEventListener("click", () => {
  stopAutoplay();
  setStatus("Starting (the first game with an agent compiles it: a few seconds)...");
  call("POST", "/api/watch/new", { a: document.getElementById("player-a").value, b: document.getElementById("player-b").value,
    variant: document.getElementById("variant").value, games: Number(document.getElementById("games").value),
    seed: Number(document.getElementById("seed").value) });
});
document.getElementById("step").addEventListener("click", () => call("POST", "/api/watch/step", { watch: watch.id }));
document.getElementById("to-end").addEventListener("click",
  () => call("POST", "/api/watch/step", { watch: watch.id, steps: 400, to_end: true }));
document.getElementById("autoplay").addEventListener("click", () => {
  if (watch.timer) { stopAutoplay(); return; }
  document.getElementById("autoplay").textContent = "Pause";
  watch.timer = setTimeout(autoplayTick, 0);
});

(async () => {
  try {
    await fillPlayersAndVariants();
    setStatus("Pick two players and press Start");
  } catch (err) { setStatus(err.message, "error"); }
})();
