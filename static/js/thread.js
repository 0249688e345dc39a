// The thread page: commands over HTTP, events over the thread's WebSocket.
// Every event makes the page fetch the server-rendered fragment it affects, so what a reload shows and
// what a push shows come from the same templates. Only streamed tokens are written here directly.
(function () {
  "use strict";

  const root = document.getElementById("thread");
  if (!root) return;

  const $ = (id) => document.getElementById(id);
  const transcript = $("transcript");
  const stream = $("stream");
  const streamBody = $("stream-body");
  const socketStatus = $("socket-status");
  let compressing = false; // a compression is running (socket said "started")
  let compressPending = false; // our own compress request is in flight

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function fragments(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return Array.from(template.content.children);
  }

  // Run fn at most once at a time; a call during a run schedules exactly one more.
  function serialized(fn) {
    let running = null;
    let again = false;
    return function run() {
      if (running) {
        again = true;
        return running;
      }
      running = fn()
        .catch(() => {})
        .finally(() => {
          running = null;
          if (again) {
            again = false;
            run();
          }
        });
      return running;
    };
  }

  async function getHtml(url) {
    const response = await fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" });
    if (!response.ok) throw new Error(String(response.status));
    return response.text();
  }

  // --- transcript -------------------------------------------------------------------------------
  function lastSeq() {
    const items = transcript.querySelectorAll("[data-seq]");
    return items.length ? Number(items[items.length - 1].dataset.seq) : 0;
  }

  const syncMessages = serialized(async function () {
    const nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
    const html = await getHtml(`${root.dataset.messagesUrl}?after=${lastSeq()}`);
    for (const item of fragments(html)) {
      if (!item.id || document.getElementById(item.id)) continue;
      transcript.appendChild(item);
    }
    $("transcript-empty").hidden = transcript.children.length > 0;
    if (nearBottom) window.scrollTo(0, document.body.scrollHeight);
  });

  function clearStream() {
    streamBody.textContent = "";
    stream.hidden = true;
  }

  // --- state panel and run status -------------------------------------------------------------
  function applyButtonState() {
    const button = $("compress-button");
    if (!button) return;
    const panel = $("state-panel");
    const busy = panel && panel.dataset.busy === "true";
    button.disabled = busy || compressing || compressPending;
    button.setAttribute("aria-busy", compressing || compressPending ? "true" : "false");
  }

  const refreshState = serialized(async function () {
    const html = await getHtml(root.dataset.stateUrl);
    for (const fresh of fragments(html)) {
      const current = fresh.id && document.getElementById(fresh.id);
      if (!current) continue;
      // Keep a half-typed answer: the question it answers is still the same.
      const answer = current.querySelector("#answer-input");
      if (answer && answer.value && fresh.dataset.status === current.dataset.status) continue;
      const notice = current.querySelector("#compress-notice");
      current.replaceWith(fresh);
      const freshNotice = fresh.querySelector("#compress-notice");
      if (notice && freshNotice && !notice.hidden) {
        freshNotice.textContent = notice.textContent;
        freshNotice.hidden = false;
      }
    }
    applyButtonState();
  });

  async function showCompression(fields) {
    const params = new URLSearchParams();
    for (const key of ["status", "outcome", "level", "before_tokens", "after_tokens", "error", "reason", "file_path"]) {
      if (fields[key] !== undefined && fields[key] !== null) params.set(key, fields[key]);
    }
    if (fields.loss_report && typeof fields.loss_report === "object") {
      const loss = { ...fields.loss_report, lost_identifiers: (fields.loss_report.lost_identifiers || []).slice(0, 10) };
      params.set("loss_report", JSON.stringify(loss));
    }
    const html = await getHtml(`${root.dataset.compressionUrl}?${params}`);
    const fresh = fragments(html).find((el) => el.id === "compression-status");
    const current = $("compression-status");
    if (fresh && current) current.replaceWith(fresh);
  }

  function showNotice(text) {
    const notice = $("compress-notice");
    if (!notice) return;
    notice.textContent = text;
    notice.hidden = !text;
  }

  // --- the compress button: a preview first, then one request naming it, then reload the state ------
  const previewSlot = () => $("compress-preview-slot");

  function closePreview() {
    const slot = previewSlot();
    if (slot) slot.replaceChildren();
  }

  async function showPreview() {
    const slot = previewSlot();
    if (!slot) return;
    try {
      const response = await fetch(root.dataset.previewUrl, {
        headers: { "X-Requested-With": "fetch" },
        credentials: "same-origin",
      });
      slot.replaceChildren(...fragments(await response.text()));
      const panel = $("compress-preview");
      if (panel && panel.dataset.busy === "true") showNotice(root.dataset.msgBusy);
      const apply = $("compress-apply");
      if (apply && !apply.disabled) apply.focus();
    } catch (_err) {
      showNotice(root.dataset.msgOffline);
    }
  }

  async function compress(button, previewId) {
    if (compressPending || button.disabled) return;
    compressPending = true;
    button.disabled = true;
    showNotice("");
    applyButtonState();
    let stale = false;
    try {
      const url = `${root.dataset.compressApiUrl}?preview_id=${encodeURIComponent(previewId)}`;
      const response = await fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: "{}",
      });
      let body = {};
      try {
        body = await response.json();
      } catch (_err) {
        body = {};
      }
      if (response.ok) {
        closePreview();
        await showCompression({ level: "summary", ...body, status: body.status || "completed" });
      } else if (response.status === 409 && body.code === "stale_preview") {
        stale = true;
        showNotice(root.dataset.msgStale);
      } else if (response.status === 409) {
        closePreview();
        showNotice(root.dataset.msgBusy);
      } else {
        closePreview();
        await showCompression({ status: "failed", error: body.message || `HTTP ${response.status}` });
      }
    } catch (_err) {
      showNotice(root.dataset.msgOffline);
    } finally {
      compressPending = false;
      compressing = false;
      await refreshState();
      if (stale) await showPreview(); // the thread changed: show what applying would do now
    }
  }

  document.addEventListener("click", (event) => {
    if (event.target.closest("#compress-button")) {
      const button = $("compress-button");
      if (button && !button.disabled && !compressPending) showPreview();
      return;
    }
    const apply = event.target.closest("#compress-apply");
    if (apply) {
      const panel = $("compress-preview");
      if (panel && panel.dataset.previewId) compress(apply, panel.dataset.previewId);
      return;
    }
    if (event.target.closest("#compress-cancel")) closePreview();
  });

  // --- pins: a pinned message is never summarized -----------------------------------------------
  function showPin(button, pinned) {
    button.setAttribute("aria-pressed", pinned ? "true" : "false");
    button.classList.toggle("pinned", pinned);
    button.textContent = pinned ? button.dataset.labelPinned : button.dataset.labelPin;
  }

  document.addEventListener("click", async (event) => {
    const button = event.target.closest(".pin-toggle");
    if (!button || button.disabled) return;
    const pinned = button.getAttribute("aria-pressed") === "true";
    const error = button.nextElementSibling;
    button.disabled = true;
    if (error) error.hidden = true;
    try {
      const response = await fetch(button.dataset.pinUrl, {
        method: pinned ? "DELETE" : "POST",
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken() },
      });
      let body = {};
      try {
        body = await response.json();
      } catch (_err) {
        body = {};
      }
      if (response.ok) {
        showPin(button, body.pinned);
      } else if (error) {
        error.textContent = body.message || `HTTP ${response.status}`;
        error.hidden = false;
      }
    } catch (_err) {
      if (error) {
        error.textContent = root.dataset.msgOffline;
        error.hidden = false;
      }
    } finally {
      button.disabled = false;
    }
  });

  // --- forms: composer and inline answers -------------------------------------------------------
  async function postForm(form, errorEl) {
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    if (errorEl) errorEl.textContent = "";
    try {
      const response = await fetch(form.action, {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-Requested-With": "fetch", "X-CSRFToken": csrfToken() },
        body: new FormData(form),
      });
      if (!response.ok) {
        if (errorEl) errorEl.textContent = await response.text();
        return false;
      }
      form.reset();
      return true;
    } catch (_err) {
      if (errorEl) errorEl.textContent = root.dataset.msgOffline;
      return false;
    } finally {
      if (button) button.disabled = false;
      syncMessages();
      refreshState();
    }
  }

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.id === "composer") {
      event.preventDefault();
      postForm(form, $("composer-error"));
    } else if (form.id === "answer-form") {
      event.preventDefault();
      postForm(form, null);
    }
  });

  $("composer-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });

  // --- live events ------------------------------------------------------------------------------
  const handlers = {
    "run.token"(event) {
      if (!event.text) return;
      stream.hidden = false;
      streamBody.textContent += event.text;
    },
    "message.created"(event) {
      if (event.message && event.message.role === "assistant") clearStream();
      syncMessages();
    },
    "run.status"(event) {
      if (event.status !== "running") clearStream();
      if (event.status !== "running" && event.status !== "queued") compressing = false;
      refreshState();
      if (event.status === "succeeded" || event.status === "failed") syncMessages();
    },
    compression(event) {
      compressing = event.status === "started";
      applyButtonState();
      showCompression(event).catch(() => {});
      if (!compressing) refreshState();
    },
    state() {
      refreshState();
    },
    "message.pin"(event) {
      const item = document.getElementById(`message-${event.seq}`);
      const button = item && item.querySelector(".pin-toggle");
      if (button) showPin(button, Boolean(event.pinned));
    },
  };

  let attempts = 0;
  let everOpen = false;
  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${window.location.host}${root.dataset.socketPath}`);
    socketStatus.dataset.state = "connecting";
    socket.addEventListener("open", () => {
      attempts = 0;
      socketStatus.dataset.state = "open";
      socketStatus.title = "";
      // Catch up on anything that happened while we were away.
      if (everOpen) {
        syncMessages();
        refreshState();
      }
      everOpen = true;
    });
    socket.addEventListener("message", (message) => {
      let event;
      try {
        event = JSON.parse(message.data);
      } catch (_err) {
        return;
      }
      const handler = handlers[event.type];
      if (handler) handler(event);
    });
    socket.addEventListener("close", (close) => {
      socketStatus.dataset.state = "closed";
      socketStatus.title = root.dataset.msgOffline;
      if (close.code === 4403) return; // not allowed: retrying cannot help
      // Full-jitter backoff, capped at 15 s.
      const delay = Math.random() * Math.min(15000, 500 * 2 ** attempts);
      attempts += 1;
      window.setTimeout(connect, delay);
    });
  }

  applyButtonState();
  connect();
})();
