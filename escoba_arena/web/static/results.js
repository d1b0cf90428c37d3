// The results page: an evaluate.py results JSON as tables, with links to the run's replays.
"use strict";
const fmt = (x, d, sign) => (x === null || x === undefined) ? "n/a" : (sign && x >= 0 ? "+" : "") + x.toFixed(d);

function showError(text) {
  const m = document.getElementById("message");
  m.textContent = text;
  m.classList.toggle("hidden", !text);
}

function render(d) {
  const res = d.results, c = res.config, pct = Math.round(c.confidence * 100), games = c.mode === "games";
  document.getElementById("report").classList.remove("hidden");
  const r = c.rules;
  document.getElementById("summary").textContent =
      `${c.entrants.length} agents, ${c.lineups.length} lineups, ${r.num_players} players${r.partnerships ? " (2v2)" : ""}, ` +
      `${games ? "games to " + r.target_score : "single rounds"}, ${c.deals_per_lineup} deals per lineup, ` +
      `${c.duplicate ? "duplicate" : "no duplicate"}, seed ${res.seeds.seed}`;
  const head = ["A", "B", games ? "games" : "rounds", `A−B points/round [${pct}% CI]`, `A win rate [${pct}% CI]`,
                "esc/rd A", "esc/rd B", "A share: cards", "oros", "velo", "sevens"];
  const t = document.getElementById("pairs");
  t.replaceChildren(el("tr", {}, ...head.map(h => el("th", {text: h}))));
  for (const p of res.pairs) {
    const w = p.win_rate, s = p.category_share;
    t.append(el("tr", {class: "pair"}, ...[p.a, p.b, String(games ? p.games : p.rounds),
        `${fmt(p.diff.mean, 3, true)} [${fmt(p.diff.lo, 3, true)}, ${fmt(p.diff.hi, 3, true)}]`,
        `${fmt(w.rate, 3)} [${fmt(w.lo, 3)}, ${fmt(w.hi, 3)}]`,
        fmt(p.escobas_per_round.a, 3), fmt(p.escobas_per_round.b, 3),
        fmt(s.cards, 3), fmt(s.oros, 3), fmt(s.velo, 3), fmt(s.sevens, 3)].map(x => el("td", {text: x}))));
  }
  document.getElementById("pairs-note").textContent =
      "A−B: points per round, CI paired over deals. Win rate: Wilson interval, ties count half.";
  const ppr = Object.fromEntries(res.agents.map(a => [a.agent, a]));
  const rt = document.getElementById("ratings");
  rt.replaceChildren(el("tr", {}, ...["rank", "agent", "rating mu", "sigma", `${pct}% interval`, "points/round", "rounds"]
                                    .map(h => el("th", {text: h}))));
  res.ratings.forEach((x, i) => {
    const a = ppr[x.agent] || {};
    rt.append(el("tr", {class: "rating"}, ...[String(i + 1), x.agent, fmt(x.mu, 2), fmt(x.sigma, 2),
        `[${fmt(x.lo, 2)}, ${fmt(x.hi, 2)}]`, fmt(a.points_per_round, 3), String(a.rounds ?? "")].map(v => el("td", {text: v}))));
  });
  const rm = res.rating_model || {};
  document.getElementById("rating-model").textContent = rm.library ?
      `rating: ${rm.library} ${rm.model} (mu ${rm.mu}, tau ${rm.tau}); ${rm.matches}` : "";
  const ul = document.getElementById("replays");
  ul.replaceChildren();
  if (!d.replays.length) ul.append(el("li", {text: "none found under the server's data directories (evaluate.py --save-replays DIR)"}));
  for (const rp of d.replays) {
    ul.append(el("li", {}, el("a", {href: `/replay.html?file=${encodeURIComponent(rp.name)}`, text: rp.lineup.join(" vs ")}),
                 el("span", {text: ` (${rp.name})`})));
  }
}

async function open(name) {
  try { render(await api(`/api/results?file=${encodeURIComponent(name)}`)); showError(""); }
  catch (e) { showError(e.message); }
}

async function init() {
  const fs = document.getElementById("file");
  fs.addEventListener("change", () => fs.value && open(fs.value));
  try {
    const files = await api("/api/files");
    for (const f of files.results) fs.append(el("option", {value: f.name, text: f.name}));
    const q = new URLSearchParams(location.search).get("file");
    if (q) { fs.value = q; await open(q); }
  } catch (e) { showError(e.message); }
  document.body.dataset.ready = "1";
}
init();
