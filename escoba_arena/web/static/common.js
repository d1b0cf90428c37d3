// Shared helpers of the arena pages: card drawing, names, results and JSON calls.
"use strict";
// The engine's names (escoba_env/rulebook/cards.py): suit 0 oros, 1 copas, 2 espadas, 3 bastos; ranks 1-7, S, C, R.
const SUITS = ["oros", "copas", "espadas", "bastos"];
const RANKS = ["1", "2", "3", "4", "5", "6", "7", "S", "C", "R"];
// Full names as escoba_env.rulebook.cards.card_words writes them (the server phrases moves with move_words).
const RANK_WORDS = ["as", "2", "3", "4", "5", "6", "7", "sota", "caballo", "rey"];

// "7 de oros", "sota de copas"; a joker of the jokers variant is "joker 1".
function cardName(id) {
  if (id >= 40) return "joker " + (id - 39);
  return RANK_WORDS[id >> 2] + " de " + SUITS[id & 3];
}

// A face-up card: its rank in the corner and its Spanish suit drawn from the shipped SVG.
function cardEl(id, cls) {
  const e = document.createElement("div");
  e.className = "card " + (id >= 40 ? "joker" : "s" + (id & 3)) + (cls ? " " + cls : "");
  e.dataset.card = id;
  e.title = cardName(id);
  e.setAttribute("role", "img");
  e.setAttribute("aria-label", cardName(id));
  const r = document.createElement("span");
  r.className = "rank";
  r.textContent = id >= 40 ? "★" + (id - 39) : RANKS[id >> 2];
  if (id >= 40) {
    const s = document.createElement("span");
    s.className = "suit";
    s.textContent = "joker";
    e.append(r, s);
    return e;
  }
  const img = document.createElement("img");
  img.className = "suit";
  img.src = `/suits/${SUITS[id & 3]}.svg`;
  img.alt = "";
  img.draggable = false;
  e.append(r, img);
  return e;
}

function backEl(cls) {
  const el = document.createElement("div");
  el.className = "card back" + (cls ? " " + cls : "");
  return el;
}

function names(cards) { return cards.length ? cards.map(cardName).join(", ") : "nothing"; }

async function api(path, body) {
  const opts = body === undefined ? {} : {method: "POST", headers: {"Content-Type": "application/json"},
                                          body: JSON.stringify(body)};
  const res = await fetch(path, opts);
  let data;
  try { data = await res.json(); } catch (e) { data = {error: res.status + " " + res.statusText}; }
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

const CATEGORY_LABELS = [["cards", "most cards"], ["oros", "most oros"], ["velo", "velo (7 de oros)"],
                         ["sevens", "sevens"], ["escobas", "escobas"]];

// The end-of-round table: one column per side, one row per category, then round and total points.
function roundTable(sideNames, rnd) {
  const t = el("table", {class: "grid", id: "round-table"});
  t.append(el("tr", {}, el("th", {text: ""}), ...sideNames.map(n => el("th", {text: n}))));
  for (const [key, label] of CATEGORY_LABELS) {
    t.append(el("tr", {"data-cat": key}, el("td", {text: label}),
                ...rnd.categories[key].map(v => el("td", {text: String(v)}))));
  }
  t.append(el("tr", {"data-cat": "points"}, el("td", {text: "points this round"}),
              ...rnd.points.map(v => el("td", {text: String(v)}))));
  t.append(el("tr", {"data-cat": "total"}, el("th", {text: "total"}),
              ...rnd.scores.map(v => el("th", {text: String(v)}))));
  return t;
}

// "ana 3, bea 1": one number per side, each named.
function perSide(sideNames, values) { return sideNames.map((n, s) => `${n} ${values[s]}`).join(", "); }

// The one-line summary of a round_over log entry, naming each side.
function roundSummary(sideNames, e) {
  return `Round over: points ${perSide(sideNames, e.points)}; total ${perSide(sideNames, e.scores)}.`;
}
