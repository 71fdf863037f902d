// gearwheel console: the shared helpers, the polling loop, the routes of the page (the part
// of the URL after #) and the Overview, Schedules and Workers views; console-jobs.js adds the
// Jobs, Failed and job views. Polls the server's JSON endpoints about once a second, for the
// view on screen only, one request at a time; every value from the server is inserted as text
// (textContent / createTextNode), never as HTML.
"use strict";

window.GW = (function () {
  const POLL_MS = 800;
  // How often a view other than the overview (which reads it every tick) asks again for
  // the server's role in the header.
  const ROLE_MS = 5000;
  const NAV = ["overview", "schedules", "workers", "jobs", "failed", "audit"];
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const GW = { $, views: {}, canAct: false, route: { view: "overview", arg: "", params: new URLSearchParams() } };
  let timer = null;
  let inflight = false;
  let roleAt = 0;
  let again = false;
  let lastBody = {};

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

  // A link inside the page (a view's route), its text as text.
  function link(text, hash, title) {
    const a = el("a", null, text);
    a.href = hash;
    if (title) a.title = title;
    return a;
  }

  function jobHash(handle) {
    return "#job/" + encodeURIComponent(handle);
  }

  // A time cell: the viewer's zone, UTC on hover; on one line (td.time does not wrap).
  function timeCell(iso, cls) {
    if (!iso) return cell("—", cls);
    const d = new Date(iso);
    if (isNaN(d)) return cell(iso, cls);
    return cell(local(d) + " (" + relative(d) + ")", "time" + (cls ? " " + cls : ""), utc(d));
  }

  function utc(d) {
    return d.toISOString().replace(".000Z", "Z") + " UTC";
  }

  // Short: the time alone today, the day and month otherwise, the year when it is not this
  // year's (a long date wrapped onto several lines in a table cell).
  function local(d) {
    const now = new Date();
    const o = { hour: "2-digit", minute: "2-digit", second: "2-digit" };
    if (d.toDateString() !== now.toDateString()) {
      o.month = "short";
      o.day = "numeric";
      if (d.getFullYear() !== now.getFullYear()) o.year = "numeric";
    }
    return d.toLocaleString(undefined, o);
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

  // " …(2.9 KiB)" when a preview is shorter than the whole.
  function cut(n, shown) {
    return n > new TextEncoder().encode(shown).length ? " …(" + size(n) + ")" : "";
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
      const back = [...tbody.querySelectorAll("button")].find((b) => b.title === keep);
      if (back) back.focus();
    }
  }

  // Fact cards (overview) or a property list (a job): [label, value, hover, wide].
  function facts(dl, pairs) {
    const frag = document.createDocumentFragment();
    for (const [k, v, title, wide] of pairs) {
      const d = el("div", wide ? "wide" : null);
      const dd = el("dd");
      if (v instanceof Node) dd.append(v);
      else dd.textContent = v === null || v === undefined ? "—" : String(v);
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
    let json = null;
    try { json = JSON.parse(text); } catch (e) { if (r.ok) throw e; }
    return { status: r.status, text: text, json: json };
  }

  // Render only what changed: a table rebuilt every second would steal hover and selection.
  function changed(key, text) {
    if (lastBody[key] === text) return false;
    lastBody[key] = text;
    return true;
  }

  // An action: a POST with a custom header, which no page of another origin can send (see
  // src/http/console/action.rs). The answer goes to the view's note line: `done` is the text,
  // or makes it (text or nodes) from the answer's JSON.
  async function post(path, body, button, note, done) {
    if (button) button.disabled = true;
    const line = $(note);
    try {
      const r = await fetch(path, {
        method: "POST", cache: "no-store", body: body,
        headers: { "X-Gearwheel-Console": "1", "Content-Type": "text/plain" },
      });
      const text = (await r.text()).trim();
      let json = null;
      try { json = JSON.parse(text); } catch (e) { /* text */ }
      if (r.ok) {
        const said = typeof done === "function" ? done(json || {}) : done;
        line.replaceChildren(...(Array.isArray(said) ? said : [said]));
      } else {
        // The failed-job operations answer in JSON.
        const why = (json && json.error) || text;
        line.textContent = r.status === 403 ? "Not allowed: " + why : why;
      }
    } catch (e) {
      line.textContent = String(e);
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

  function ms(us) {
    return us === null || us === undefined ? "—" : us < 1000 ? us + " µs" : (us / 1000).toFixed(us < 10000 ? 2 : 1) + " ms";
  }

  // The header on every view: this server's role in its cluster and who leads, or
  // `standalone` without --etcd.
  function renderRole(s) {
    roleAt = Date.now();
    const r = $("role");
    const role = s.role || "standalone";
    r.textContent = role === "standalone" ? role : role + " · leader " + (s.leader || "unknown");
    r.className = "role " + role;
  }

  // ---- Overview ----
  let lastRates = null;

  function renderServer(s) {
    $("version").textContent = "gearwheel " + s.version;
    renderRole(s);
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
      ["Failed (kept)", link(s.failed.total, "#failed", "failed jobs kept for retry")],
    ].concat(s.leader ? [["Leader", s.leader, "the cluster's leader"]] : [])
      .concat(s.draining ? [["State", "draining"]] : []));
    lastRates = s.rates;
    chart(s.rates);
  }

  // The smallest 1, 2 or 5 times a power of ten at or above `v`: the count axis's top.
  function niceTop(v) {
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(v, 1))));
    for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Drawn at the element's own width in pixels, so that the axes' labels are not stretched:
  // counts on the left (0, half, top), the slots' local times below, every 2 minutes.
  function chart(r) {
    if (!r) return;
    $("slot").textContent = r.slot_seconds;
    const box = $("rates");
    const W = Math.max(200, Math.round(box.getBoundingClientRect().width) || 610);
    const H = 150, left = 34, bottom = 20, top = 8;
    const plotW = W - left - 4, plotH = H - top - bottom;
    box.setAttribute("viewBox", "0 0 " + W + " " + H);
    const n = r.submitted.length;
    const slots = Math.max(n, 60);
    const per = plotW / slots;
    let max = 0;
    for (let i = 0; i < n; i++) max = Math.max(max, r.submitted[i], r.completed[i], r.failed[i]);
    const topCount = niceTop(max);
    const frag = document.createDocumentFragment();
    for (const f of [0, 0.5, 1]) {
      const y = top + plotH - f * plotH;
      frag.append(svg("line", { class: "grid", x1: left, x2: W - 4, y1: y.toFixed(1), y2: y.toFixed(1) }));
      const v = f * topCount;
      frag.append(svg("text", { class: "axis", x: left - 4, y: (y + 4).toFixed(1), "text-anchor": "end" },
        Number.isInteger(v) ? String(v) : v.toFixed(1)));
    }
    const start = r.last_slot_start ? new Date(r.last_slot_start).getTime() : Date.now();
    const kinds = ["submitted", "completed", "failed"];
    const every = Math.max(1, Math.round(120 / r.slot_seconds));
    for (let i = 0; i < n; i++) {
      const x0 = left + plotW - (n - i) * per;
      const at = new Date(start - (n - 1 - i) * r.slot_seconds * 1000);
      const g = svg("g", {});
      g.append(svg("title", {}, local(at) + ": " + r.submitted[i] + " submitted, " + r.completed[i] +
        " completed, " + r.failed[i] + " failed" + (i === n - 1 ? " (so far)" : "")));
      kinds.forEach((k, j) => {
        const v = r[k][i];
        const h = v ? Math.max(1, (v / topCount) * plotH) : 0;
        g.append(svg("rect", {
          class: k, x: (x0 + 1 + j * (per - 2) / 3).toFixed(2), width: Math.max(0.5, (per - 2) / 3).toFixed(2),
          y: (top + plotH - h).toFixed(2), height: h.toFixed(2),
        }));
      });
      frag.append(g);
    }
    // The time axis spans the whole window, slots not yet seen (a young server) included;
    // its marks fall on whole minutes.
    const slotMs = r.slot_seconds * 1000;
    for (let age = Math.round((start % (every * slotMs)) / slotMs); age < slots; age += every) {
      const at = new Date(start - age * r.slot_seconds * 1000);
      const x = left + plotW - (age + 1) * per + per / 2;
      frag.append(svg("line", { class: "tick", x1: x.toFixed(1), x2: x.toFixed(1), y1: top + plotH, y2: top + plotH + 3 }));
      if (x > left + 20 && x < W - 20) {
        const label = at.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
        frag.append(svg("text", { class: "axis", x: x.toFixed(1), y: H - 5, "text-anchor": "middle" }, label));
      }
    }
    frag.append(svg("line", { class: "axis-line", x1: left, x2: W - 4, y1: top + plotH, y2: top + plotH }));
    box.replaceChildren(frag);
  }

  // Pause or resume a function's handouts (jobs are still accepted and queued).
  function pauseButton(name, paused) {
    const td = el("td", "actions");
    if (!GW.canAct) return td;
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
      const name = el("td");
      name.append(link(f.name, "#jobs?" + new URLSearchParams({ function: f.name }), "the jobs of " + f.name));
      const k = kept.get(f.name) || 0;
      const keptCell = el("td", k ? "n bad" : "n");
      keptCell.title = "in the failed list, ready to retry";
      keptCell.append(k ? link(k, "#failed?" + new URLSearchParams({ function: f.name })) : "0");
      tr.append(
        name,
        cell(f.queued, "n", "high " + p.high + ", normal " + p.normal + ", low " + p.low),
        cell(f.running, "n"),
        cell(f.workers, "n"),
        cell(f.future, "n"),
        cell(f.counters.completed, "n"),
        cell(f.counters.failed + f.counters.exceptions, f.counters.failed + f.counters.exceptions ? "n bad" : "n",
          f.counters.failed + " failed, " + f.counters.exceptions + " exceptions, " + f.counters.retried + " retried"),
        keptCell,
        pauseButton(f.name, paused.has(f.name)),
      );
      return tr;
    });
    fill($("functions").tBodies[0], rows, 9, "no functions yet");
  }

  GW.views.overview = async function () {
    const [st, sv, li] = await Promise.all([get("/status"), get("/ui/api/server"), get("/limits")]);
    const a = changed("status", st.text), b = changed("server", sv.text), c = changed("limits", li.text);
    if (a || b || c) renderFunctions(st.json, sv.json, li.json);
    if (c) renderLimits(li.json);
    if (b) renderServer(sv.json);
  };

  // ---- Schedules ----
  function outcomeClass(o) {
    if (!o) return "";
    return o === "complete" ? "ok" : "bad";
  }

  function scheduleButtons(s) {
    const td = el("td", "actions");
    if (!GW.canAct) return td;
    const op = (word, label, title, done) => button(label, title + " " + s.id, (b) =>
      post("/ui/api/schedule", word + " " + s.id, b, "schedule-note", done));
    td.append(op("run", "Run now", "run now:", (j) => {
      const jobs = j.jobs || [];
      return jobs.length
        ? ["Started a run of " + s.id + ": ", link(jobs[0], jobHash(jobs[0])), "."]
        : "Started a run of " + s.id + ".";
    }));
    td.append(s.paused
      ? op("resume", "Resume", "resume:", "Resumed " + s.id + ".")
      : op("pause", "Pause", "pause:", "Paused " + s.id + "."));
    const skip = op("skip", "Skip next", "skip the next run of", "The next run of " + s.id + " will be skipped.");
    skip.disabled = s.skip_next || s.paused;
    td.append(skip, backfillButton(s));
    return td;
  }

  // Backfill: FROM and TO asked for, a dry run shows how many runs and from when to when,
  // and only a confirmation queues them (the admin line `backfill schedule`).
  function backfillButton(s) {
    return button("Backfill", "run past times of " + s.id + " again", async (b) => {
      const from = prompt("Backfill " + s.id + " from (RFC 3339 time, or a date for its whole day in UTC):");
      if (!from) return;
      const to = prompt("Backfill " + s.id + " to (included; RFC 3339 time or a date):", from);
      if (!to) return;
      const body = s.id + " " + from.trim() + " " + to.trim();
      const r = await fetch("/ui/api/backfill", {
        method: "POST", cache: "no-store", body: body + " dry-run",
        headers: { "X-Gearwheel-Console": "1", "Content-Type": "text/plain" },
      });
      const text = (await r.text()).trim();
      let json = {};
      try { json = JSON.parse(text); } catch (e) { /* text */ }
      if (!r.ok) {
        $("schedule-note").textContent = json.error || text;
        return;
      }
      const times = json.times || [];
      if (!times.length) {
        $("schedule-note").textContent = "No time of " + s.id + " falls in that range.";
        return;
      }
      if (!confirm("Run " + times.length + " backfill runs of " + s.id + ", from " + times[0] +
        " to " + times[times.length - 1] + "?")) return;
      post("/ui/api/backfill", body, b, "schedule-note",
        (j) => "Backfill of " + s.id + ": " + (j.runs || 0) + " runs, oldest first.");
    });
  }

  // The last outcome, a strip of the last runs (one coloured mark each, outcome and duration
  // on hover, a link to the run's page when the server names its job) and the last error.
  function outcomeCell(s, last) {
    const td = cell(s.last_outcome === null ? "—" : s.last_outcome, outcomeClass(s.last_outcome),
      s.last_outcome === null ? "" : s.last_outcome + last + (s.last_run_manual ? " (run by hand)" : ""));
    const runs = s.recent_runs || [];
    if (runs.length) {
      const strip = el("span", "strip");
      for (const r of runs) {
        const at = new Date(r.started || r.scheduled);
        const m = r.handle ? link("\u25A0", jobHash(r.handle)) : el("span", null, "\u25A0");
        m.className = "mark " + outcomeClass(r.outcome);
        m.title = local(at) + ": " + r.outcome + (r.duration_ms === null ? "" : " after " + r.duration_ms + " ms") +
          (r.backfill ? " (backfill)" : r.manual ? " (run by hand)" : "") + (r.handle ? ", job " + r.handle : "") +
          (r.output_bytes ? ", " + size(r.output_bytes) + " of output" : "");
        strip.append(m);
      }
      td.append(" ", strip);
    }
    if (s.last_error) td.append(el("div", "error", s.last_error));
    return td;
  }

  async function scheduleTable() {
    const r = await get("/schedules");
    const table = $("schedule-list");
    // Relative times ("in 5 s") move even when the data does not, so the table is redrawn
    // each time, except while a button or link in it has the focus and nothing changed.
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

  // Webhook targets (`/webhooks`: scheme, host and port only), their alerts waiting and
  // their last try; redrawn each time, as its times are relative.
  async function webhookTable() {
    const r = await get("/webhooks");
    const rows = r.json.webhooks.map((h) => {
      const tr = el("tr");
      const bad = h.outcome && h.outcome !== "delivered";
      tr.append(
        cell(h.url),
        cell(h.queued, "n"),
        timeCell(h.last_try),
        cell(h.outcome || "—", bad ? "bad" : h.outcome ? "ok" : ""),
      );
      return tr;
    });
    $("webhook-count").textContent =
      "(" + r.json.delivered + " delivered, " + r.json.given_up + " given up since start)";
    fill($("webhook-list").tBodies[0], rows, 4, "no webhook alert since start");
  }

  GW.views.schedules = async function () {
    await Promise.all([scheduleTable(), webhookTable()]);
  };

  // ---- Workers ----
  // Each running job: its handle (a link to its page) and function, for how long (the
  // server's count, so the viewer's clock does not matter), since when on hover.
  function runningCell(w) {
    if (!w.jobs.length) return cell("idle", "empty");
    const td = el("td");
    for (const j of w.jobs) {
      const d = el("div", "job");
      const since = new Date(j.since);
      d.title = j.function + ", since " + local(since) + " (" + j.since + ")";
      d.append(link(j.handle, jobHash(j.handle)), " ", el("span", "age", "for " + duration(Math.floor(j.running_ms / 1000))));
      td.append(d);
    }
    return td;
  }

  GW.views.workers = async function () {
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
  };

  // ---- Audit ----
  // Operators' actions, newest first; redrawn only when the trail changed.
  GW.views.audit = async function () {
    const r = await get("/ui/api/audit");
    if (!changed("audit", r.text)) return;
    $("audit-count").textContent = "(" + r.json.total + " kept)";
    const rows = r.json.actions.slice().reverse().map((a) => {
      const tr = el("tr");
      tr.append(
        timeCell(a.time),
        cell(a.identity),
        cell(a.peer),
        cell(a.command),
        cell(a.outcome, a.outcome.startsWith("OK") ? "ok" : "bad"),
      );
      return tr;
    });
    fill($("audit-list").tBodies[0], rows, 5, "no actions yet");
  };

  // ---- The loop and the routes ----
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
      await GW.views[GW.route.view]();
      if (Date.now() - roleAt > ROLE_MS) renderRole((await get("/ui/api/server")).json);
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

  // `#jobs?function=F&state=running`, `#job/HANDLE`: a view, its argument and parameters.
  // No section's id is a route, so a click in the navigation never scrolls the page.
  function parseRoute() {
    const h = location.hash.replace(/^#/, "");
    const q = h.indexOf("?");
    const path = q < 0 ? h : h.slice(0, q);
    const slash = path.indexOf("/");
    const view = slash < 0 ? path : path.slice(0, slash);
    let arg = "";
    try { arg = slash < 0 ? "" : decodeURIComponent(path.slice(slash + 1)); } catch (e) { arg = ""; }
    return {
      view: GW.views[view] ? view : "overview",
      arg: arg,
      params: new URLSearchParams(q < 0 ? "" : h.slice(q + 1)),
    };
  }

  function show() {
    const before = GW.route.view;
    GW.route = parseRoute();
    const view = GW.route.view;
    for (const v of Object.keys(GW.views)) {
      const section = $("view-" + v);
      if (section) section.hidden = v !== view;
    }
    for (const v of NAV) {
      const a = $("nav-" + v);
      if (v === view || (view === "job" && v === "jobs")) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    if (before !== view) window.scrollTo(0, 0);
    if (GW.onShow[view]) GW.onShow[view]();
    lastBody = {};
    tick();
  }

  Object.assign(GW, {
    el, cell, link, jobHash, timeCell, utc, local, relative, duration, size, cut, fill, facts,
    get, changed, post, button, tick, onShow: {},
    forget: () => { lastBody = {}; },
  });

  window.addEventListener("hashchange", show);
  let resized = null;
  window.addEventListener("resize", () => {
    clearTimeout(resized);
    resized = setTimeout(() => chart(lastRates), 100);
  });
  document.addEventListener("visibilitychange", () => { if (!document.hidden) tick(); });
  // After every script of the page has added its views.
  document.addEventListener("DOMContentLoaded", () => {
    get("/ui/api/server").then((r) => {
      GW.canAct = r.json.actions === true;
      $("version").textContent = "gearwheel " + r.json.version;
      renderRole(r.json);
      show();
    }, () => show());
  });
  return GW;
})();
