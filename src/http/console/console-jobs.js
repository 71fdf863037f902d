// gearwheel console: the Jobs view (one function's queued, running and future jobs, a page at
// a time, with Cancel; the future jobs of every function), the Failed view (filtered by
// function and schedule entry, Retry and Drop per job and for the whole filter) and a job's
// own page (a run of a schedule entry is a job: its times, outcome, error, output, live while
// it runs, and Retry). Uses the helpers of console.js (window.GW); values are inserted as text.
"use strict";

(function (GW) {
  const { $, el, cell, link, jobHash, timeCell, utc, local, relative, duration, size, cut, fill, facts, get, changed, post, button } = GW;

  function query(params) {
    const q = new URLSearchParams();
    for (const k in params) if (params[k] !== "" && params[k] !== null && params[k] !== undefined) q.set(k, params[k]);
    return q.toString();
  }

  // ---- Jobs ----
  const STATES = ["queued", "running", "future"];
  const PAGE = 50;
  let functionNames = "";

  function jobsRoute() {
    const p = GW.route.params;
    const state = STATES.includes(p.get("state")) ? p.get("state") : "queued";
    return { function: p.get("function") || "", state: state, offset: Math.max(0, parseInt(p.get("offset"), 10) || 0) };
  }

  function go(r) {
    location.hash = "#jobs?" + query({ function: r.function, state: r.state, offset: r.offset || "" });
  }

  // The function picker: every function /status knows, with its jobs in all. Rebuilt only
  // when the names change (an open list would close), its counts updated in place.
  function renderPicker(st, r) {
    const sel = $("pick-function");
    const names = st.functions.map((f) => f.name).join("\u0000") + "\u0001" + r.function;
    if (names !== functionNames) {
      functionNames = names;
      const opts = st.functions.map((f) => {
        const o = el("option");
        o.value = f.name;
        return o;
      });
      if (!st.functions.some((f) => f.name === r.function)) {
        const o = el("option", null, r.function ? r.function + " (not known)" : "choose a function");
        o.value = r.function;
        opts.unshift(o);
      }
      sel.replaceChildren(...opts);
      sel.value = r.function;
    }
    const byName = new Map(st.functions.map((f) => [f.name, f]));
    for (const o of sel.options) {
      const f = byName.get(o.value);
      if (f) o.textContent = f.name + " (" + f.total + ")";
    }
    const f = st.functions.find((x) => x.name === r.function);
    for (const s of STATES) {
      const b = $("state-" + s);
      const n = f ? (s === "queued" ? f.queued : f[s]) : 0;
      b.textContent = s[0].toUpperCase() + s.slice(1) + " (" + n + ")";
      b.setAttribute("aria-pressed", String(s === r.state));
    }
  }

  // The age of a row: a running job's time on its worker, a future one's due time, a queued
  // one's time since it was submitted and its place in the queue.
  function ageCell(j, state, place) {
    if (state === "running") {
      return cell("for " + duration(Math.floor(j.running_ms / 1000)), "time", "since " + local(new Date(j.since)) + " (" + j.since + ")");
    }
    if (state === "future") return timeCell(j.due);
    return cell(duration(Math.floor(j.age_ms / 1000)) + " old, #" + place, "time",
      "submitted " + local(new Date(j.submitted)) + " (" + j.submitted + "); #" + place + " in the order workers get them: high, normal, low, oldest first");
  }

  function renderJobs(r, page) {
    const tbody = $("job-list").tBodies[0];
    if (!page) {
      fill(tbody, [], 7, r.function ? "no such function" : "choose a function");
      $("page-at").textContent = "";
      $("page-prev").disabled = $("page-next").disabled = true;
      return;
    }
    const rows = page.jobs.map((j, i) => {
      const tr = el("tr");
      const h = el("td");
      h.append(link(j.handle, jobHash(j.handle)));
      const act = el("td", "actions");
      if (GW.canAct && r.state !== "running") {
        act.append(button("Cancel", "cancel job " + j.handle, (b) =>
          post("/ui/api/cancel", j.handle, b, "jobs-note", "Cancelled " + j.handle + ".")));
      }
      tr.append(
        h,
        cell(j.unique),
        cell(j.priority),
        ageCell(j, r.state, page.offset + i + 1),
        cell(j.worker || "—"),
        cell(j.workload + cut(j.workload_bytes, j.workload), "preview"),
        act,
      );
      return tr;
    });
    fill(tbody, rows, 7, "no " + r.state + " jobs of " + r.function);
    const last = Math.min(page.total, page.offset + page.jobs.length);
    $("page-at").textContent = page.total ? (page.offset + 1) + "–" + last + " of " + page.total : "0 of 0";
    $("page-prev").disabled = page.offset === 0;
    $("page-next").disabled = last >= page.total;
  }

  function renderFuture(f) {
    $("future-count").textContent = "(" + f.total + (f.total > f.jobs.length ? ", first " + f.jobs.length + " shown" : "") + ")";
    const rows = f.jobs.map((x) => {
      const tr = el("tr");
      const act = el("td", "actions");
      if (GW.canAct) {
        act.append(button("Cancel", "cancel job " + x.handle, (b) =>
          post("/ui/api/cancel", x.handle, b, "note", "Cancelled " + x.handle + ".")));
      }
      const h = el("td");
      h.append(link(x.handle, jobHash(x.handle)));
      tr.append(timeCell(x.due), cell(x.function), h, cell(x.unique), act);
      return tr;
    });
    fill($("future-list").tBodies[0], rows, 5, "no future jobs");
  }

  GW.views.jobs = async function () {
    const r = jobsRoute();
    const st = await get("/status");
    if (!r.function) {
      // The first function with jobs, else the first.
      const f = st.json.functions.find((x) => x.total > 0) || st.json.functions[0];
      if (f) r.function = f.name;
    }
    const work = [get("/ui/api/future")];
    if (r.function) work.push(get("/ui/api/jobs?" + query({ function: r.function, state: r.state, offset: r.offset, limit: PAGE })));
    const [f, page] = await Promise.all(work);
    renderPicker(st.json, r);
    const table = $("job-list");
    if (changed("jobs", page ? page.text : "") || !table.contains(document.activeElement)) {
      renderJobs(r, page && page.status === 200 ? page.json : null);
    }
    if (changed("future", f.text) || !$("future-list").contains(document.activeElement)) renderFuture(f.json);
  };

  GW.onShow.jobs = () => { functionNames = ""; };

  $("pick-function").addEventListener("change", (ev) => go({ function: ev.target.value, state: jobsRoute().state, offset: 0 }));
  for (const s of STATES) {
    $("state-" + s).addEventListener("click", () => go({ function: $("pick-function").value, state: s, offset: 0 }));
  }
  $("page-prev").addEventListener("click", () => {
    const r = jobsRoute();
    go({ function: $("pick-function").value, state: r.state, offset: Math.max(0, r.offset - PAGE) });
  });
  $("page-next").addEventListener("click", () => {
    const r = jobsRoute();
    go({ function: $("pick-function").value, state: r.state, offset: r.offset + PAGE });
  });
  $("pick").addEventListener("submit", (ev) => ev.preventDefault());
  $("lookup").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const h = $("handle").value.trim();
    if (h) location.hash = jobHash(h);
  });

  // ---- Failed ----
  let failedOptions = "";

  function failedRoute() {
    const p = GW.route.params;
    return { function: p.get("function") || "", entry: p.get("entry") || "" };
  }

  function options(sel, values, chosen) {
    const opts = [el("option", null, "any")];
    opts[0].value = "";
    for (const v of values) {
      const o = el("option", null, v);
      o.value = v;
      opts.push(o);
    }
    if (chosen && !values.includes(chosen)) {
      const o = el("option", null, chosen);
      o.value = chosen;
      opts.push(o);
    }
    sel.replaceChildren(...opts);
    sel.value = chosen;
  }

  // What the filter names, in words, for the bulk buttons and their notes.
  function filterWords(f) {
    const parts = [];
    if (f.function) parts.push(" of " + f.function);
    if (f.entry) parts.push(" of schedule entry " + f.entry);
    return parts.join("");
  }

  // Retry all / Drop all of the filter: a first press arms the button, a second within 5 s
  // acts (one press of many jobs is easy to regret).
  function bulk(label, path, f, n, done) {
    const words = filterWords(f);
    const b = button(label + " " + n, label.toLowerCase() + " " + n + " failed jobs" + words, () => {
      if (b.dataset.armed !== "1") {
        b.dataset.armed = "1";
        b.textContent = label + " " + n + "? Press again";
        setTimeout(() => { b.dataset.armed = ""; b.textContent = label + " " + n; }, 5000);
        return;
      }
      post(path, query(f), b, "failed-note", done);
    });
    return b;
  }

  function renderFailed(list, f) {
    $("failed-count").textContent = "(" + list.total + (list.kept !== undefined && list.kept !== list.total ? " of " + list.kept + " kept" : "") +
      (list.total > list.jobs.length ? ", newest " + list.jobs.length + " shown" : "") + ")";
    const bulkSpan = $("bulk");
    if (GW.canAct && list.total > 0) {
      if (bulkSpan.dataset.state !== list.total + "|" + query(f)) {
        bulkSpan.dataset.state = list.total + "|" + query(f);
        bulkSpan.replaceChildren(
          bulk("Retry all", "/ui/api/retry-all", f, list.total, (j) =>
            "Retried " + (j.jobs || []).length + " failed jobs" + filterWords(f) + (j.full ? "; " + j.full + " stay listed (queue full)" : "") + "."),
          bulk("Drop all", "/ui/api/drop-all", f, list.total, (j) =>
            "Dropped " + j.dropped + " failed jobs" + filterWords(f) + "."));
      }
    } else {
      bulkSpan.dataset.state = "";
      bulkSpan.replaceChildren();
    }
    const rows = list.jobs.map((x) => {
      const tr = el("tr");
      const act = el("td", "actions");
      if (GW.canAct) {
        act.append(
          button("Retry", "retry failed job " + x.handle, (b) =>
            post("/ui/api/retry", x.handle, b, "failed-note", (j) =>
              ["Retried " + x.handle + " as new job ", link(j.job, jobHash(j.job)), "."])),
          button("Drop", "drop failed job " + x.handle, (b) =>
            post("/ui/api/drop", x.handle, b, "failed-note", "Dropped " + x.handle + ".")));
      }
      const h = el("td");
      h.title = "unique: " + x.unique + (x.entry ? ", schedule entry " + x.entry : "");
      h.append(link(x.handle, jobHash(x.handle)));
      tr.append(
        timeCell(x.last_failure),
        cell(x.function),
        h,
        cell(x.attempts, "n"),
        cell(x.error + cut(x.error_bytes, x.error), "error"),
        cell(x.workload + cut(x.workload_bytes, x.workload), "preview"),
        act,
      );
      return tr;
    });
    fill($("failed-list").tBodies[0], rows, 7, "no failed jobs" + filterWords(f));
  }

  GW.views.failed = async function () {
    const f = failedRoute();
    const work = [get("/ui/api/failed?" + query(f))];
    // The filter's choices: the functions with failed jobs, the schedule entries.
    if (!failedOptions) work.push(get("/ui/api/server"), get("/schedules"));
    const [fl, sv, sc] = await Promise.all(work);
    if (sv && sc) {
      failedOptions = "loaded";
      options($("filter-function"), sv.json.failed.functions.map((x) => x.function), f.function);
      options($("filter-entry"), sc.json.schedules.map((s) => s.id), f.entry);
    }
    if (changed("failed", fl.text) || !$("failed-list").contains(document.activeElement)) renderFailed(fl.json, f);
  };

  GW.onShow.failed = () => { failedOptions = ""; $("bulk").dataset.state = ""; };

  for (const id of ["filter-function", "filter-entry"]) {
    $(id).addEventListener("change", () => {
      location.hash = "#failed?" + query({ function: $("filter-function").value, entry: $("filter-entry").value });
    });
  }
  $("failed-filter").addEventListener("submit", (ev) => ev.preventDefault());

  // ---- A job's page ----
  let outputAt = null;

  function has(j, k) {
    return j && j[k] !== undefined;
  }

  function timeValue(iso) {
    if (!iso) return null;
    const d = new Date(iso);
    return isNaN(d) ? iso : local(d) + " (" + relative(d) + ")";
  }

  // The facts the server gave: a live job's, a kept one's, or the failed list's record.
  function jobFacts(j, failed) {
    const pairs = [];
    const fn = j && j.function ? j.function : failed && failed.function;
    if (j && j.known) {
      pairs.push(["State", j.state], ["Function", link(fn, "#jobs?" + new URLSearchParams({ function: fn, state: j.state }))],
        ["Unique", j.unique], ["Priority", j.priority], ["Background", j.background ? "yes" : "no"],
        ["Progress", j.denominator ? j.numerator + " / " + j.denominator : "—"],
        ["Retries", j.retries], ["Waiting clients", j.clients]);
      if (j.due) pairs.push(["Due", timeValue(j.due), utc(new Date(j.due))]);
    } else if (j && j.kept) {
      pairs.push(["State", j.state], ["Function", fn]);
    } else if (failed) {
      pairs.push(["State", "failed (kept for retry)"], ["Function", fn], ["Unique", failed.unique],
        ["First failure", timeValue(failed.first_failure), utc(new Date(failed.first_failure))],
        ["Last failure", timeValue(failed.last_failure), utc(new Date(failed.last_failure))]);
    }
    if (has(j, "started")) pairs.push(["Started", timeValue(j.started), j.started ? utc(new Date(j.started)) : ""]);
    if (has(j, "ended")) pairs.push(["Ended", timeValue(j.ended), j.ended ? utc(new Date(j.ended)) : ""]);
    if (has(j, "duration_ms") && j.duration_ms !== null) pairs.push(["Duration", j.duration_ms < 1000 ? j.duration_ms + " ms" : duration(Math.round(j.duration_ms / 1000))]);
    else if (j && j.state === "running" && j.started) pairs.push(["Running for", duration(Math.max(0, Math.round((Date.now() - new Date(j.started)) / 1000)))]);
    if (has(j, "worker")) pairs.push(["Worker", j.worker]);
    const attempts = has(j, "attempts") ? j.attempts : failed ? failed.attempts : undefined;
    if (attempts !== undefined) pairs.push(["Attempts", attempts]);
    const entry = has(j, "entry") ? j.entry : failed ? failed.entry : null;
    if (entry) pairs.push(["Schedule entry", link(entry, "#schedules")]);
    if (has(j, "scheduled") && j.scheduled) pairs.push(["Scheduled for", timeValue(j.scheduled), utc(new Date(j.scheduled))]);
    if (has(j, "after")) pairs.push(["After", afterChain(j.after, j.handle), "the parents' runs this @after run was made from"]);
    const error = has(j, "error") ? j.error : failed ? failed.error + cut(failed.error_bytes, failed.error) : null;
    if (error) pairs.push(["Error", error, null, true]);
    if (failed && !has(j, "result")) pairs.push(["Workload", failed.workload + cut(failed.workload_bytes, failed.workload), null, true]);
    return pairs;
  }

  // An @after run's chain: each parent's run (a link to its page) -> this run.
  function afterChain(parents, handle) {
    const span = el("span", "chain");
    parents.forEach((p, i) => {
      if (i) span.append(" + ");
      const a = link(p.id + " " + p.handle, jobHash(p.handle), p.outcome + ", scheduled " + utc(new Date(p.scheduled)));
      a.className = p.outcome === "complete" ? "ok" : "bad";
      span.append(a);
    });
    span.append(" \u2192 " + handle);
    return span;
  }

  // The kept output: fetched again only when its size moves (live while the job runs), the
  // view kept at the end when the reader is there.
  async function showOutput(j, handle) {
    const pre = $("job-output");
    const bytes = j ? j.output_bytes : undefined;
    if (bytes === undefined || bytes === null) {
      $("output-size").textContent = "";
      pre.textContent = "no output kept";
      pre.classList.add("empty");
      outputAt = null;
      return;
    }
    const mark = handle + "|" + bytes;
    if (outputAt === mark) return;
    const r = await fetch("/jobs/" + encodeURIComponent(handle) + "/output", { cache: "no-store" });
    if (!r.ok) {
      $("output-size").textContent = "";
      pre.textContent = "no output kept";
      pre.classList.add("empty");
      outputAt = mark;
      return;
    }
    const text = await r.text();
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    $("output-size").textContent = "(" + size(bytes) + (j.output_cut ? ", only the last part is kept" : "") +
      (j.state === "running" ? ", live" : "") + ")";
    pre.classList.toggle("empty", !text.length);
    pre.textContent = text.length ? (j.output_cut ? "…\n" : "") + text : "no output";
    if (atEnd) pre.scrollTop = pre.scrollHeight;
    outputAt = mark;
  }

  GW.views.job = async function () {
    const handle = GW.route.arg;
    $("job-handle").textContent = handle;
    if (!handle) {
      facts($("job"), [["Handle", "none given"]]);
      return;
    }
    const r = await get("/jobs/" + encodeURIComponent(handle));
    const j = r.json || {};
    let failed = null;
    if (!j.known && !(j.kept && j.state !== "failed" && j.state !== "exception")) {
      const fl = await get("/ui/api/failed?" + query({ handle: handle }));
      failed = fl.json && fl.json.jobs ? fl.json.jobs.find((x) => x.handle === handle) || null : null;
    }
    const key = r.text + "|" + (failed ? failed.last_failure : "");
    if (changed("job", key) || j.state === "running") {
      const pairs = jobFacts(j, failed);
      facts($("job"), pairs.length ? pairs : [["State", "not known: it ended and nothing of it is kept, or it was never here"]]);
      const result = has(j, "result") && j.result !== null;
      $("h-result").hidden = $("job-result").hidden = !result;
      $("job-result").textContent = result ? j.result : "";
      const acts = $("job-actions");
      if (!$("job-actions").contains(document.activeElement)) {
        acts.replaceChildren();
        if (GW.canAct && failed) {
          acts.append(button("Retry", "retry failed job " + handle, (b) =>
            post("/ui/api/retry", handle, b, "job-note", (x) => ["Retried " + handle + " as new job ", link(x.job, jobHash(x.job)), "."])));
        }
        if (GW.canAct && j.known && j.state !== "running") {
          acts.append(button("Cancel", "cancel job " + handle, (b) =>
            post("/ui/api/cancel", handle, b, "job-note", "Cancelled " + handle + ".")));
        }
      }
    }
    await showOutput(j.known || j.kept ? j : null, handle);
  };

  GW.onShow.job = () => {
    outputAt = null;
    $("job-note").textContent = "";
    $("job-output").textContent = "";
  };
})(window.GW);
