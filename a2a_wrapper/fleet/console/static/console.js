// The console page: the registry's state over one EventSource (no polling), rendered with textContent only
// (what agents send is data, never markup), decisions posted with the session's CSRF token.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const OPTIONS = [
    ["allow_once", "Allow once"],
    ["allow_context", "Allow for this context"],
    ["deny", "Deny"],
  ];
  const pending = new Set(); // "agent/id" of the decisions under way
  let agents = [];
  let auditSeen = "";
  let auditTimer = null;

  const $ = (id) => document.getElementById(id);
  // how long a decision took, as a person reads it: 0.02 ms, 405 ms, 2.3 s
  const waited = (ms) => (ms < 1 ? ms.toFixed(2) + " ms" : ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(1) + " s");

  function text(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "object") return Array.isArray(value) ? value.map(text).join(", ") : JSON.stringify(value);
    return String(value);
  }

  function cell(value, className, title) {
    const td = document.createElement("td");
    td.textContent = text(value);
    if (className) td.className = className;
    if (title) td.title = title;
    return td;
  }

  function tableRow(cells, data) {
    const tr = document.createElement("tr");
    for (const [name, value] of Object.entries(data || {})) tr.dataset[name] = value;
    tr.append(...cells);
    return tr;
  }

  function fill(tableId, rows, emptyId) {
    $(tableId).tBodies[0].replaceChildren(...rows);
    if (emptyId) $(emptyId).hidden = rows.length > 0;
    $(tableId).hidden = rows.length === 0 && Boolean(emptyId);
  }

  function clock(iso) {
    const at = Date.parse(iso);
    return Number.isNaN(at) ? text(iso) : new Date(at).toLocaleTimeString();
  }

  function short(id) {
    return id ? text(id).slice(0, 8) : "";
  }

  function health(agent) {
    const h = agent.last_health;
    if (!h) return "not checked yet";
    if (h.healthy) return "healthy (" + clock(h.time) + ")";
    return (h.error || "HTTP " + text(h.status_code)) + " (" + clock(h.time) + ")";
  }

  function renderAgents() {
    const rows = agents.map((agent) =>
      tableRow(
        [
          cell(agent.name),
          cell(agent.state, "state state-" + text(agent.state)),
          cell(agent.backend),
          cell(agent.model),
          cell(agent.restarts === null || agent.restarts === undefined ? "—" : agent.restarts),
          cell(health(agent)),
          cell(agent.console, agent.console === "ok" ? "ok" : "problem"),
        ],
        { agent: agent.name, state: text(agent.state) },
      ),
    );
    fill("agents", rows);
    const select = $("audit-agent");
    const chosen = select.value;
    const names = agents.map((agent) => agent.name);
    const options = [new Option("every agent", "")].concat(names.map((name) => new Option(name, name)));
    select.replaceChildren(...options);
    select.value = names.includes(chosen) ? chosen : "";
  }

  function renderTasks() {
    const rows = [];
    for (const agent of agents) {
      for (const task of agent.tasks || []) {
        rows.push(
          tableRow(
            [
              cell(agent.name),
              cell(task.state, "state state-" + text(task.state)),
              cell(task.caller || "(anonymous)"),
              cell(short(task.contextId), "id", text(task.contextId)),
              cell(task.activity),
              cell(clock(task.startedAt)),
            ],
            { taskId: text(task.taskId), agent: agent.name, state: text(task.state) },
          ),
        );
      }
    }
    fill("tasks", rows, "no-tasks");
  }

  function target(approval) {
    if (approval.type === "question") return approval.text;
    const tool = approval.tool || {};
    return tool.command || tool.url || text(tool.paths);
  }

  function left(expiresAt) {
    const seconds = Math.max(0, Math.round((Date.parse(expiresAt) - Date.now()) / 1000));
    if (Number.isNaN(seconds)) return "";
    return seconds === 0 ? "expiring" : Math.floor(seconds / 60) + ":" + String(seconds % 60).padStart(2, "0");
  }

  function button(label, data, onClick, disabled, title) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    for (const [name, value] of Object.entries(data)) b.dataset[name] = value;
    b.disabled = disabled;
    if (title) b.title = title;
    b.addEventListener("click", onClick);
    return b;
  }

  function decideCell(agent, approval) {
    const td = document.createElement("td");
    td.className = "decide";
    const key = agent.name + "/" + approval.id;
    const busy = pending.has(key);
    const closed = !(agent.approvers || []).includes("console");
    const why = closed ? "this agent's approvals are answered by its callers only" : "";
    if (approval.type === "question") {
      for (const option of approval.options || []) {
        const answer = () => decide(agent.name, approval, { text: option.id }, option.label);
        td.append(button(text(option.label), { answer: text(option.id) }, answer, busy || closed, why));
      }
      return td;
    }
    const offered = (approval.options || []).map((option) => option.id);
    for (const [option, label] of OPTIONS) {
      if (offered.length && !offered.includes(option)) continue;
      const answer = () => decide(agent.name, approval, { option: option }, label);
      td.append(button(label, { option: option }, answer, busy || closed, why));
    }
    return td;
  }

  function renderApprovals() {
    const rows = [];
    for (const agent of agents) {
      for (const approval of agent.approvals || []) {
        const tool = approval.tool || {};
        const timer = cell(left(approval.expiresAt), "time-left");
        timer.dataset.expires = text(approval.expiresAt);
        rows.push(
          tableRow(
            [
              cell(agent.name),
              cell(approval.caller || "(anonymous)"),
              cell(approval.type === "question" ? "question" : tool.name || tool.kind),
              cell(approval.class),
              cell(target(approval), "target"),
              cell(approval.rule),
              cell(approval.reason),
              timer,
              decideCell(agent, approval),
            ],
            { approvalId: text(approval.id), agent: agent.name, type: text(approval.type || "approval") },
          ),
        );
      }
    }
    fill("approvals", rows, "no-approvals");
    $("approval-count").textContent = rows.length ? "(" + rows.length + ")" : "";
  }

  function tick() {
    for (const timer of document.querySelectorAll("[data-expires]")) timer.textContent = left(timer.dataset.expires);
  }

  function outcome(agentName, approval, status, body, label) {
    const item = document.createElement("li");
    item.dataset.decidedId = text(approval.id);
    item.dataset.status = String(status);
    const what = agentName + ": " + target(approval) + " — ";
    if (status === 200) {
      item.className = "ok";
      item.textContent = what + label + " (" + text(body.decidedBy) + ")";
    } else {
      item.className = "problem";
      item.textContent = what + "not answered: " + text(body.error || "HTTP " + status);
    }
    $("decisions").prepend(item);
    while ($("decisions").children.length > 20) $("decisions").lastElementChild.remove();
  }

  async function decide(agentName, approval, answer, label) {
    const key = agentName + "/" + approval.id;
    pending.add(key);
    renderApprovals();
    let status = 0;
    let body = {};
    try {
      const url = "/console/api/approvals/" + encodeURIComponent(agentName) + "/" + encodeURIComponent(approval.id);
      const response = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify(answer),
        credentials: "same-origin",
      });
      status = response.status;
      body = await response.json().catch(() => ({ error: "HTTP " + response.status }));
    } catch (error) {
      body = { error: "the registry did not answer (" + error + ")" };
    } finally {
      pending.delete(key);
    }
    outcome(agentName, approval, status, body, label);
    renderApprovals();
    scheduleAudit(0);
  }

  async function loadAudit() {
    const query = new URLSearchParams(new FormData($("audit-filters")));
    for (const [name, value] of [...query.entries()]) if (!value) query.delete(name);
    let body;
    try {
      const response = await fetch("/console/api/audit?" + query, { credentials: "same-origin" });
      body = await response.json();
      if (!response.ok) body = { entries: [], errors: [{ agent: "registry", error: body.error }] };
    } catch (error) {
      body = { entries: [], errors: [{ agent: "registry", error: String(error) }] };
    }
    const rows = (body.entries || []).map((entry) =>
      tableRow(
        [
          cell(clock(entry.time), "", text(entry.time)),
          cell(entry.agent),
          cell(entry.caller),
          cell(entry.tool),
          cell(entry.class),
          cell(entry.target, "target"),
          cell(entry.decision, "decision decision-" + text(entry.decision)),
          cell(entry.rule),
          cell(entry.decidedBy),
          cell(typeof entry.waitMs === "number" ? waited(entry.waitMs) : ""),
        ],
        { decision: text(entry.decision), agent: text(entry.agent) },
      ),
    );
    fill("audit", rows, "no-audit");
    $("audit-errors").textContent = (body.errors || []).map((e) => e.agent + ": " + e.error).join("; ");
  }

  function scheduleAudit(delay) {
    clearTimeout(auditTimer);
    auditTimer = setTimeout(loadAudit, delay);
  }

  function render(state) {
    agents = state.agents || [];
    renderAgents();
    renderTasks();
    renderApprovals();
    // The audit changes when a decision is made: when what waits, or the tasks, changed.
    const seen = JSON.stringify(
      agents.map((a) => [a.name, (a.approvals || []).map((x) => x.id), (a.tasks || []).map((t) => [t.taskId, t.state])]),
    );
    if (seen !== auditSeen) {
      auditSeen = seen;
      scheduleAudit(300);
    }
  }

  function connect() {
    const connection = $("connection");
    const source = new EventSource("/console/api/events");
    source.addEventListener("open", () => {
      connection.dataset.state = "live";
      connection.textContent = "live";
    });
    source.addEventListener("state", (event) => render(JSON.parse(event.data)));
    source.addEventListener("error", () => {
      const closed = source.readyState === EventSource.CLOSED;
      connection.dataset.state = closed ? "closed" : "reconnecting";
      connection.textContent = closed ? "disconnected: reload the page (signed out?)" : "reconnecting…";
    });
  }

  $("audit-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    loadAudit();
  });
  setInterval(tick, 1000);
  connect();
})();
