// Shared helpers of the arena pages: card drawing and JSON calls.
"use strict";
const SUITS = ["oros", "copas", "espadas", "bastos"];
const RANKS = ["1", "2", "3", "4", "5", "6", "7", "S", "C", "R"];
// Full names as escoba_env.cards.card_words writes them (the server phrases moves with move_words).
const RANK_WORDS = ["as", "2", "3", "4", "5", "6", "7", "sota", "caballo", "rey"];

function cardName(id) {
  if (id >= 40) return "joker " + (id - 39);
  return RANK_WORDS[id >> 2] + " de " + SUITS[id & 3];
}

function cardEl(id, cls) {
  const el = document.createElement("div");
  el.className = "card " + (id >= 40 ? "joker" : "s" + (id & 3)) + (cls ? " " + cls : "");
  el.dataset.card = id;
  el.title = cardName(id);
  const r = document.createElement("span");
  r.className = "rank";
  r.textContent = id >= 40 ? "★" + (id - 39) : RANKS[id >> 2];
  const s = document.createElement("span");
  s.className = "suit";
  s.textContent = id >= 40 ? "joker" : SUITS[id & 3];
  el.append(r, s);
  return el;
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

const CATEGORY_LABELS = [["cards", "most cards"], ["oros", "most oros"], ["velo", "velo (7 oros)"],
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
