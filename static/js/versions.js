// Edit, regenerate and the version switcher (‹ 1/2 ›) of the thread page. Earlier versions are
// rendered in the page (hidden panes); switching is local, sending goes to the JSON API.
(function () {
  "use strict";
  const root = document.getElementById("thread");
  const transcript = document.getElementById("transcript");
  if (!root || !transcript) return;

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    const match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = {};
    try {
      data = await response.json();
    } catch (_err) {
      data = {};
    }
    return { ok: response.ok, status: response.status, data };
  }

  // An idempotency key per attempt: a resent request (a retry after a lost answer, a double click)
  // names the same attempt, so the server makes one version and one run. A new one after success.
  function newRequestId() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
    const bytes = window.crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function requestIdOf(element) {
    if (!element.dataset.requestId) element.dataset.requestId = newRequestId();
    return element.dataset.requestId;
  }

  // --- the switcher: show version n of a turn in place of the current one ---------------------------
  function showVersion(item, switcher, number) {
    const current = Number(switcher.dataset.current);
    const old = number !== current;
    switcher.dataset.shown = String(number);
    switcher.querySelector(".version-label").textContent = `${number}/${switcher.dataset.total}`;
    item.classList.toggle("showing-version", old);
    for (const child of item.children) {
      if (child.classList.contains("message-meta")) continue;
      if (child.classList.contains("version-pane")) {
        child.hidden = child.dataset.version !== String(number);
      } else if (old && !child.hidden) {
        child.hidden = true;
        child.classList.add("hidden-by-version");
      } else if (!old && child.classList.contains("hidden-by-version")) {
        child.hidden = false;
        child.classList.remove("hidden-by-version");
      }
    }
    // The rest of the current version's turn (its other rows) steps aside while an earlier one shows.
    const run = switcher.dataset.run;
    for (const row of transcript.querySelectorAll(`li.message[data-run="${run}"]`)) {
      if (row !== item && Number(row.dataset.seq) > Number(item.dataset.seq)) row.classList.toggle("version-hidden", old);
    }
    switcher.querySelector(".version-prev").disabled = number <= 1;
    switcher.querySelector(".version-next").disabled = number >= Number(switcher.dataset.total);
  }

  for (const switcher of transcript.querySelectorAll(".versions")) {
    showVersion(switcher.closest("li.message"), switcher, Number(switcher.dataset.current));
  }

  // --- regenerate: only the last reply of the transcript offers it ----------------------------------
  function refreshRegenerate() {
    const rows = transcript.querySelectorAll("li.message");
    const last = rows[rows.length - 1];
    for (const button of transcript.querySelectorAll(".regenerate")) {
      button.hidden = !last || !last.contains(button);
    }
    // "Regenerate with another agent" sits beside the last reply's Regenerate, when there is one.
    const template = document.getElementById("regenerate-with-template");
    if (!template) return;
    const anchor = last && last.querySelector(".regenerate");
    // Adding or removing the control changes the last reply's height after thread.js has scrolled to
    // the latest message: a reader who was at the bottom stays there (the reply not under the composer).
    const scroller = document.scrollingElement || document.documentElement;
    const wasAtBottom = window.innerHeight + window.scrollY >= scroller.scrollHeight - 80;
    let changed = false;
    for (const other of transcript.querySelectorAll(".regenerate-with")) {
      if (!anchor || !last.contains(other)) {
        other.remove();
        changed = true;
      }
    }
    if (anchor && !last.querySelector(".regenerate-with")) {
      anchor.after(template.content.cloneNode(true));
      changed = true;
    }
    if (changed && wasAtBottom) window.scrollTo(0, scroller.scrollHeight);
  }
  refreshRegenerate();
  new MutationObserver(refreshRegenerate).observe(transcript, { childList: true });

  function showError(anchor, text) {
    let error = anchor.parentElement.querySelector(".version-error");
    if (!error) {
      error = document.createElement("span");
      error.className = "version-error small notice";
      error.setAttribute("role", "alert");
      anchor.after(error);
    }
    error.textContent = text;
  }

  document.addEventListener("click", async (event) => {
    const step = event.target.closest(".version-prev, .version-next");
    if (step) {
      const switcher = step.closest(".versions");
      const delta = step.classList.contains("version-next") ? 1 : -1;
      const number = Math.min(Math.max(Number(switcher.dataset.shown) + delta, 1), Number(switcher.dataset.total));
      showVersion(step.closest("li.message"), switcher, number);
      return;
    }
    const open = event.target.closest(".edit-open");
    if (open) {
      const form = open.closest("li.message").querySelector("form.edit-message");
      form.hidden = false;
      const box = form.querySelector("textarea");
      box.focus();
      box.setSelectionRange(box.value.length, box.value.length);
      return;
    }
    const cancel = event.target.closest(".edit-cancel");
    if (cancel) {
      cancel.closest("form.edit-message").hidden = true;
      return;
    }
    const withAgent = event.target.closest(".regenerate-with-go");
    if (withAgent && !withAgent.disabled) {
      const holder = withAgent.closest(".regenerate-with");
      withAgent.disabled = true;
      try {
        const body = { request_id: requestIdOf(withAgent), agent: holder.querySelector("select").value };
        const result = await post(holder.dataset.regenerateUrl, body);
        if (result.ok) {
          window.location.reload();
          return;
        }
        showError(withAgent, result.data.message || `HTTP ${result.status}`);
      } catch (_err) {
        showError(withAgent, root.dataset.msgOffline);
      }
      withAgent.disabled = false;
      return;
    }
    const regenerate = event.target.closest(".regenerate");
    if (regenerate && !regenerate.disabled) {
      regenerate.disabled = true;
      try {
        const result = await post(regenerate.dataset.regenerateUrl, { request_id: requestIdOf(regenerate) });
        if (result.ok) {
          window.location.reload();
          return;
        }
        showError(regenerate, result.data.message || `HTTP ${result.status}`);
      } catch (_err) {
        showError(regenerate, root.dataset.msgOffline);
      }
      regenerate.disabled = false;
    }
  });

  document.addEventListener("input", (event) => {
    const form = event.target.closest && event.target.closest("form.edit-message");
    if (form) delete form.dataset.requestId; // another text is another attempt
  });

  document.addEventListener("submit", async (event) => {
    const form = event.target.closest("form.edit-message");
    if (!form) return;
    event.preventDefault();
    const error = form.querySelector(".edit-error");
    const button = form.querySelector("button[type=submit]");
    error.hidden = true;
    button.disabled = true;
    try {
      const result = await post(form.dataset.editUrl, {
        content: form.querySelector("textarea").value,
        request_id: requestIdOf(form),
      });
      if (result.ok) {
        window.location.reload();
        return;
      }
      error.textContent = result.data.message || `HTTP ${result.status}`;
    } catch (_err) {
      error.textContent = root.dataset.msgOffline;
    }
    error.hidden = false;
    button.disabled = false;
  });
})();
