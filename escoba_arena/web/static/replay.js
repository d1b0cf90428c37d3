// The replay viewer: step through a recorded game, by round, with every hand or one seat's view.
"use strict";
let data = null;   // {meta, rounds}
let r = 0;         // round index
let k = 0;         // frame index in the round (0 = the deal)

function showError(text) {
  const m = document.getElementById("message");
  m.textContent = text;
  m.classList.toggle("hidden", !text);
}

function sideNames() {
  const m = data.meta, p = m.rules.num_players;
  if (!m.rules.partnerships) return m.seats.map((s, i) => `seat ${i} (${s})`);
  return [0, 1].map(s => "team " + [...Array(p).keys()].filter(q => q % 2 === s).map(q => `${q} (${m.seats[q]})`).join(" + "));
}

function load(d) {
  data = d;
  r = 0; k = 0;
  const m = d.meta;
  document.getElementById("viewer").classList.remove("hidden");
  document.getElementById("meta").textContent =
      `${m.seats.length} players${m.rules.partnerships ? " (2v2)" : ""} · seats: ${m.seats.join(", ")} · seed ${m.seed}, game ${m.game_id}, ` +
      `rotation ${m.rotation} · ${m.mode} · final score ${m.final_scores.join(" – ")}` +
      (m.winner >= 0 ? ` · winner: ${sideNames()[m.winner]}` : " · no winner");
  const rs = document.getElementById("round");
  rs.replaceChildren(...d.rounds.map((_, i) => el("option", {value: i, text: String(i + 1)})));
  const sv = document.getElementById("seatview");
  sv.replaceChildren(el("option", {value: "-1", text: "every hand"}),
                     ...m.seats.map((s, i) => el("option", {value: i, text: `seat ${i}'s view (${s})`})));
  draw();
}

function draw() {
  const rnd = data.rounds[r], f = rnd.frames[k], m = data.meta;
  const view = Number(document.getElementById("seatview").value);
  document.getElementById("round").value = String(r);
  document.getElementById("pos").textContent = `round ${r + 1}/${data.rounds.length} · move ${k}/${rnd.frames.length - 1}`;
  document.body.dataset.round = r;
  document.body.dataset.frame = k;
  const a = f.action;
  const act = document.getElementById("action");
  const tb = document.getElementById("table-before");
  if (!a) {
    act.textContent = `Round ${r + 1}: seat ${rnd.dealer} deals.`;
    tb.replaceChildren();
  } else {
    const who = `Seat ${a.actor} (${m.seats[a.actor]})`;
    if (a.take) act.textContent = `${who} names ${cardName(a.card)} for the capture` +
        (a.captured.length ? ` and takes ${names(a.captured)}` : "") + (a.escoba ? " · ESCOBA!" : "");
    else if (a.choosing) act.textContent = `${who} plays ${cardName(a.card)}, which can capture in several ways: ` +
        "the next moves name the table cards it takes";
    else act.textContent = `${who} plays ${cardName(a.card)}` +
        (a.captured.length ? ` and takes ${names(a.captured.filter(c => c !== a.card))}` : " to the table") +
        (a.escoba ? " · ESCOBA!" : "");
    const cap = new Set(a.captured);
    tb.replaceChildren(...a.table_before.map(c => cardEl(c, cap.has(c) ? "hl" : "")));
    if (!a.take) tb.append(el("span", {text: " + "}), cardEl(a.card, "played"));
  }
  document.getElementById("table").replaceChildren(...f.table.map(c => cardEl(c)));
  const hands = document.getElementById("hands");
  hands.replaceChildren(...f.hands.map((h, s) => {
    const shown = view < 0 || view === s;
    const row = el("div", {class: "row"}, ...h.map(c => shown ? cardEl(c, "small") : backEl("small")));
    return el("div", {class: "seat" + (f.to_act === s && k < rnd.frames.length - 1 ? " toact" : ""), "data-seat": s},
              el("div", {class: "label", text: `seat ${s} (${m.seats[s]}) · ${f.piles[s]} captured, ${f.escobas[s]} escoba${f.escobas[s] === 1 ? "" : "s"}`}),
              row);
  }));
  const sn = sideNames();
  const sc = document.getElementById("scores");
  sc.replaceChildren(el("tr", {}, el("th", {text: "side"}), el("th", {text: "score"})),
                     ...f.scores.map((v, s) => el("tr", {"data-side": s}, el("td", {text: sn[s]}), el("td", {text: String(v)}))));
  const end = document.getElementById("round-end");
  end.replaceChildren();
  if (k === rnd.frames.length - 1) end.append(el("div", {class: "label", text: `End of round ${r + 1}`}), roundTable(sn, rnd));
}

function step(dk) {
  if (!data) return;
  const n = data.rounds[r].frames.length;
  if (k + dk >= n) { if (r + 1 < data.rounds.length) { r++; k = 0; } }
  else if (k + dk < 0) { if (r > 0) { r--; k = data.rounds[r].frames.length - 1; } }
  else k += dk;
  draw();
}

async function openFileGame() {
  const file = document.getElementById("file").value;
  const game = document.getElementById("gamesel").value || "0";
  if (!file) return;
  try {
    load(await api(`/api/replays/frames?file=${encodeURIComponent(file)}&game=${encodeURIComponent(game)}`));
    showError("");
  } catch (e) { showError(e.message); }
}

async function chooseFile(selectGame) {
  const file = document.getElementById("file").value;
  const gs = document.getElementById("gamesel");
  gs.replaceChildren();
  if (!file) return;
  try {
    const list = await api(`/api/replays?file=${encodeURIComponent(file)}`);
    gs.replaceChildren(...list.games.map(g => el("option", {value: g.game,
        text: `${g.game + 1}: ${g.seats.join(" / ")} · deal ${g.game_id} rot ${g.rotation} · ${g.final_scores.join("–")}`})));
    if (selectGame !== undefined) gs.value = String(selectGame);
    await openFileGame();
  } catch (e) { showError(e.message); }
}

async function init() {
  document.getElementById("next").addEventListener("click", () => step(1));
  document.getElementById("prev").addEventListener("click", () => step(-1));
  document.getElementById("first").addEventListener("click", () => { k = 0; if (data) draw(); });
  document.getElementById("last").addEventListener("click", () => { if (data) { k = data.rounds[r].frames.length - 1; draw(); } });
  document.getElementById("round").addEventListener("change", (e) => { r = Number(e.target.value); k = 0; draw(); });
  document.getElementById("seatview").addEventListener("change", draw);
  document.getElementById("file").addEventListener("change", () => chooseFile());
  document.getElementById("gamesel").addEventListener("change", openFileGame);
  document.addEventListener("keydown", (e) => { if (e.key === "ArrowRight") step(1); if (e.key === "ArrowLeft") step(-1); });
  document.getElementById("upload").addEventListener("change", async (e) => {
    const f = e.target.files[0];
    if (!f) return;
    const line = (await f.text()).split("\n").find(l => l.trim());
    try { load(await api("/api/replays/frames", JSON.parse(line))); showError(""); }
    catch (err) { showError(`${f.name}: ${err.message}`); }
  });
  const q = new URLSearchParams(location.search);
  try {
    const files = await api("/api/files");
    const fs = document.getElementById("file");
    for (const f of files.replays) fs.append(el("option", {value: f.name, text: f.name}));
    if (q.get("game") && !q.get("file")) load(await api(`/api/games/${encodeURIComponent(q.get("game"))}/frames`));
    else if (q.get("file")) { fs.value = q.get("file"); await chooseFile(q.get("game") || 0); }
  } catch (e) { showError(e.message); }
  document.body.dataset.ready = "1";
}
init();
