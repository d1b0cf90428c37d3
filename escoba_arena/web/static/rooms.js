// The rooms page: a host opens a room and gets one link per person and a spectator link.
"use strict";

function showError(text) {
  const m = document.getElementById("message");
  m.textContent = text;
  m.classList.toggle("hidden", !text);
}

function seatFields() {
  const f = document.getElementById("host");
  const n = Number(f.num_players.value);
  const box = document.getElementById("seat-fields");
  const old = [...box.querySelectorAll("input")].map(i => i.value);
  box.replaceChildren();
  for (let s = 0; s < n; s++) {
    box.append(el("label", {text: `seat ${s} `}, el("input", {name: `seat${s}`, size: "18",
                  value: old[s] || (s === n - 1 && n > 2 ? "greedy" : "human")})));
  }
}

async function openRoom(ev) {
  ev.preventDefault();
  const f = document.getElementById("host");
  const n = Number(f.num_players.value);
  const seats = [];
  for (let s = 0; s < n; s++) {
    const v = f[`seat${s}`].value.trim();
    if (v === "human") seats.push({kind: "human"});
    else if (v.startsWith("human:")) seats.push({kind: "human", name: v.slice(6)});
    else seats.push({kind: "bot", spec: v});
  }
  const body = {rules: {num_players: n, partnerships: f.partnerships.checked, target_score: Number(f.target_score.value)},
                seats, record: f.record.checked, takeover: f.takeover.value.trim() || "greedy"};
  const deals = f.deals.value.trim();
  if (deals) body.deals = deals.split(/\s+/).map(d => { const [a, b] = d.split(":"); return {seed: Number(a), game_id: Number(b || 0)}; });
  try {
    const d = await api("/api/rooms", body);
    showError("");
    const t = document.getElementById("links");
    t.replaceChildren(el("tr", {}, el("th", {text: "seat"}), el("th", {text: "pseudonym"}), el("th", {text: "link (send it to this person only)"})));
    for (const x of d.links) {
      const url = location.origin + x.link;
      t.append(el("tr", {class: "seat-link", "data-seat": x.seat}, el("td", {text: String(x.seat)}), el("td", {text: x.name}),
                  el("td", {}, el("a", {href: url, target: "_blank", text: url}))));
    }
    const w = document.getElementById("watch");
    w.href = location.origin + d.watch;
    w.textContent = w.href;
    document.getElementById("record-note").textContent = d.room.record_note;
    document.getElementById("opened").classList.remove("hidden");
  } catch (e) {
    showError(e.message);
  }
}

const form = document.getElementById("host");
form.num_players.addEventListener("change", seatFields);
form.addEventListener("submit", openRoom);
seatFields();
document.body.dataset.ready = "1";
