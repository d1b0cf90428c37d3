// The play page: set up a game, click cards, choose captures, follow the log and the scores.
"use strict";
let gameId = null;
let view = null;
let busy = false;

function rulesFromForm(f) {
  return {
    num_players: Number(f.num_players.value), partnerships: f.partnerships.checked,
    target_score: Number(f.target_score.value), sevens_rule: f.sevens_rule.value,
    bonus_sweeps: f.bonus_sweeps.checked, prefer_single: f.prefer_single.checked,
    last_play_escoba: f.last_play_escoba.checked, initial_fifteen: f.initial_fifteen.checked,
    jokers: Number(f.jokers.value), mesa_deal: f.mesa_deal.checked,
  };
}

function showError(text) {
  const m = document.getElementById("message");
  m.textContent = text;
  m.classList.toggle("hidden", !text);
}

async function newGame(ev) {
  ev.preventDefault();
  const f = document.getElementById("setup");
  const body = {rules: rulesFromForm(f), opponents: f.opponents.value.trim().split(/\s+/).filter(Boolean),
                seat: Number(f.seat.value)};
  if (f.seed.value !== "") body.seed = Number(f.seed.value);
  if (f.max_rounds.value !== "") body.max_rounds = Number(f.max_rounds.value);
  await call("/api/games", body);
}

async function call(path, body) {
  if (busy) return;
  busy = true;
  document.body.dataset.busy = "1";
  try {
    const data = await api(path, body);
    gameId = data.id;
    showError("");
    render(data);
  } catch (e) {
    showError(e.message);
  } finally {
    busy = false;
    document.body.dataset.busy = "";
  }
}

function describe(e, v) {
  const who = (s) => v.names[s];
  if (e.type === "deal") {
    let t = `Round ${e.round}: ${who(e.dealer)} deal${e.dealer === v.seat ? "" : "s"}.`;
    if (e.taken.length) t += ` ${who(e.dealer)} take${e.dealer === v.seat ? "" : "s"} ${names(e.taken)} from the table` +
        (e.escobas ? ` (${e.escobas} escoba${e.escobas > 1 ? "s" : ""})` : "") + ".";
    return [t, ""];
  }
  if (e.type === "move") {
    return [`${who(e.seat)}: ${e.words}` + (e.escoba ? " · ESCOBA!" : "."), e.escoba ? "escoba" : ""];
  }
  if (e.type === "last_cards") {
    return [e.seat >= 0 ? `The last table cards ${names(e.cards)} go to ${who(e.seat)}.`
                        : `Nobody captured: ${names(e.cards)} stay unclaimed.`, ""];
  }
  if (e.type === "round_over") return [roundSummary(v.side_names, e), ""];
  if (e.type === "game_over") return ["Game over.", ""];
  if (e.type === "error") return [e.message, "escoba"];
  return [JSON.stringify(e), ""];
}

function render(data) {
  const v = data.view;
  view = v;
  document.getElementById("game").classList.remove("hidden");
  document.body.dataset.game = data.id;
  const note = document.getElementById("note");
  note.textContent = v.note ? "Note: " + v.note + "." : "";
  note.classList.toggle("hidden", !v.note);
  if (v.error) showError(v.error);
  // Status line and opponents.
  const toAct = v.to_act >= 0 ? v.names[v.to_act] : "nobody";
  document.getElementById("status").textContent = (v.done ? "Game over · " : "") +
      `Round ${v.round} · dealer ${v.names[v.dealer]} · stock ${v.stock} cards · target ${v.rules.target_score}` +
      (v.done ? "" : ` · to act: ${toAct}`);
  const opp = document.getElementById("opponents");
  opp.replaceChildren();
  v.names.forEach((n, s) => {
    if (s === v.seat) return;
    const row = el("div", {class: "row"});
    for (let i = 0; i < v.hand_counts[s]; i++) row.append(backEl("small"));
    opp.append(el("div", {class: "seat" + (s === v.to_act ? " toact" : ""), "data-seat": s},
                  el("div", {class: "label", text: `${n} · ${v.hand_counts[s]} in hand`}), row));
  });
  // The table now.
  const table = document.getElementById("table");
  table.replaceChildren(...v.table.map(c => cardEl(c)));
  const sum = v.table.filter(c => c < 40).reduce((a, c) => a + (c >> 2) + 1, 0);
  document.getElementById("table-sum").textContent = v.table.length ? `(sum ${sum})` : "";
  // Hand: playable cards are clickable.
  const legal = new Map(v.moves.map(m => [m.card, m.options]));
  const hand = document.getElementById("hand");
  hand.replaceChildren(...v.hand.map(c => {
    const e = cardEl(c, legal.has(c) ? "playable" : "dim");
    if (legal.has(c)) e.addEventListener("click", () => choose(c, legal.get(c)));
    return e;
  }));
  document.getElementById("turn").textContent = v.your_turn ? "· your turn: click a card" : "";
  document.getElementById("options").classList.add("hidden");
  // Scores per side.
  const sc = document.getElementById("scores");
  sc.replaceChildren(el("tr", {}, el("th", {text: "side"}), el("th", {text: "score"}), el("th", {text: "captured"}),
                                 el("th", {text: "oros"}), el("th", {text: "sevens"}), el("th", {text: "velo"}),
                                 el("th", {text: "escobas"})));
  v.side_names.forEach((n, s) => {
    const d = v.sides[s];
    sc.append(el("tr", {"data-side": s}, el("td", {text: n}), el("td", {class: "score", text: String(v.scores[s])}),
                 el("td", {text: String(d.count)}), el("td", {text: String(d.oros)}),
                 el("td", {text: String(d.sevens)}), el("td", {text: d.velo ? "yes" : ""}),
                 el("td", {text: String(d.escobas)})));
  });
  // The last round's table of categories.
  const ro = [...v.log].reverse().find(e => e.type === "round_over");
  const box = document.getElementById("round-over");
  box.replaceChildren();
  if (ro) box.append(el("div", {class: "label", text: "Last round"}), roundTable(v.side_names, ro));
  // Log, newest first.
  const log = document.getElementById("log");
  log.replaceChildren(...[...v.log].reverse().map(e => {
    const [text, cls] = describe(e, v);
    return el("div", {class: cls, text});
  }));
  // The moves since your last one (every bot's, in order), each capture highlighted.
  const lm = document.getElementById("last-move");
  lm.replaceChildren();
  // A new deal clears it: the table those moves were made on is gone.
  let from = v.log.length;
  while (from > 0 && !(v.log[from - 1].type === "move" && v.log[from - 1].seat === v.seat)
         && v.log[from - 1].type !== "deal") from--;
  const start = from > 0 && v.log[from - 1].type === "deal" ? from : Math.max(0, from - 1);
  const recent = v.log.slice(start).filter(e => e.type === "move");
  for (const m of recent.slice(-4)) {
    const line = el("div", {class: "row move"}, el("span", {class: "label", text: `${v.names[m.seat]} `}),
                    cardEl(m.card, "small played"));
    if (m.captured.length) {
      line.append(el("span", {class: "label", text: m.escoba ? " takes (ESCOBA!)" : " takes"}),
                  ...m.captured.map(c => cardEl(c, "small hl")));
    }
    lm.append(line);
  }
  // Game over.
  const over = document.getElementById("game-over");
  over.classList.toggle("hidden", !v.done);
  document.getElementById("after").classList.toggle("hidden", !v.done);
  if (v.done) {
    let t;
    if (v.error) t = "Game stopped.";
    else if (v.truncated || v.winner < 0) t = "Game over: no winner.";
    else t = v.winner === v.my_side ? `Game over: you win!` : `Game over: ${v.side_names[v.winner]} wins.`;
    over.textContent = `${t} Final score: ${perSide(v.side_names, v.scores)}.`;
    document.getElementById("watch").href = `/replay.html?game=${encodeURIComponent(data.id)}`;
    document.getElementById("save").href = `/api/games/${encodeURIComponent(data.id)}/replay`;
    for (const id of ["watch", "save"]) document.getElementById(id).classList.toggle("hidden", !v.replayable);
  }
}

function choose(card, options) {
  if (busy || !view || !view.your_turn) return;
  if (options.length === 1) {
    call(`/api/games/${encodeURIComponent(gameId)}/move`, {card, capture: options[0]});
    return;
  }
  const box = document.getElementById("options");
  box.replaceChildren(el("div", {class: "label", text: `${cardName(card)} can capture in ${options.length} ways: choose one`}));
  options.forEach((o, i) => {
    const b = el("button", {class: "option", "data-option": i}, ...o.map(c => cardEl(c, "small")));
    if (o.length === view.table.length) b.append(el("span", {class: "escoba", text: " escoba!"}));
    b.addEventListener("click", () => call(`/api/games/${encodeURIComponent(gameId)}/move`, {card, capture: o}));
    box.append(b);
  });
  const back = el("button", {text: "back"});
  back.addEventListener("click", () => box.classList.add("hidden"));
  box.append(back);
  box.classList.remove("hidden");
  document.querySelectorAll("#hand .card").forEach(e => e.classList.toggle("played", Number(e.dataset.card) === card));
  document.querySelectorAll("#table .card").forEach(e => {
    const c = Number(e.dataset.card);
    e.classList.toggle("hl", options.some(o => o.includes(c)));
  });
}

async function init() {
  const f = document.getElementById("setup");
  f.addEventListener("submit", newGame);
  // The browser's own check of a field stops the request: an earlier server error no longer applies.
  f.addEventListener("invalid", () => showError(""), true);
  document.getElementById("rematch").addEventListener("click",
      () => call(`/api/games/${encodeURIComponent(gameId)}/rematch`, {}));
  try {
    const info = await api("/api/info");
    for (const s of info.sevens_rules) f.sevens_rule.append(el("option", {text: s}));
    if (!info.neural) f.opponents.value = "expert";
    // The agent list is the registry's: each name, its parameters and its one-line description.
    const agents = info.agents.filter(a => info.neural || a.name !== info.alias);
    f.opponents.title = "one agent spec for every bot seat, or one per bot seat separated by spaces: " +
        agents.map(a => a.name).join(", ");
    document.getElementById("agents-help").replaceChildren(
        "Agents (parameters are written search:sims=200, endgame:base=greedy):",
        el("ul", {id: "agent-list"}, ...agents.map(a => el("li", {}, el("code", {text: a.name}),
            a.params.length ? ` (${a.params.join(", ")})` : "", `: ${a.help}`))));
  } catch (e) {
    showError(e.message);
  }
  document.body.dataset.ready = "1";
}
init();
