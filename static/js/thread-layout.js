// The thread page's layout and keys: on narrow screens the context panel is a drawer opened from a
// compact meter in the header (which repeats the panel's hint); keyboard shortcuts (Esc closes the
// compression preview or the drawer, else stops the reply; "/" focuses the message box, Alt+Shift+N
// starts a new thread); the skip link lands on the composer;
// a title changed over the socket (thread.js dispatches "thread:title") is shown at once.
(function () {
  "use strict";

  const root = document.getElementById("thread");
  if (!root) return;

  const $ = (id) => document.getElementById(id);
  const drawer = $("context-drawer");
  const toggle = $("context-toggle");
  const closeButton = $("context-close");
  const backdrop = $("context-backdrop");
  const narrow = window.matchMedia("(max-width: 900px)");
  const behind = [document.querySelector(".topbar"), document.querySelector(".conversation")];

  // --- the compact meter: the panel's own figures and hint, copied whenever the panel is re-rendered --
  function syncToggle() {
    const panel = $("state-panel");
    if (!panel) return;
    const ratio = Number(panel.dataset.ratio);
    const measured = panel.dataset.ratio !== "" && Number.isFinite(ratio);
    const percent = $("pressure-ratio");
    $("context-toggle-ratio").textContent = measured && percent ? percent.textContent.trim() : "";
    $("context-toggle-fill").style.width = measured ? `${Math.min(100, Math.max(0, ratio * 100))}%` : "0%";
    const meter = panel.querySelector(".meter");
    toggle.dataset.tone = meter ? (meter.className.match(/tone-(\w+)/) || [])[1] || "" : "";
    const hint = panel.querySelector("#compression-hint p");
    const hintBox = $("context-toggle-hint");
    hintBox.textContent = hint ? hint.textContent.replace(/\s+/g, " ").trim() : "";
    hintBox.hidden = !hint;
    toggle.dataset.hint = panel.dataset.hint || "";
  }
  new MutationObserver(syncToggle).observe(drawer, { childList: true, subtree: true });
  syncToggle();

  // --- the drawer (narrow screens only; wide screens keep the side panel) ---------------------------
  function isOpen() {
    return root.classList.contains("drawer-open");
  }

  function setOpen(open, { restoreFocus = true } = {}) {
    root.classList.toggle("drawer-open", open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    backdrop.hidden = !open;
    for (const element of behind) if (element) element.inert = open;
    if (open) {
      drawer.setAttribute("role", "dialog");
      drawer.setAttribute("aria-modal", "true");
      closeButton.focus();
    } else {
      drawer.removeAttribute("role");
      drawer.removeAttribute("aria-modal");
      if (restoreFocus) toggle.focus();
    }
  }

  toggle.addEventListener("click", () => setOpen(!isOpen()));
  closeButton.addEventListener("click", () => setOpen(false));
  backdrop.addEventListener("click", () => setOpen(false));
  // Growing past the breakpoint shows the side panel again: the drawer's state must not linger.
  narrow.addEventListener("change", () => {
    if (!narrow.matches && isOpen()) setOpen(false, { restoreFocus: false });
  });

  // Tab stays inside the open drawer.
  drawer.addEventListener("keydown", (event) => {
    if (event.key !== "Tab" || !isOpen()) return;
    const focusable = Array.from(
      drawer.querySelectorAll("a[href], button:not([disabled]), input:not([disabled]), textarea, select, summary, [tabindex]:not([tabindex='-1'])")
    ).filter((element) => element.offsetParent !== null);
    if (!focusable.length) return;
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  });

  // --- keys ---------------------------------------------------------------------------------------
  function typingIn(element) {
    if (!element) return false;
    const tag = element.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || (tag === "INPUT" && element.type !== "button" && element.type !== "submit")
      || element.isContentEditable;
  }

  // Esc closes what is open first: the compression preview (in view: on narrow screens only inside
  // the open drawer), then the drawer, then an open <details> around the focus such as Rename; only
  // then does it stop the running reply.
  function escape(event) {
    const preview = $("compress-preview");
    if (preview && (!narrow.matches || isOpen())) {
      const focusInside = preview.contains(document.activeElement);
      document.dispatchEvent(new CustomEvent("thread:close-preview"));
      const opener = $("compress-button");
      if (opener && (focusInside || document.activeElement === document.body)) opener.focus();
      return true;
    }
    if (isOpen()) {
      setOpen(false);
      return true;
    }
    const details = event.target.closest && event.target.closest("details[open]");
    if (details) {
      details.open = false;
      const summary = details.querySelector("summary");
      if (summary) summary.focus();
      return true;
    }
    const stopForm = $("stop-form");
    if (stopForm) {
      stopForm.requestSubmit();
      return true;
    }
    return false;
  }

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.isComposing) return;
    if (event.key === "Escape") {
      if (escape(event)) event.preventDefault();
      return;
    }
    if (event.altKey && event.shiftKey && !event.ctrlKey && !event.metaKey && event.code === "KeyN") {
      const form = $("new-thread-form");
      if (form) {
        event.preventDefault();
        form.requestSubmit();
      }
      return;
    }
    const composer = $("composer-input");
    if (event.key === "/" && !event.ctrlKey && !event.metaKey && !event.altKey && composer && !typingIn(event.target)) {
      event.preventDefault();
      if (isOpen()) setOpen(false, { restoreFocus: false });
      composer.focus();
    }
  });

  // The skip link lands in the message box (a fragment link alone only scrolls to it).
  const skip = document.querySelector(".skip-link");
  if (skip) {
    skip.addEventListener("click", (event) => {
      const target = document.querySelector(skip.getAttribute("href"));
      if (!target) return;
      event.preventDefault();
      if (!target.matches("textarea, input, button, a[href]")) target.tabIndex = -1;
      target.focus();
      target.scrollIntoView({ block: "nearest" });
    });
  }

  // --- the title, renamed live (the first message named the thread, or a rename in another tab) ----
  document.addEventListener("thread:title", (event) => {
    const title = event.detail && event.detail.title;
    const heading = $("thread-title");
    const fallback = heading.dataset.untitled || heading.textContent;
    heading.textContent = title || fallback;
    document.title = title || fallback;
    // The sidebar (wide screens) names this thread too.
    const entry = document.querySelector("#thread-sidebar a[aria-current=page] .sidebar-title");
    if (entry) entry.textContent = title || fallback;
    const input = $("rename-input");
    if (input && document.activeElement !== input) input.value = title || "";
  });
})();
