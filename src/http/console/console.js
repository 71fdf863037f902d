// gearwheel console. Polls the server's JSON endpoints about once a second, for the view on
// screen only, one request at a time; every value from the server is inserted as text
// (textContent / createTextNode), never as HTML.
"use strict";

(function () {
  const POLL_MS = 800;
  const VIEWS = ["overview", "schedules", "workers", "jobs"];
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  let view = "overview";
  let timer = null;
  let inflight = false;
  let again = false;
  let lastBody = {};
  let lookedUp = null;
  // The server says whether this viewer may act (a loopback peer).
  let canAct = false;

  // An element with a class and text content (text only: never parsed as HTML).
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function cell(text, cls, title) {
    const td = el("td", cls, text);
    if (title) td.title = title;
    return td;
  }

  // A time cell: the viewer's zone, UTC on hover.
  function timeCell(iso, cls) {
    if (!iso) return cell("—", cls);
    const d = new Date(iso);
    if (isNaN(d)) return cell(iso, cls);
    return cell(local(d) + " (" + relative(d) + ")", cls, d.toISOString().replace(".000Z", "Z") + " UTC");
  }

  function local(d) {
    return d.toLocaleString(undefined, {
      year: "numeric", month: "short", day: "numeric",
      hour: "2-digit", minute: "2-digit", second: "2-digit",
    });
  }

  function relative(d) {
    let s = Math.round((d.getTime() - Date.now()) / 1000);
    const future = s > 0;
    s = Math.abs(s);
    let t;
    if (s < 60) t = s + " s";
    else if (s < 3600) t = Math.round(s / 60) + " min";
    else if (s < 172800) t = Math.round(s / 3600) + " h";
    else t = Math.round(s / 86400) + " d";
    return future ? "in " + t : t + " ago";
  }

  function duration(sec) {
    if (sec === null || sec === undefined) return "—";
    const d = Math.floor(sec / 86400), h = Math.floor(sec / 3600) % 24;
    const m = Math.floor(sec / 60) % 60, s = sec % 60;
    if (d) return d + " d " + h + " h";
    if (h) return h + " h " + m + " min";
    if (m) return m + " min " + s + " s";
    return s + " s";
  }

  function size(b) {
    if (b === null || b === undefined) return "—";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : b) + " " + units[i];
  }

  function fill(tbody, rows, cols, empty) {
    const frag = document.createDocumentFragment();
    if (!rows.length) {
      const tr = el("tr");
      const td = cell(empty, "empty");
      td.colSpan = cols;
      tr.append(td);
      frag.append(tr);
    }
    for (const r of rows) frag.append(r);
    // A keyboard user's focus stays on the same button (its title names the row) when the
    // table is redrawn under it.
    const had = document.activeElement;
    const keep = had && had.tagName === "BUTTON" && tbody.contains(had) ? had.title : null;
    tbody.replaceChildren(frag);
    if (keep) {
      const again = [...tbody.querySelectorAll("button")].find((b) => b.title === keep);
      if (again) again.focus();
    }
  }

  function facts(dl, pairs) {
    const frag = document.createDocumentFragment();
    for (const [k, v, title] of pairs) {
      const d = el("div");
      const dd = el("dd", null, v);
      if (title) dd.title = title;
      d.append(el("dt", null, k), dd);
      frag.append(d);
    }
    dl.replaceChildren(frag);
  }

  // A refusal (403: the server's ACL does not grant this viewer `status`) is said plainly on
  // the page, not taken for a server that does not answer.
  class Denied extends Error {}

  async function get(path) {
    const r = await fetch(path, { cache: "no-store", headers: { Accept: "application/json" } });
    if (r.status === 403) throw new Denied((await r.text()).trim() || "forbidden");
    if (!r.ok && r.status !== 404) throw new Error(path + ": " + r.status);
    const text = await r.text();
    return { status: r.status, text: text, json: JSON.parse(text) };
  }

  // Render only what changed: a table rebuilt every second would steal hover and selection.
  function changed(key, text) {
    if (lastBody[key] === text) return false;
    lastBody[key] = text;
    return true;
  }

  function ms(us) {
    return us === null || us === undefined ? "—" : us < 1000 ? us + " µs" : (us / 1000).toFixed(us < 10000 ? 2 : 1) + " ms";
  }

  // ---- Overview ----
  function renderServer(s) {
    $("version").textContent = "gearwheel " + s.version;
    const up = s.started ? new Date(s.started) : null;
    facts($("facts"), [
      ["Version", s.version],
      ["Up", duration(s.uptime_seconds), up ? "since " + up.toISOString() + " (" + local(up) + ")" : ""],
      ["Connections", s.connections],
      ["Workers", s.workers],
      ["Jobs", s.jobs],
      ["Running", s.running],
      ["Functions", s.functions],
      ["Schedules", s.schedules],
      ["Memory (RSS)", size(s.rss_bytes)],
      ["Journal", s.journal ? size(s.journal.bytes) : "none", s.journal ? s.journal.jobs + " jobs held" : "no --data-dir"],
      ["Last fsync", s.journal ? ms(s.journal.last_fsync_us) : "—", s.journal ? s.journal.fsyncs + " fsyncs" : "no --data-dir"],
      ["Failed (kept)", s.failed.total, "failed jobs kept for retry; see Jobs"],
    ].concat(s.leader ? [["Leader", s.leader, "the cluster's leader"]] : [])
      .concat(s.draining ? [["State", "draining"]] : []));
    chart(s.rates);
  }

  function chart(r) {
    $("slot").textContent = r.slot_seconds;
    const svg = $("rates");
    const n = r.submitted.length;
    const W = 610, H = 120, per = W / 61;
    let max = 1;
    for (let i = 0; i < n; i++) max = Math.max(max, r.submitted[i], r.completed[i], r.failed[i]);
    const frag = document.createDocumentFragment();
    const start = r.last_slot_start ? new Date(r.last_slot_start).getTime() : Date.now();
    const kinds = ["submitted", "completed", "failed"];
    for (let i = 0; i < n; i++) {
      const g = document.createElementNS(SVG, "g");
      const x0 = W - (n - i) * per;
      const at = new Date(start - (n - 1 - i) * r.slot_seconds * 1000);
      const t = document.createElementNS(SVG, "title");
      t.textContent = local(at) + ": " + r.submitted[i] + " submitted, " + r.completed[i] +
        " completed, " + r.failed[i] + " failed" + (i === n - 1 ? " (so far)" : "");
      g.append(t);
      kinds.forEach((k, j) => {
        const v = r[k][i];
        const h = v ? Math.max(1, (v / max) * (H - 4)) : 0;
        const b = document.createElementNS(SVG, "rect");
        b.setAttribute("class", k);
        b.setAttribute("x", (x0 + 1 + j * (per - 2) / 3).toFixed(2));
        b.setAttribute("width", ((per - 2) / 3).toFixed(2));
        b.setAttribute("y", (H - h).toFixed(2));
        b.setAttribute("height", h.toFixed(2));
        g.append(b);
      });
      frag.append(g);
    }
    svg.replaceChildren(frag);
  }

  // Pause or resume a function's handouts (jobs are still accepted and queued).
  function pauseButton(name, paused) {
    const td = el("td", "actions");
    if (!canAct) return td;
    const word = paused ? "resume" : "pause";
    td.append(button(paused ? "Resume" : "Pause", word + " handing out " + name, (b) =>
      post("/ui/api/function", word + " " + name, b, "limit-note",
        (paused ? "Resumed " : "Paused ") + name + ".")));
    return td;
  }

  function renderLimits(li) {
    const rows = li.limits.map((x) => {
      const tr = el("tr");
      tr.append(
        cell(x.function),
        cell(x.limit === null ? "—" : x.limit, "n"),
        cell(x.running, "n"),
        cell(x.rate_count === null ? "—" : x.rate_count + " / " + duration(x.rate_window_ms / 1000)),
        cell(x.rate_count === null ? "—" : x.window, "n"),
        cell(x.paused ? "paused" : "—", x.paused ? "bad" : ""),
        cell(x.expire_ms === null ? "—" : duration(x.expire_ms / 1000), "n"),
        cell(x.held, x.held ? "n bad" : "n", "queued jobs the limits hold back now"),
        pauseButton(x.function, x.paused),
      );
      return tr;
    });
    fill($("limits").tBodies[0], rows, 9, "no function has a limit");
  }

  function renderFunctions(st, sv, li) {
    const paused = new Set(li.limits.filter((x) => x.paused).map((x) => x.function));
    const kept = new Map(sv.failed.functions.map((x) => [x.function, x.count]));
    const rows = st.functions.map((f) => {
      const tr = el("tr");
      const p = f.priority;
      tr.append(
        cell(f.name),
        cell(f.queued, "n", "high " + p.high + ", normal " + p.normal + ", low " + p.low),
        cell(f.running, "n"),
        cell(f.workers, "n"),
        cell(f.future, "n"),
        cell(f.counters.completed, "n"),
        cell(f.counters.failed + f.counters.exceptions, f.counters.failed + f.counters.exceptions ? "n bad" : "n",
          f.counters.failed + " failed, " + f.counters.exceptions + " exceptions, " + f.counters.retried + " retried"),
        cell(kept.get(f.name) || 0, kept.get(f.name) ? "n bad" : "n", "in the failed list, ready to retry"),
        pauseButton(f.name, paused.has(f.name)),
      );
      return tr;
    });
    fill($("functions").tBodies[0], rows, 9, "no functions yet");
  }

  async function overview() {
    const [st, sv, li] = await Promise.all([get("/status"), get("/ui/api/server"), get("/limits")]);
    const a = changed("status", st.text), b = changed("server", sv.text), c = changed("limits", li.text);
    if (a || b || c) renderFunctions(st.json, sv.json, li.json);
    if (c) renderLimits(li.json);
    if (b) renderServer(sv.json);
  }

  // ---- Schedules ----
  function outcomeClass(o) {
    if (!o) return "";
    return o === "complete" ? "ok" : "bad";
  }

  function scheduleButtons(s) {
    const td = el("td", "actions");
    if (!canAct) return td;
    const op = (word, label, title, done) => button(label, title + " " + s.id, (b) =>
      post("/ui/api/schedule", word + " " + s.id, b, "schedule-note", done));
    td.append(op("run", "Run now", "run now:", "Started a run of " + s.id + "."));
    td.append(s.paused
      ? op("resume", "Resume", "resume:", "Resumed " + s.id + ".")
      : op("pause", "Pause", "pause:", "Paused " + s.id + "."));
    const skip = op("skip", "Skip next", "skip the next run of", "The next run of " + s.id + " will be skipped.");
    skip.disabled = s.skip_next || s.paused;
    td.append(skip);
    return td;
  }

  // The last outcome, a strip of the last runs (one coloured mark each, outcome and duration
  // on hover) and the last error, in one cell.
  function outcomeCell(s, last) {
    const td = cell(s.last_outcome === null ? "—" : s.last_outcome, outcomeClass(s.last_outcome),
      s.last_outcome === null ? "" : s.last_outcome + last + (s.last_run_manual ? " (run by hand)" : ""));
    const runs = s.recent_runs || [];
    if (runs.length) {
      const strip = el("span", "strip");
      for (const r of runs) {
        const at = new Date(r.started || r.scheduled);
        const m = el("span", "mark " + outcomeClass(r.outcome), "\u25A0");
        m.title = local(at) + ": " + r.outcome + (r.duration_ms === null ? "" : " after " + r.duration_ms + " ms") +
          (r.manual ? " (run by hand)" : "");
        strip.append(m);
      }
      td.append(" ", strip);
    }
    if (s.last_error) td.append(el("div", "error", s.last_error));
    return td;
  }

  async function schedules() {
    const r = await get("/schedules");
    const table = $("schedule-list");
    // Relative times ("in 5 s") move even when the data does not, so the table is redrawn
    // each time, except while a button in it has the focus and nothing changed.
    if (!changed("schedules", r.text) && table.contains(document.activeElement)) return;
    const rows = r.json.schedules.map((s) => {
      const tr = el("tr");
      const last = s.last_duration_ms === null ? "" : " after " + s.last_duration_ms + " ms";
      const state = s.paused ? "paused" : s.skip_next ? "skips next" : "active";
      tr.append(
        cell(s.id),
        cell(s.function),
        cell(s.says || s.spec, null, s.spec),
        cell(state, s.paused ? "bad" : ""),
        s.paused ? cell("— (paused)") : timeCell(s.next_run),
        timeCell(s.last_run),
        outcomeCell(s, last),
        cell(s.runs, "n"),
        cell(s.failures, s.failures ? "n bad" : "n"),
        cell(s.skips, "n", "runs skipped (overlap, or skipped by hand)"),
        scheduleButtons(s),
      );
      return tr;
    });
    fill(table.tBodies[0], rows, 11, "no schedules (start with --schedules FILE)");
  }

  // ---- Workers ----
  // Each running job: its handle and function, for how long (the server's count, so the
  // viewer's clock does not matter), since when on hover.
  function runningCell(w) {
    if (!w.jobs.length) return cell("idle", "empty");
    const td = el("td");
    for (const j of w.jobs) {
      const d = el("div", "job");
      const since = new Date(j.since);
      d.title = j.function + ", since " + local(since) + " (" + j.since + ")";
      d.append(el("span", null, j.handle), " ", el("span", "age", "for " + duration(Math.floor(j.running_ms / 1000))));
      td.append(d);
    }
    return td;
  }

  async function workers() {
    const r = await get("/workers");
    // Ages move every second even when nothing else does: redrawn each time.
    const rows = r.json.workers.map((w) => {
      const tr = el("tr");
      tr.append(
        cell(w.fd, "n"),
        cell(w.ip),
        cell(w.identity || "—", null, "who the server's access list knows it as"),
        cell(w.client_id),
        cell(w.functions.join(", ")),
        runningCell(w),
      );
      return tr;
    });
    fill($("worker-list").tBodies[0], rows, 6, "no workers connected");
  }

  // ---- Jobs ----
  function renderJob(r) {
    const j = r.json;
    if (!j.known) {
      facts($("job"), [["Handle", j.handle], ["State", "not known (finished, or never here)"]]);
      return;
    }
    const pairs = [
      ["Handle", j.handle], ["Function", j.function], ["Unique", j.unique],
      ["State", j.state], ["Priority", j.priority], ["Background", j.background ? "yes" : "no"],
      ["Progress", j.denominator ? j.numerator + " / " + j.denominator : "—"],
      ["Retries", j.retries], ["Waiting clients", j.clients],
    ];
    if (j.due) {
      const d = new Date(j.due);
      pairs.push(["Due", local(d) + " (" + relative(d) + ")", j.due]);
    }
    facts($("job"), pairs);
  }

  // An action: a POST with a custom header, which no page of another origin can send (see
  // src/http/console/action.rs). The answer goes to the view's note line.
  async function post(path, body, button, note, done) {
    button.disabled = true;
    try {
      const r = await fetch(path, {
        method: "POST", cache: "no-store", body: body,
        headers: { "X-Gearwheel-Console": "1", "Content-Type": "text/plain" },
      });
      let why = r.ok ? "" : (await r.text()).trim();
      // The failed-job operations answer in JSON.
      try { why = JSON.parse(why).error || why; } catch (e) { /* text */ }
      if (r.status === 403) why = "Not allowed: " + why;
      $(note).textContent = r.ok ? done : why;
    } catch (e) {
      $(note).textContent = String(e);
    }
    lastBody = {};
    tick();
  }

  function button(label, title, onClick) {
    const b = el("button", null, label);
    b.type = "button";
    b.title = title;
    b.addEventListener("click", () => onClick(b));
    return b;
  }

  // The newest failed jobs: error text and a workload preview, Retry and Drop on each row.
  function renderFailed(r) {
    const list = r.json;
    $("failed-count").textContent = "(" + list.total + (list.total > list.jobs.length ? ", newest " + list.jobs.length + " shown" : "") + ")";
    const rows = list.jobs.map((x) => {
      const tr = el("tr");
      const act = el("td", "actions");
      if (canAct) {
        act.append(
          button("Retry", "retry failed job " + x.handle, (b) =>
            post("/ui/api/retry", x.handle, b, "failed-note", "Queued " + x.handle + " again.")),
          button("Drop", "drop failed job " + x.handle, (b) =>
            post("/ui/api/drop", x.handle, b, "failed-note", "Dropped " + x.handle + ".")));
      }
      const cut = (n, shown) => n > new TextEncoder().encode(shown).length ? " …(" + size(n) + ")" : "";
      tr.append(
        timeCell(x.last_failure),
        cell(x.function),
        cell(x.handle, null, "unique: " + x.unique + (x.entry ? ", schedule entry " + x.entry : "")),
        cell(x.attempts, "n"),
        cell(x.error + cut(x.error_bytes, x.error), "error"),
        cell(x.workload + cut(x.workload_bytes, x.workload), "preview"),
        act,
      );
      return tr;
    });
    fill($("failed-list").tBodies[0], rows, 7, "no failed jobs");
  }

  async function jobs() {
    const work = [get("/ui/api/future"), get("/ui/api/failed")];
    if (lookedUp) work.push(get("/jobs/" + encodeURIComponent(lookedUp)));
    const [f, fl, j] = await Promise.all(work);
    if (j) renderJob(j);
    const failedTable = $("failed-list");
    if (changed("failed", fl.text) || !failedTable.contains(document.activeElement)) renderFailed(fl);
    const table = $("future-list");
    // Keep a focused button where it is unless the list changed.
    if (!changed("future", f.text) && table.contains(document.activeElement)) return;
    $("future-count").textContent = "(" + f.json.total + (f.json.total > f.json.jobs.length ? ", first " + f.json.jobs.length + " shown" : "") + ")";
    const rows = f.json.jobs.map((x) => {
      const tr = el("tr");
      const act = el("td", "actions");
      if (canAct) {
        act.append(button("Cancel", "cancel job " + x.handle, (b) =>
          post("/ui/api/cancel", x.handle, b, "note", "Cancelled " + x.handle + ".")));
      }
      tr.append(timeCell(x.due), cell(x.function), cell(x.handle), cell(x.unique), act);
      return tr;
    });
    fill(table.tBodies[0], rows, 5, "no future jobs");
  }

  const RENDER = { overview, schedules, workers, jobs };

  // One request at a time, the next only after the answer: a viewer never queues work on
  // the server, however slow its network.
  async function tick() {
    if (inflight) {
      again = true;
      return;
    }
    clearTimeout(timer);
    timer = null;
    if (document.hidden) return;
    inflight = true;
    const live = $("live");
    const denied = $("denied");
    try {
      await RENDER[view]();
      live.textContent = "live";
      live.className = "ok";
      live.title = "updated " + new Date().toLocaleTimeString();
      denied.hidden = true;
    } catch (e) {
      if (e instanceof Denied) {
        live.textContent = "not allowed";
        denied.textContent = "This server does not let you see this view (403: " + e.message +
          "). Under --acl, the console's views need the status operation and its buttons admin.";
        denied.hidden = false;
      } else {
        live.textContent = "no answer; retrying";
      }
      live.className = "down";
      live.title = String(e);
    } finally {
      inflight = false;
    }
    if (again) {
      again = false;
      tick();
    } else if (!document.hidden) {
      timer = setTimeout(tick, POLL_MS);
    }
  }

  function show() {
    const want = location.hash.replace("#", "");
    view = VIEWS.includes(want) ? want : "overview";
    for (const v of VIEWS) {
      $(v).hidden = v !== view;
      const a = $("nav-" + v);
      if (v === view) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    lastBody = {};
    tick();
  }

  window.addEventListener("hashchange", show);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) tick(); });
  $("lookup").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const h = $("handle").value.trim();
    lookedUp = h || null;
    if (!h) $("job").replaceChildren();
    tick();
  });
  get("/ui/api/server").then((r) => {
    canAct = r.json.actions === true;
    $("version").textContent = "gearwheel " + r.json.version;
    lastBody = {};
    show();
  }, () => show());
})();
