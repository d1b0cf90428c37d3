// A room's page for one seat (or the spectator): the token comes after "#t=" in the link and is
// sent in the WebSocket's first message, never in a URL the server sees. Once read, it leaves the
// address bar (so history, bookmarks and a shared screen do not keep it) and stays in this tab's
// sessionStorage, so a reload keeps the seat. Every change comes pushed.
"use strict";
const TOKEN_KEY = "escoba-room-token";
const token = takeToken();
let ws = null;
let state = null;
let stopped = false;
let retry = 0;

function stored(value) {
  // sessionStorage can be refused (storage off): the page then works until the tab closes.
  try {
    if (value === undefined) return sessionStorage.getItem(TOKEN_KEY) || "";
    if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY);
  } catch (e) { /* nothing kept */ }
  return value || "";
}

function takeToken() {
  const fromLink = new URLSearchParams(location.hash.slice(1)).get("t");
  if (!fromLink) return stored();
  stored(fromLink);
  history.replaceState(null, "", location.pathname + location.search);
  return fromLink;
}

function showError(text) {
  const m = document.getElementById("message");
  m.textContent = text;
  m.classList.toggle("hidden", !text);
}

function showRejoin() {
  const link = `${location.origin}/room.html#t=${token}`;
  document.getElementById("my-link").textContent = link;
  document.getElementById("rejoin").classList.remove("hidden");
}

function connect() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  ws = new WebSocket(`${proto}//${location.host}/api/rooms/ws`);
  ws.onopen = () => { retry = 0; ws.send(JSON.stringify({type: "hello", token})); };
  ws.onmessage = ev => {
    const m = JSON.parse(ev.data);
    if (m.type === "state") { showError(""); render(m); }
    else if (m.type === "error") {
      showError(m.message);
      if (m.status === 403 || m.status === 410) {
        stopped = true;
        if (m.status === 403) stored("");  // not a seat's token: a reload must not try it again
      }
    } else if (m.type === "closed") { stopped = true; showError(m.message); document.body.dataset.closed = "1"; }
  };
  ws.onclose = () => {
    if (stopped || (state && state.room.status === "over")) return;
    retry = Math.min(retry + 1, 5);
    setTimeout(connect, 300 * retry);  // a reload or a lost connection: back in the seat with the token
  };
}

function who(v, s) { return v.names[s] + (s === v.seat ? " (you)" : ""); }

function describe(e, v) {
  if (e.type === "deal") return `Round ${e.round}: ${who(v, e.dealer)} deals.` + (e.taken.length ? ` ${who(v, e.dealer)} takes ${names(e.taken)} from the table.` : "");
  if (e.type === "move") return `${who(v, e.seat)}: ${e.words}${e.escoba ? " · ESCOBA!" : "."}`;
  if (e.type === "last_cards") return e.seat >= 0 ? `The last table cards ${names(e.cards)} go to ${who(v, e.seat)}.` : `Nobody captured: ${names(e.cards)} stay unclaimed.`;
  if (e.type === "round_over") return roundSummary(v.side_names, e);
  if (e.type === "game_over") return "Game over.";
  if (e.type === "takeover" || e.type === "error") return e.message;
  return "";
}

// Who won a finished game, for the reader (a seat, or the spectator: mySide -1).
function outcome(v, mySide) {
  if (v.error) return "the game was stopped";
  if (v.winner < 0) {
    const top = Math.max(...v.scores);
    return v.scores.filter(x => x === top).length > 1 ? `a tie at ${top}` : "no winner (the round limit ended it)";
  }
  const name = v.side_names[v.winner];
  if (!v.rules.partnerships) return v.winner === mySide ? "you win" : `${name} wins`;
  return v.winner === mySide ? `your side (${name}) wins` : `the side ${name} wins`;
}

// The games of a multi-deal room played so far: "game 1: ana won (ana 21, bea 15)".
function gamesSoFar(r, sideNames) {
  return r.results.map(x => `game ${x.game}: ` + (x.error ? "stopped" : x.winner >= 0 ? `${sideNames[x.winner]} won` : "no winner") +
                            ` (${perSide(sideNames, x.scores)})`).join(" · ");
}

// A person who has opened their link but has no page open now (and whose seat no bot has taken).
function away(r, s) { return s.kind === "human" && s.taken && !s.connected && !s.replaced && r.status === "playing"; }

function seatState(r, s) {
  if (s.kind !== "human") return "";
  if (s.replaced) return `left; ${s.replaced} plays`;
  if (!s.taken) return "not yet joined";
  return s.connected ? "here" : "away";
}

function renderPeople(r) {
  const people = document.getElementById("people");
  people.replaceChildren(el("tr", {}, ...["seat", "who", "status"].map(h => el("th", {text: h}))));
  r.seats.forEach((s, k) => people.append(el("tr", {"data-seat": k, class: away(r, s) ? "away" : ""},
      el("td", {text: String(k)}), el("td", {text: s.kind === "human" ? s.name : "bot " + s.spec}),
      el("td", {class: "presence", text: seatState(r, s)}))));
  const gone = r.seats.filter(s => away(r, s)).map(s => s.name);
  const box = document.getElementById("away");
  box.textContent = gone.length ? `${gone.join(" and ")} ${gone.length > 1 ? "have" : "has"} left the table. ` +
      `The game waits for them to come back; if they stay away, ${r.takeover} plays their seat.` : "";
  box.classList.toggle("hidden", !gone.length);
}

function render(m) {
  state = m;
  const r = m.room, v = m.view;
  document.body.dataset.status = r.status;
  document.getElementById("record-note").textContent = r.record_note;
  const me = m.seat < 0 ? "You are watching (public information only while the game runs)." : `You are seat ${m.seat} (${r.seats[m.seat].name}).`;
  document.getElementById("room-status").textContent = `${me} Room: ${r.status}` +
      (r.games > 1 ? ` · game ${r.game} of ${r.games} (fixed deals)` : "") +
      (r.games > 1 && v && r.results.length && r.status !== "over" ? ` · ${gamesSoFar(r, v.side_names)}` : "") +
      (r.status === "waiting" ? " · the game starts when every person has opened their link" : "");
  renderPeople(r);
  const over = document.getElementById("game-over");
  over.classList.toggle("hidden", !(v && v.done));
  if (!v) return;
  document.getElementById("game").classList.remove("hidden");
  document.getElementById("status").textContent = (v.done ? "Game over · " : "") +
      `Round ${v.round} · dealer ${v.names[v.dealer]} · stock ${v.stock} cards · target ${v.rules.target_score}` +
      (v.done ? "" : ` · to act: ${who(v, v.to_act)}`);
  const opp = document.getElementById("opponents");
  opp.replaceChildren();
  v.names.forEach((n, s) => {
    if (s === v.seat) return;
    const row = el("div", {class: "row"});
    for (let i = 0; i < v.hand_counts[s]; i++) row.append(backEl("small"));
    const gone = away(r, r.seats[s]) ? " · away" : "";
    opp.append(el("div", {class: "seat" + (s === v.to_act ? " toact" : ""), "data-seat": s},
                  el("div", {class: "label", text: `${n} · ${v.hand_counts[s]} in hand${gone}`}), row));
  });
  document.getElementById("table").replaceChildren(...v.table.map(c => cardEl(c)));
  const sum = v.table.filter(c => c < 40).reduce((a, c) => a + (c >> 2) + 1, 0);
  document.getElementById("table-sum").textContent = v.table.length ? `(sum ${sum})` : "";
  const legal = new Map(v.moves.map(x => [x.card, x.options]));
  document.getElementById("hand-label").classList.toggle("hidden", m.seat < 0);
  document.getElementById("hand").replaceChildren(...v.hand.map(c => {
    const e = cardEl(c, legal.has(c) ? "playable" : "dim");
    if (legal.has(c)) e.addEventListener("click", () => choose(c, legal.get(c)));
    return e;
  }));
  document.getElementById("turn").textContent = v.your_turn ? "· your turn: tap a card" : "";
  document.body.dataset.turn = v.your_turn ? "1" : "0";
  document.getElementById("options").classList.add("hidden");
  const sc = document.getElementById("scores");
  sc.replaceChildren(el("tr", {}, ...["side", "score", "captured", "oros", "sevens", "escobas"].map(h => el("th", {text: h}))));
  v.side_names.forEach((n, s) => {
    const d = v.sides[s];
    sc.append(el("tr", {"data-side": s}, el("td", {text: n}), el("td", {class: "score", text: String(v.scores[s])}),
                 el("td", {text: String(d.count)}), el("td", {text: String(d.oros)}), el("td", {text: String(d.sevens)}),
                 el("td", {text: String(d.escobas)})));
  });
  const ro = [...v.log].reverse().find(e => e.type === "round_over");
  const rbox = document.getElementById("round-over");
  rbox.replaceChildren();
  if (ro) rbox.append(el("div", {class: "label", text: "Last round"}), roundTable(v.side_names, ro));
  document.getElementById("log").replaceChildren(...[...v.log].reverse().map(e => el("div", {text: describe(e, v)})));
  if (v.done) {
    const mine = m.seat < 0 ? -1 : v.my_side;
    over.textContent = `Game over: ${outcome(v, mine)}. Final score: ${perSide(v.side_names, v.scores)}.` +
        (r.games > 1 ? ` Games: ${gamesSoFar(r, v.side_names)}.` : "");
    over.dataset.winner = String(v.winner);
  }
  const fin = document.getElementById("finished");
  fin.replaceChildren();
  for (const rec of m.finished || []) {
    const blob = new Blob([JSON.stringify(rec) + "\n"], {type: "application/x-ndjson"});
    fin.append(el("div", {}, el("a", {href: URL.createObjectURL(blob), download: `room_game_${rec.room.game}.jsonl`,
                                       text: `Game ${rec.room.game}: every hand (replay file; open it on the Replays page)`})));
  }
}

function send(card, capture) {
  ws.send(JSON.stringify({type: "move", card, capture}));
  document.body.dataset.turn = "0";
}

function choose(card, options) {
  if (!state || !state.view.your_turn) return;
  if (options.length === 1) { send(card, options[0]); return; }
  const box = document.getElementById("options");
  box.replaceChildren(el("div", {class: "label", text: `${cardName(card)} can capture in ${options.length} ways: choose one`}));
  options.forEach((o, i) => {
    const b = el("button", {class: "option", "data-option": i}, ...o.map(c => cardEl(c, "small")));
    b.addEventListener("click", () => send(card, o));
    box.append(b);
  });
  box.classList.remove("hidden");
}

if (!token) showError("This page has no room token. Open your link again (the one the host sent you, ending with #t=...).");
else { showRejoin(); connect(); }
document.body.dataset.ready = "1";
