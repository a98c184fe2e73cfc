// The page written by stadyn.show(..., "net.html"): switches between the pictures Graphviz laid
// out for each set of open scopes (stadyn/inspect/_html.py says which sets there are).
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("stadyn-graph-data").textContent);
  const view = document.getElementById("stadyn-view");
  const status = document.getElementById("stadyn-status");
  const scopes = new Map(data.scopes.map((s) => [s.index, s]));
  let current = data.initial;
  let zoom = 1;

  const parse = (key) => new Set(key ? key.split(",").map(Number) : []);
  const keyOf = (set) => Array.from(set).sort((a, b) => a - b).join(",");

  function above(index) {            // the scopes around `index`, innermost first
    const out = [];
    for (let p = scopes.get(index).parent; p !== null; p = scopes.get(p).parent) out.push(p);
    return out;
  }

  function applyZoom() {
    const svg = view.querySelector("svg");
    if (!svg) return;
    svg.style.width = svg.width.baseVal.value * zoom + "px";
    svg.style.height = svg.height.baseVal.value * zoom + "px";
  }

  function show(key, focusId) {
    const template = document.getElementById("stadyn-state-" + data.states[key]);
    view.replaceChildren(template.content.cloneNode(true));
    current = key;
    document.body.dataset.state = key;
    const open = parse(key).size;
    const total = data.scopes.filter((s) => s.toggles).length;
    status.textContent = open + " of " + total + " groups open.";
    applyZoom();
    const target = focusId && document.getElementById(focusId);
    if (target) {
      target.scrollIntoView({ block: "center", inline: "center" });
      target.classList.add("flash");
      setTimeout(() => target.classList.remove("flash"), 700);
    }
  }

  function openScope(index) {
    const next = parse(current);
    next.add(index);
    above(index).forEach((a) => { if (scopes.get(a).toggles) next.add(a); });
    let key = keyOf(next);
    if (!(key in data.states)) key = data.open[index];
    show(key, "scope_" + index);
  }

  function closeScope(index) {
    const next = parse(current);
    data.scopes.forEach((s) => {
      if (s.index === index || above(s.index).includes(index)) next.delete(s.index);
    });
    let key = keyOf(next);
    if (!(key in data.states)) key = data.close[index];
    show(key, "scope_" + index + "_box");
  }

  view.addEventListener("click", (event) => {
    const group = event.target.closest('g[id^="scope_"]');
    if (!group) return;
    const match = /^scope_(\d+)(_box)?$/.exec(group.id);
    if (!match) return;
    event.preventDefault();
    if (match[2]) openScope(Number(match[1])); else closeScope(Number(match[1]));
  });
  document.getElementById("stadyn-open-all").addEventListener("click", () => show(data.all));
  document.getElementById("stadyn-close-all").addEventListener("click", () => show(""));
  document.getElementById("stadyn-zoom-in").addEventListener("click", () => { zoom *= 1.25; applyZoom(); });
  document.getElementById("stadyn-zoom-out").addEventListener("click", () => { zoom /= 1.25; applyZoom(); });
  document.getElementById("stadyn-zoom-fit").addEventListener("click", () => {
    const svg = view.querySelector("svg");
    if (svg) { zoom = (view.clientWidth - 24) / svg.width.baseVal.value; applyZoom(); }
  });
  show(current);
})();
