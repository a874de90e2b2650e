// dpwidgets budget meter (anywidget ES module).
// Draws the traits set by dpwidgets/widgets/meter.py; computes nothing private: every number
// it shows (epsilons, labels, times) is already public ledger information.

function fmt(x) {
  return Number(x).toPrecision(3).replace(/\.?0+$/, "");
}

// With more than FOLD_AFTER datasets, every dataset but the active one is folded to its
// one-line summary (a <details> the reader can open; what is open stays open across redraws).
const FOLD_AFTER = 2;

function renderBudget(b, warnFraction, active, folded, opened) {
  const row = document.createElement(folded ? "details" : "div");
  row.className = "dpw-meter-row" + (b.dataset === active ? " dpw-meter-active" : "") +
    (folded ? " dpw-meter-folded" : "");
  row.dataset.dataset = b.dataset;
  if (folded) {
    row.open = opened.has(b.dataset);
    row.addEventListener("toggle", () => {
      if (row.open) opened.add(b.dataset); else opened.delete(b.dataset);
    });
  }

  const head = document.createElement(folded ? "summary" : "div");
  head.className = "dpw-meter-head";
  head.textContent =
    `${b.dataset}: spent ε = ${fmt(b.spent)} of ${fmt(b.total)}, remaining ε = ${fmt(b.remaining)}` +
    (b.count === undefined ? "" : ` (${b.count} release${b.count === 1 ? "" : "s"})`);
  row.appendChild(head);

  const bar = document.createElement("div");
  bar.className = "dpw-meter-bar";
  const scale = Math.max(b.total, b.spent + b.overdraft);
  // At most ~50 recent releases plus one aggregated "earlier releases" segment each for the
  // ledger and the teaching overdrafts (the kernel bounds the list), so a redraw costs the
  // same at 10 recorded releases as at 20,000.
  for (const s of b.segments) {
    const seg = document.createElement("div");
    seg.className = "dpw-meter-segment" + (s.overdraft ? " dpw-meter-overdraft" : "") +
      (s.earlier ? " dpw-meter-earlier" : "");
    // The width is what the release added to "spent" (a release on a part of a partition
    // already charged more elsewhere adds nothing: parallel composition).
    const width = s.charged === undefined ? s.epsilon : s.charged;
    seg.style.width = `${(100 * width) / scale}%`;
    seg.title = (s.earlier ? `${s.label}\nε = ${fmt(s.epsilon)} together\n${s.time}`
      : `${s.label}\nε = ${fmt(s.epsilon)}` +
        (width !== s.epsilon ? ` (adds ${fmt(width)})` : "") + `\n${s.time}`) +
      (s.overdraft ? "\n(past the cap: analyst mode would refuse this)" : "");
    seg.textContent = width / scale > 0.08 ? s.label : "";
    bar.appendChild(seg);
  }
  const rest = document.createElement("div");
  rest.className = "dpw-meter-remaining";
  rest.style.width = `${(100 * b.remaining) / scale}%`;
  rest.title = `remaining ε = ${fmt(b.remaining)}`;
  bar.appendChild(rest);
  row.appendChild(bar);

  const odds = document.createElement("div");
  odds.className = "dpw-meter-odds";
  // The sentence names the privacy unit ("row" unless the data owner declared one row per
  // person): the bound protects one row, a person with k rows only at k times epsilon.
  odds.textContent = `Remaining budget: ${b.odds}.`;
  row.appendChild(odds);

  if (b.warning) {
    const warn = document.createElement("div");
    warn.className = "dpw-meter-warning";
    warn.textContent =
      `Warning: ${Math.round(100 * b.fraction)}% of the budget is spent ` +
      `(warns at ${Math.round(100 * warnFraction)}%).`;
    row.appendChild(warn);
  }
  if (b.overdraft > 0) {
    const over = document.createElement("div");
    over.className = "dpw-meter-overdraft-note";
    over.textContent =
      `Teaching mode: runs worth ε = ${fmt(b.overdraft)} went past the cap; ` +
      `on confidential data they would have been refused.`;
    row.appendChild(over);
  }
  return row;
}

// Ask the kernel to re-read the ledgers: another notebook (or kernel) on the same ledger may
// have spent since. Asked when drawn, when the meter comes into sight, when the pointer enters
// it, and every `refresh_seconds` while it is on screen and the page is visible.
function keepFresh(model, root) {
  let inSight = false;
  const ask = () => model.send({ kind: "refresh" });
  const observer = new IntersectionObserver((entries) => {
    const now = entries.some((e) => e.isIntersecting);
    if (now && !inSight) ask();
    inSight = now;
  });
  observer.observe(root);
  root.addEventListener("pointerenter", ask);
  const timer = setInterval(() => {
    if (inSight && document.visibilityState === "visible") ask();
  }, 1000 * Math.max(1, model.get("refresh_seconds") || 5));
  ask();
  return () => {
    observer.disconnect();
    clearInterval(timer);
    root.removeEventListener("pointerenter", ask);
  };
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "dpw-meter";
  el.appendChild(root);
  const opened = new Set();

  function draw() {
    root.replaceChildren();
    root.dataset.mode = model.get("mode");
    const title = document.createElement("div");
    title.className = "dpw-meter-title";
    title.textContent = `Privacy budget (${model.get("mode")} mode)`;
    root.appendChild(title);
    const budgets = model.get("budgets") || [];
    if (budgets.length === 0) {
      const empty = document.createElement("div");
      empty.className = "dpw-meter-empty";
      empty.textContent = "No dataset yet.";
      root.appendChild(empty);
    }
    // The active dataset (the latest release's) first, the others in the session's order.
    const active = model.get("active") || (budgets[0] && budgets[0].dataset);
    const ordered = budgets.filter((b) => b.dataset === active)
      .concat(budgets.filter((b) => b.dataset !== active));
    const fold = ordered.length > FOLD_AFTER;
    for (const b of ordered) {
      root.appendChild(renderBudget(b, model.get("warn_fraction"), model.get("active"),
                                    fold && b.dataset !== active, opened));
    }
    const message = model.get("message");
    if (message) {
      const msg = document.createElement("div");
      msg.className = "dpw-meter-message";
      msg.textContent = message;
      root.appendChild(msg);
    }
    const notice = model.get("notice");
    if (notice) {
      const note = document.createElement("div");
      note.className = "dpw-meter-notice";
      note.textContent = notice;
      root.appendChild(note);
    }
  }

  draw();
  const traits = ["budgets", "active", "message", "notice", "mode", "warn_fraction"];
  for (const name of traits) {
    model.on(`change:${name}`, draw);
  }
  const stopRefreshing = keepFresh(model, root);
  return () => {
    stopRefreshing();
    for (const name of traits) {
      model.off(`change:${name}`, draw);
    }
  };
}

export default { render };
