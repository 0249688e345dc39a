// The thread page: commands over HTTP, events over the thread's WebSocket.
// Every event makes the page fetch the server-rendered fragment it affects, so what a reload shows and
// what a push shows come from the same templates. Only streamed tokens are written here directly: as
// plain text, replaced by the rendered message when it is complete.
(function () {
  "use strict";

  const root = document.getElementById("thread");
  if (!root) return;

  const $ = (id) => document.getElementById(id);
  const transcript = $("transcript");
  const stream = $("stream");
  const streamBody = $("stream-body");
  const socketStatus = $("socket-status");
  const banner = $("connection-banner");
  const jumpButton = $("jump-latest");
  const composerError = $("composer-error");
  let compressing = false; // a compression is running (socket said "started")
  let compressPending = false; // our own compress request is in flight
  // Length of the streamed text in code points, as the server counts offsets.
  let streamLength = Array.from(streamBody.textContent).length;

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function fragments(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return Array.from(template.content.children);
  }

  // Swap a re-rendered fragment in, keeping what the reader opened (a summary, a long message) open:
  // a <details> keeps its state by id, else by its place among the fragment's <details>.
  function swap(current, fresh) {
    const was = Array.from(current.querySelectorAll("details"));
    const now = Array.from(fresh.querySelectorAll("details"));
    was.forEach((old, index) => {
      if (!old.open) return;
      const match = old.id ? now.find((d) => d.id === old.id) : now[index];
      if (match) match.open = true;
    });
    current.replaceWith(fresh);
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

  async function getResponse(url) {
    const response = await fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" });
    if (!response.ok) throw new Error(String(response.status));
    return response;
  }

  async function getHtml(url) {
    return (await getResponse(url)).text();
  }

  // --- scrolling: follow new content only when the reader is at the bottom ------------------------
  function atBottom() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  }

  function scrollToLatest() {
    window.scrollTo(0, document.documentElement.scrollHeight);
    jumpButton.hidden = true;
  }

  // Wrap a change of the transcript: keep following if the reader was at the bottom, else offer a jump.
  function following(change) {
    const wasAtBottom = atBottom();
    change();
    if (wasAtBottom) scrollToLatest();
    else jumpButton.hidden = false;
  }

  jumpButton.addEventListener("click", scrollToLatest);
  window.addEventListener("scroll", () => {
    if (!jumpButton.hidden && atBottom()) jumpButton.hidden = true;
  }, { passive: true });

  // --- transcript: reading order is run by run, then seq ---------------------------------------
  function orderKey(element) {
    if (element === stream) return [Number(stream.dataset.run) || 0, Infinity];
    return [Number(element.dataset.run) || 0, Number(element.dataset.seq) || 0];
  }

  function before(a, b) {
    return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  }

  function insertOrdered(item) {
    const key = orderKey(item);
    const next = Array.from(transcript.children).find((child) => {
      if (child === stream && stream.hidden) return false;
      return before(key, orderKey(child));
    });
    transcript.insertBefore(item, next || null);
  }

  function maxSeq() {
    let max = 0;
    for (const item of transcript.querySelectorAll("[data-seq]")) max = Math.max(max, Number(item.dataset.seq));
    return max;
  }

  const syncMessages = serialized(async function () {
    const html = await getHtml(`${root.dataset.messagesUrl}?after=${maxSeq()}`);
    const items = fragments(html).filter((item) => item.id && !document.getElementById(item.id));
    if (!items.length) return;
    following(() => {
      for (const item of items) {
        insertOrdered(item);
        decorate(item);
      }
      $("transcript-empty").hidden = true;
    });
    failureOnce();
  });

  // The last run's failure is shown once: in the status line, in the reader's language, with Retry.
  // Its transcript notice (the record, as stored) stays for later, once another run has followed.
  function failureOnce() {
    const status = $("run-status");
    const shownRun = status && status.dataset.status === "failed" ? status.dataset.run : null;
    for (const item of transcript.querySelectorAll(".message.role-system[data-run]")) {
      item.hidden = item.dataset.run === shownRun;
    }
  }

  // A long thread opens at its end: "Show earlier messages" loads the page before the first one shown,
  // keeping the reader's place (the page grows above what they are reading).
  async function loadEarlier(button) {
    button.disabled = true;
    const html = await getHtml(`${root.dataset.messagesUrl}?before=${button.dataset.before}`);
    const scroller = document.scrollingElement;
    const height = scroller.scrollHeight;
    for (const item of fragments(html)) {
      if (item.id === "transcript-earlier") {
        swap($("transcript-earlier"), item);
      } else if (item.id && !document.getElementById(item.id)) {
        insertOrdered(item);
        decorate(item);
      }
    }
    scroller.scrollTop += scroller.scrollHeight - height;
    failureOnce();
  }
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("#load-earlier");
    if (button && !button.disabled) loadEarlier(button).catch(() => (button.disabled = false));
  });

  // A run cancelled before it started was never sent ("cancelled"); one stopped midway was ("stopped").
  function markRun(runId, status) {
    for (const item of transcript.querySelectorAll(`.message.role-user[data-run="${runId}"]`)) {
      const current = item.dataset.runStatus;
      if (!current) continue;
      const started = current === "running" || current === "stopped";
      item.dataset.runStatus = status === "cancelled" && started ? "stopped" : status;
    }
  }

  // --- the streamed reply ----------------------------------------------------------------------
  function placeStream(runId) {
    stream.dataset.run = String(runId);
    stream.hidden = false;
    stream.setAttribute("aria-busy", "true");
    transcript.removeChild(stream);
    insertOrdered(stream);
  }

  // Whether a run's event concerns the reply on screen (events without a run id concern any).
  function streamOf(runId) {
    return !runId || String(runId) === stream.dataset.run;
  }

  // After a compression, results it saved get their "saved for the model" marker: re-render the
  // transcript items on the page and swap those that changed.
  const refreshTranscript = serialized(async function () {
    const first = transcript.querySelector("[data-seq]");
    if (!first) return;
    const html = await getHtml(`${root.dataset.messagesUrl}?after=${Number(first.dataset.seq) - 1}&boundary=1`);
    for (const fresh of fragments(html)) {
      const current = fresh.id && document.getElementById(fresh.id);
      if (current && current.outerHTML !== fresh.outerHTML) swap(current, fresh);
    }
  });

  function clearStream() {
    streamBody.textContent = "";
    streamLength = 0;
    stream.hidden = true;
    stream.removeAttribute("aria-busy");
  }

  function appendStream(text) {
    streamBody.textContent += text;
    streamLength += Array.from(text).length;
  }

  // The server buffers what it streamed; after a gap (missed events) the page takes it from there.
  const catchUpStream = serialized(async function () {
    const data = await (await getResponse(root.dataset.streamUrl)).json();
    if (!data.run_id || !data.text) return;
    following(() => {
      if (stream.dataset.run !== String(data.run_id) || stream.hidden) placeStream(data.run_id);
      streamBody.textContent = data.text;
      streamLength = Array.from(data.text).length;
    });
  });

  function onToken(event) {
    const runId = String(event.run_id);
    following(() => {
      if (stream.hidden || stream.dataset.run !== runId) {
        clearStream();
        placeStream(runId);
      }
      const offset = typeof event.offset === "number" ? event.offset : streamLength;
      if (offset === streamLength) appendStream(event.text);
      else if (offset < streamLength) appendStream(Array.from(event.text).slice(streamLength - offset).join(""));
      else catchUpStream(); // some pieces never arrived
    });
  }

  // --- copy buttons -----------------------------------------------------------------------------
  function decorate(scope) {
    for (const pre of scope.querySelectorAll(".message-body pre")) {
      if (pre.querySelector(".copy-code")) continue;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.textContent = root.dataset.msgCopyCode;
      pre.appendChild(button);
    }
  }

  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return;
    }
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }

  async function copyFrom(button, text) {
    const label = button.innerHTML;
    try {
      await copyText(text);
      button.textContent = root.dataset.msgCopied;
    } catch (_err) {
      return;
    }
    window.setTimeout(() => {
      button.innerHTML = label;
    }, 1500);
  }

  function codeText(pre) {
    const code = pre.querySelector("code");
    return (code || pre).textContent;
  }

  // --- state panel and run status -------------------------------------------------------------
  // "Compress context" and "Undo this summary" follow one busy rule.
  function applyButtonState() {
    const panel = $("state-panel");
    const busy = panel && panel.dataset.busy === "true";
    for (const button of [$("compress-button"), $("undo-button")]) {
      if (!button) continue;
      button.disabled = busy || compressing || compressPending;
      button.setAttribute("aria-busy", compressing || compressPending ? "true" : "false");
    }
  }

  // The state fragment holds every panel whose figures must agree (meter, hint, compression card,
  // memory panel, run status): they are rendered by one request, so they never contradict each other.
  const refreshState = serialized(async function () {
    const html = await getHtml(root.dataset.stateUrl);
    for (const fresh of fragments(html)) {
      const current = fresh.id && document.getElementById(fresh.id);
      if (!current) continue;
      // A compression announced over the socket is still running: keep its spinner until it ends.
      if (fresh.id === "compression-status" && compressing && fresh.dataset.status !== "started") continue;
      // Keep a half-typed answer: the question it answers is still the same.
      const answer = current.querySelector("#answer-input");
      if (answer && answer.value && fresh.dataset.status === current.dataset.status) continue;
      const notice = current.querySelector("#compress-notice");
      swap(current, fresh);
      const freshNotice = fresh.querySelector("#compress-notice");
      // A busy notice is stale once the thread is idle again; a kept one (throttled) is not.
      const keep = notice && notice.dataset.keep === "true";
      if (notice && freshNotice && !notice.hidden && (fresh.dataset.busy === "true" || keep)) {
        freshNotice.textContent = notice.textContent;
        freshNotice.hidden = false;
        freshNotice.dataset.keep = keep ? "true" : "false";
      }
    }
    applyButtonState();
    failureOnce();
  });

  // Only the transient states (started, a request that failed before reaching the server's records)
  // are rendered from the event's fields; everything else comes from the server's records.
  async function showCompression(fields) {
    const params = new URLSearchParams();
    const keys = ["status", "outcome", "level", "before_tokens", "after_tokens", "error", "reason", "file_path"];
    for (const key of [...keys, "job_id", "job_status"]) {
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

  function showCardNotice(text) {
    const notice = $("card-notice");
    if (!notice) return;
    notice.textContent = text;
    notice.hidden = !text;
  }

  // ``keep``: the notice survives the state refresh that follows (a throttled request: the thread is
  // idle, yet the reason still holds for a while).
  function showNotice(text, { keep = false } = {}) {
    const notice = $("compress-notice");
    if (!notice) return;
    notice.textContent = text;
    notice.hidden = !text;
    notice.dataset.keep = keep && text ? "true" : "false";
  }

  // --- the compress button: a preview first, then one request naming it, then reload the state ------
  const previewSlot = () => $("compress-preview-slot");

  function closePreview() {
    const slot = previewSlot();
    if (slot) slot.replaceChildren();
  }
  document.addEventListener("thread:close-preview", closePreview); // Esc (thread-layout.js)

  // ``refreshed``: the thread changed under the open preview; it is fetched again and says so, and
  // the focus stays where the reader left it.
  async function showPreview({ refreshed = false } = {}) {
    const slot = previewSlot();
    if (!slot) return;
    try {
      const response = await fetch(root.dataset.previewUrl, {
        headers: { "X-Requested-With": "fetch" },
        credentials: "same-origin",
      });
      const html = await response.text();
      if (refreshed && !$("compress-preview")) return; // closed meanwhile
      slot.replaceChildren(...fragments(html));
      const panel = $("compress-preview");
      if (panel && panel.dataset.busy === "true") showNotice(root.dataset.msgBusy);
      if (panel && refreshed) {
        const note = document.createElement("p");
        note.id = "compress-preview-refreshed";
        note.className = "small notice";
        note.setAttribute("role", "status");
        note.textContent = root.dataset.msgPreviewRefreshed;
        panel.querySelector("h3").after(note);
        return;
      }
      const apply = $("compress-apply");
      if (apply && !apply.disabled) apply.focus();
    } catch (_err) {
      showNotice(root.dataset.msgOffline);
    }
  }

  // A preview never goes stale: whatever changes the thread under it (a message, a run ending, a
  // compression, a pin) fetches it again, once the burst of events has settled.
  let previewTimer = null;
  function refreshOpenPreview() {
    if (!$("compress-preview") || compressPending) return;
    window.clearTimeout(previewTimer);
    previewTimer = window.setTimeout(() => {
      if ($("compress-preview") && !compressPending) showPreview({ refreshed: true });
    }, 400);
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
      if (response.status === 202 && body.id) {
        // A job: it runs in the background; its events (and Stop) follow it from here.
        closePreview();
        // Its events may have come first (a fast job): then it has ended already, and this is old news.
        activeJob = jobMovesOn(body) && JOB_ACTIVE.includes(body.status) ? body.id : null;
        compressing = activeJob !== null;
        if (compressing) await showCompression({ status: "started", job_id: body.id, job_status: body.status });
      } else if (response.ok) {
        closePreview();
        compressing = false;
      } else if (response.status === 409 && body.code === "stale_preview") {
        stale = true;
        showNotice(root.dataset.msgStale);
      } else if (response.status === 409) {
        closePreview();
        showNotice(root.dataset.msgBusy);
      } else if (response.status === 429) {
        // Throttled: nothing was tried; the server's words say how long to wait.
        closePreview();
        showNotice(body.message || root.dataset.msgRateLimited, { keep: true });
      } else {
        closePreview();
        await showCompression({ status: "failed", error: body.message || `HTTP ${response.status}` });
      }
    } catch (_err) {
      showNotice(root.dataset.msgOffline);
    } finally {
      compressPending = false;
      if (activeJob === null) compressing = false;
      await refreshState();
      if (stale) await showPreview(); // the thread changed: show what applying would do now
    }
  }

  // --- a compression job: its progress on the card, and Stop --------------------------------------
  const JOB_ACTIVE = ["queued", "running"];
  let activeJob = null;
  // The jobs this page has seen end. A job's news comes by two roads, the socket and the answer to our
  // own POST, and a fast job ends before that answer arrives: its "queued" must not draw a running card
  // again over the ended job (nothing would ever take that card down).
  const endedJobs = new Set();

  function jobMovesOn(job) {
    if (endedJobs.has(job.id)) return false;
    if (!JOB_ACTIVE.includes(job.status)) endedJobs.add(job.id);
    return true;
  }

  function showJob(job) {
    const progress = $("compression-job");
    if (progress && String(job.id) === progress.dataset.jobId) progress.dataset.jobStatus = job.status;
  }

  async function stopJob(button) {
    button.disabled = true;
    try {
      const response = await fetch(button.dataset.cancelUrl, {
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
        jobMovesOn(body);
        finishJob(body);
      } else {
        button.disabled = false;
        showNotice(body.message || `HTTP ${response.status}`);
      }
    } catch (_err) {
      button.disabled = false;
      showNotice(root.dataset.msgOffline);
    }
  }

  function finishJob(job) {
    activeJob = null;
    compressing = false;
    applyButtonState();
    // The state fragment draws the card from the server's records: the stopped job, or its outcome.
    refreshState();
    if (job.status === "succeeded") refreshTranscript();
  }

  document.addEventListener("click", (event) => {
    if (event.target.closest("#compress-button")) {
      const button = $("compress-button");
      if (button && !button.disabled && !compressPending) showPreview();
      return;
    }
    const stop = event.target.closest("#compress-stop");
    if (stop) {
      if (!stop.disabled) stopJob(stop);
      return;
    }
    const apply = event.target.closest("#compress-apply");
    if (apply) {
      const panel = $("compress-preview");
      if (panel && panel.dataset.previewId) compress(apply, panel.dataset.previewId);
      return;
    }
    if (event.target.closest("#compress-cancel")) {
      closePreview();
      return;
    }
    const codeButton = event.target.closest(".copy-code");
    if (codeButton) {
      copyFrom(codeButton, codeText(codeButton.closest("pre")));
      return;
    }
    const messageButton = event.target.closest(".copy-message");
    if (messageButton) {
      const body = messageButton.closest(".message").querySelector(".message-body");
      if (body) copyFrom(messageButton, body.innerText);
    }
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

  // --- undo the latest summary: confirm what will be restored, one request, then reload the state --
  async function undo(button) {
    if (compressPending || button.disabled) return;
    if (!window.confirm(button.dataset.confirm)) return;
    compressPending = true;
    applyButtonState();
    let notice = "";
    try {
      const response = await fetch(root.dataset.undoApiUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: "{}",
      });
      if (!response.ok) {
        let body = {};
        try {
          body = await response.json();
        } catch (_err) {
          body = {};
        }
        notice = body.code === "thread_busy" ? root.dataset.msgBusy : body.message || `HTTP ${response.status}`;
      }
    } catch (_err) {
      notice = root.dataset.msgOffline;
    } finally {
      compressPending = false;
    }
    await refreshState();
    showCardNotice(notice);
  }

  document.addEventListener("submit", (event) => {
    if (event.target.classList && event.target.classList.contains("undo-form")) {
      event.preventDefault();
      undo(event.target.querySelector("#undo-button"));
    }
  });

  // --- forms: composer, answers, Stop, removing a queued message --------------------------------
  let notSent = false; // the composer shows a "not sent" error caused by the connection

  async function postForm(form, errorEl, { reset = true } = {}) {
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
      if (reset) form.reset();
      return true;
    } catch (_err) {
      // The request never reached the server: the message was not sent, and the draft stays.
      if (errorEl) {
        errorEl.textContent = root.dataset.msgNotSent;
        notSent = errorEl === composerError;
      }
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
      notSent = false;
      postForm(form, composerError).then((sent) => {
        if (sent) scrollToLatest();
      });
    } else if (form.id === "answer-form") {
      event.preventDefault();
      postForm(form, null);
    } else if (form.id === "retry-form") {
      // The retried turn's failed attempt leaves the current branch: the page is drawn again.
      event.preventDefault();
      postForm(form, composerError, { reset: false }).then((sent) => {
        if (sent) window.location.reload();
      });
    } else if (form.id === "stop-form") {
      event.preventDefault();
      postForm(form, composerError, { reset: false });
    } else if (form.classList.contains("dequeue")) {
      event.preventDefault();
      const item = form.closest(".message");
      postForm(form, composerError, { reset: false }).then((done) => {
        if (done && item) item.dataset.runStatus = "cancelled";
      });
    }
  });

  // A reader who is not the thread's owner has no composer.
  const composerInput = $("composer-input");
  // On a touch screen Enter adds a line, as on a phone's keyboard everywhere; Send is the button.
  const touch = window.matchMedia("(pointer: coarse)").matches;
  if (composerInput) {
    if (touch) composerInput.placeholder = composerInput.dataset.touchPlaceholder;
    composerInput.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing && !touch) {
        event.preventDefault();
        $("composer").requestSubmit();
      }
    });
    composerInput.addEventListener("input", countCharacters);
    $("composer").addEventListener("reset", () => window.setTimeout(countCharacters, 0));
  }

  // The counter appears near the limit (the last tenth) and says when the message is over it; Send
  // waits until it fits, so a long draft is never refused after typing.
  const COUNT_FROM = 0.9;
  function countCharacters() {
    const counter = $("composer-count");
    const max = Number(composerInput.dataset.maxChars);
    if (!counter || !max) return;
    const used = composerInput.value.length;
    const over = used > max;
    counter.hidden = used < max * COUNT_FROM;
    counter.textContent = `${used.toLocaleString(document.documentElement.lang)} / ${max.toLocaleString(document.documentElement.lang)}`;
    counter.classList.toggle("over", over);
    composerInput.setAttribute("aria-invalid", over ? "true" : "false");
    const send = $("composer").querySelector(".composer-actions button[type=submit]");
    if (send) send.disabled = over;
  }

  // --- live events ------------------------------------------------------------------------------
  const handlers = {
    "run.token"(event) {
      if (event.text) onToken(event);
    },
    "message.created"(event) {
      // The streamed reply is complete: the rendered message takes its place.
      if (event.message && event.message.role === "assistant" && streamOf(event.message.run_id)) clearStream();
      syncMessages();
      refreshOpenPreview();
    },
    "run.status"(event) {
      if (event.run_id) markRun(event.run_id, event.status);
      if (event.status !== "running" && streamOf(event.run_id)) clearStream();
      if (event.status !== "running" && event.status !== "queued") compressing = false;
      refreshState();
      if (event.status !== "running" && event.status !== "queued") syncMessages();
      refreshOpenPreview();
    },
    "compression.job"(event) {
      const job = event.job || {};
      if (!jobMovesOn(job)) return; // older than what this page already knows of the job
      if (JOB_ACTIVE.includes(job.status)) {
        activeJob = job.id;
        compressing = true;
        applyButtonState();
        if ($("compression-job")) showJob(job);
        else showCompression({ status: "started", job_id: job.id, job_status: job.status }).catch(() => {});
      } else if (activeJob === null || activeJob === job.id) {
        finishJob(job);
      }
    },
    compression(event) {
      if (event.status === "started" && event.job_id) return; // the job's own events draw its card
      compressing = event.status === "started";
      applyButtonState();
      if (compressing) {
        showCompression(event).catch(() => {});
      } else {
        refreshState();
        if (event.status === "completed") refreshTranscript();
        refreshOpenPreview();
      }
    },
    state() {
      refreshState();
    },
    "thread.title"(event) {
      document.dispatchEvent(new CustomEvent("thread:title", { detail: { title: event.title || "" } }));
    },
    "message.pin"(event) {
      const item = document.getElementById(`message-${event.seq}`);
      const button = item && item.querySelector(".pin-toggle");
      if (button) showPin(button, Boolean(event.pinned));
      // A pin can bring a folded message back: the memory panel and the meter follow at once.
      refreshState();
      refreshOpenPreview();
    },
  };

  // --- the connection: a labelled status, and a banner when it drops and when it returns ------------
  let bannerTimer = null;
  function showBanner(kind, text) {
    window.clearTimeout(bannerTimer);
    banner.dataset.kind = kind;
    banner.textContent = text;
    banner.hidden = false;
    if (kind === "online") {
      bannerTimer = window.setTimeout(() => {
        banner.hidden = true;
      }, 4000);
    }
  }

  function setSocketState(state) {
    socketStatus.dataset.state = state;
    const label = socketStatus.querySelector(".socket-label");
    const key = `label${state.charAt(0).toUpperCase()}${state.slice(1)}`;
    if (label && label.dataset[key]) label.textContent = label.dataset[key];
  }

  let attempts = 0;
  let offline = false;
  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${window.location.host}${root.dataset.socketPath}`);
    if (!offline) setSocketState("connecting");
    socket.addEventListener("open", () => {
      attempts = 0;
      setSocketState("open");
      if (offline) {
        offline = false;
        showBanner("online", root.dataset.msgOnline);
        if (notSent && composerError) {
          composerError.textContent = "";
          notSent = false;
        }
      }
      // Catch up on anything that happened while we were away, or between the page's render and
      // this first opening (a run that starts with the page, as after an edit, may end meanwhile).
      syncMessages();
      refreshState();
      catchUpStream();
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
      setSocketState("closed");
      if (!offline) {
        offline = true;
        showBanner("offline", root.dataset.msgOffline);
      }
      if (close.code === 4403 || close.code === 4401) return; // not allowed, or signed out: retrying cannot help
      // Full-jitter backoff, capped at 15 s.
      const delay = Math.random() * Math.min(15000, 500 * 2 ** attempts);
      attempts += 1;
      window.setTimeout(connect, delay);
    });
  }

  decorate(transcript);
  failureOnce();
  if (!stream.hidden) placeStream(stream.dataset.run);
  applyButtonState();
  scrollToLatest(); // a thread opens at its latest message, the composer in view
  connect();
})();
