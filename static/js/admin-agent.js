// The agent form in the admin: the model name follows the endpoint, and the figures beside the
// threshold (and "what this threshold would do") follow what the admin types. Every figure comes from
// the server (the functions the runtime uses); this file only asks and puts the answer in place.
"use strict";

// The admin puts a form's scripts in <head>: start once the form exists.
function startAgentForm() {
  const field = (name) => document.getElementById("id_" + name);
  const TYPED = ["endpoint", "model_name", "context_window", "summary_threshold", "summary_pinned_token_limit"];

  function typedParams() {
    const params = new URLSearchParams();
    for (const name of TYPED) {
      const input = field(name);
      if (input) params.set(name, input.value);
    }
    return params;
  }

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    let body = {};
    try {
      body = await response.json();
    } catch (error) {
      body = { code: "bad_response", message: response.status + " " + response.statusText };
    }
    return { ok: response.ok, body };
  }

  function showError(box, message) {
    const note = document.createElement("p");
    note.className = "errornote live-error";
    note.textContent = message;
    box.replaceChildren(note);
  }

  // --- figures beside the threshold, and the retune panel -------------------------------------------
  const budget = document.getElementById("agent-budget");
  const retune = document.getElementById("agent-retune");
  let sequence = 0;
  let timer = null;

  async function refresh() {
    const mine = ++sequence;
    const params = typedParams();
    if (budget) {
      if (budget.dataset.agent) params.set("agent", budget.dataset.agent);
      const { ok, body } = await getJSON(budget.dataset.url + "?" + params);
      if (mine !== sequence) return;
      if (ok) budget.innerHTML = body.html;
      else showError(budget, body.message);
    }
    if (retune) {
      params.delete("agent");
      const { ok, body } = await getJSON(retune.dataset.url + "?" + params);
      if (mine !== sequence) return;
      if (ok) retune.innerHTML = body.html;
      else showError(retune, body.message);
    }
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 250);
  }

  for (const name of TYPED) {
    const input = field(name);
    if (input) {
      input.addEventListener("input", later);
      input.addEventListener("change", later);
    }
  }

  // --- the model name follows the endpoint -----------------------------------------------------------
  const endpoint = field("endpoint");
  const model = field("model_name");
  const options = document.getElementById("model-name-options");
  const button = document.getElementById("model-list-button");
  const status = document.getElementById("model-list-status");
  if (!endpoint || !model || !options || !button || !status) return;

  function offer(names) {
    options.replaceChildren(
      ...[...new Set(names.filter(Boolean))].map((name) => {
        const option = document.createElement("option");
        option.value = name;
        return option;
      })
    );
  }

  async function listModels({ refreshList = false, pickDefault = false } = {}) {
    const id = endpoint.value;
    button.hidden = !id;
    if (!id) {
      offer([]);
      status.textContent = "";
      status.classList.remove("model-list-error");
      if (pickDefault) model.value = "";
      later();
      return;
    }
    status.textContent = "…";
    const params = new URLSearchParams({ endpoint: id });
    if (refreshList) params.set("refresh", "1");
    const { ok, body } = await getJSON(button.dataset.url + "?" + params);
    if (endpoint.value !== id) return; // another endpoint was picked meanwhile
    const listed = ok ? body.models : [];
    offer([body.default_model, ...listed]);
    status.textContent = body.message || "";
    status.classList.toggle("model-list-error", !ok);
    if (pickDefault && (body.default_model || !listed.includes(model.value))) {
      // The endpoint's default; with none, its only model when it serves one (else the admin names one).
      model.value = body.default_model || (listed.length === 1 ? listed[0] : "");
    }
    later();
  }

  endpoint.addEventListener("change", () => listModels({ pickDefault: true }));
  button.addEventListener("click", () => listModels({ refreshList: true }));
  if (endpoint.value) listModels();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startAgentForm);
else startAgentForm();
